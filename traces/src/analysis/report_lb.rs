//! The report's per-PE view of chare-array balancing steps: for each step, every
//! traced PE's load before it, the load its moves assigned, and the load measured
//! at the array's next balancing step; a table of every PE for a few PEs, and for
//! many a histogram of the loads with the most loaded PEs listed.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::analysis::model::{LbPeLoad, LbStep};
use crate::analysis::style::{esc, fmt_ns};
use crate::analysis::svg::svg_open;

/// Steps with a per-PE view; a run with more shows its first ones and says so.
pub(crate) const LB_PE_STEPS: usize = 20;
/// Steps of up to this many traced PEs list every PE; beyond, a histogram and the
/// [`LB_TOP`] most loaded.
pub(crate) const LB_PE_ROWS: usize = 32;
/// PEs listed for a step of more than [`LB_PE_ROWS`] traced PEs.
pub(crate) const LB_TOP: usize = 10;
/// Bins of a step's load histogram.
const LB_BINS: usize = 20;
/// Width in px of a PE's load bars and of a histogram.
const BAR_W: f64 = 240.0;
const HIST_W: f64 = 480.0;

/// Before (red), after (blue): the colours of the step rows' bars.
const BEFORE: &str = "#d62728";
const AFTER: &str = "#1f77b4";

/// One step's PEs: their records, and each PE's load at the array's next step.
struct StepPes<'a> {
    step: &'a LbStep,
    pes: Vec<&'a LbPeLoad>,
    next: HashMap<u32, u64>,
}

/// Each step's PE records, in step order, the next balancing step of the same array
/// giving each PE's next measured load.
fn group<'a>(steps: &'a [LbStep], loads: &'a [LbPeLoad]) -> Vec<StepPes<'a>> {
    let mut by_step: HashMap<(u64, u64), Vec<&LbPeLoad>> = HashMap::new();
    for l in loads {
        by_step.entry((l.array, l.round)).or_default().push(l);
    }
    for pes in by_step.values_mut() {
        pes.sort_by_key(|l| l.pe);
    }
    let mut order: Vec<&LbStep> = steps.iter().collect();
    order.sort_by_key(|s| (s.ts_ns, s.array, s.round));
    let mut out: Vec<StepPes<'a>> = Vec::new();
    for (i, s) in order.iter().enumerate() {
        let Some(pes) = by_step.get(&(s.array, s.round)) else {
            continue;
        };
        let later = order[i + 1..].iter().find(|n| n.array == s.array);
        let next = later
            .and_then(|n| by_step.get(&(n.array, n.round)))
            .map(|n| n.iter().map(|l| (l.pe, l.before)).collect())
            .unwrap_or_default();
        out.push(StepPes {
            step: s,
            pes: pes.clone(),
            next,
        });
    }
    out
}

/// The per-PE loads of each balancing step that has them (older traces carry none).
pub(crate) fn lb_pe_loads(o: &mut String, steps: &[LbStep], loads: &[LbPeLoad]) {
    let grouped = group(steps, loads);
    if grouped.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<h2>PE loads in balancing steps</h2>\n<p>Each traced PE's load in the load \
         database before the step (red), the load the step's moves assigned it (blue), \
         and the load measured at the array's next balancing step (\"next\"). A step of \
         up to {LB_PE_ROWS} traced PEs lists every PE; a step of more shows a histogram \
         of the PEs' loads in {LB_BINS} bins and lists the {LB_TOP} most loaded before \
         the step.</p>"
    );
    for g in grouped.iter().take(LB_PE_STEPS) {
        step_view(o, g);
    }
    if grouped.len() > LB_PE_STEPS {
        let _ = writeln!(
            o,
            "<p>{} more balancing steps' PE loads not shown.</p>",
            grouped.len() - LB_PE_STEPS
        );
    }
}

/// One step's heading, histogram (many PEs) and table.
fn step_view(o: &mut String, g: &StepPes<'_>) {
    let s = g.step;
    let _ = writeln!(
        o,
        "<h3 class=\"lb-pes\" data-round=\"{}\">Round {} at {}: {} traced PEs</h3>",
        s.round,
        s.round,
        esc(&fmt_ns(s.ts_ns as f64)),
        g.pes.len()
    );
    let scale = g
        .pes
        .iter()
        .map(|l| l.before.max(l.after))
        .chain(g.next.values().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut listed: Vec<&LbPeLoad> = g.pes.clone();
    if listed.len() > LB_PE_ROWS {
        histogram(o, &g.pes, scale);
        listed.sort_by_key(|l| (std::cmp::Reverse(l.before), l.pe));
        listed.truncate(LB_TOP);
        let _ = writeln!(
            o,
            "<p>The {LB_TOP} most loaded of {} PEs before the step:</p>",
            g.pes.len()
        );
    }
    o.push_str(
        "<table class=\"lb-pe-loads\">\n<tr><th>PE</th><th>before</th><th>after</th>\
         <th>next</th><th class=\"name\">loads</th></tr>\n",
    );
    for l in listed {
        pe_row(o, s.round, l, g.next.get(&l.pe).copied(), scale);
    }
    o.push_str("</table>\n");
}

/// One PE's row: its loads as numbers (and, exactly, as data attributes) and bars.
fn pe_row(o: &mut String, round: u64, l: &LbPeLoad, next: Option<u64>, scale: f64) {
    let next_text = next.map_or_else(|| "-".to_owned(), |n| fmt_ns(n as f64));
    let _ = write!(
        o,
        "<tr class=\"lb-pe\" data-round=\"{round}\" data-pe=\"{}\" data-before-ns=\"{}\" \
         data-after-ns=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"name\">",
        l.pe,
        l.before,
        l.after,
        l.pe,
        esc(&fmt_ns(l.before as f64)),
        esc(&fmt_ns(l.after as f64)),
        esc(&next_text),
    );
    svg_open(o, "lb-pe-bars", BAR_W, 18.0);
    let w = |v: u64| (v as f64 / scale * (BAR_W - 2.0)).max(0.5);
    let _ = write!(
        o,
        "<rect x=\"1\" y=\"1\" width=\"{:.1}\" height=\"7\" fill=\"{BEFORE}\"/>\
         <rect x=\"1\" y=\"10\" width=\"{:.1}\" height=\"7\" fill=\"{AFTER}\"/>",
        w(l.before),
        w(l.after)
    );
    o.push_str("</svg></td></tr>\n");
}

/// How many of `values` fall in each of [`LB_BINS`] equal bins of `[0, scale]`.
fn bins(values: impl Iterator<Item = u64>, scale: f64) -> [usize; LB_BINS] {
    let mut out = [0usize; LB_BINS];
    for v in values {
        let b = (v as f64 / scale * LB_BINS as f64) as usize;
        out[b.min(LB_BINS - 1)] += 1;
    }
    out
}

/// The PEs' loads before (red, left of each bin) and after (blue) in bins from 0 to
/// the step's most loaded PE, bar heights by count.
fn histogram(o: &mut String, pes: &[&LbPeLoad], scale: f64) {
    let before = bins(pes.iter().map(|l| l.before), scale);
    let after = bins(pes.iter().map(|l| l.after), scale);
    let most = before
        .iter()
        .chain(&after)
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let h = 80.0;
    svg_open(o, "lb-pe-histogram", HIST_W + 10.0, h + 20.0);
    let bin_w = HIST_W / LB_BINS as f64;
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let x = 5.0 + i as f64 * bin_w;
        for (dx, n, colour) in [(0.0, *b, BEFORE), (bin_w / 2.0, *a, AFTER)] {
            let bh = n as f64 / most * h;
            let _ = write!(
                o,
                "<rect class=\"bin\" data-count=\"{n}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" \
                 height=\"{bh:.1}\" fill=\"{colour}\"/>",
                x + dx,
                h - bh,
                bin_w / 2.0 - 1.0
            );
        }
    }
    let _ = writeln!(
        o,
        "<text x=\"5\" y=\"{:.0}\">0</text><text x=\"{:.0}\" y=\"{:.0}\" \
         text-anchor=\"end\">{}</text></svg>",
        h + 14.0,
        HIST_W + 5.0,
        h + 14.0,
        esc(&fmt_ns(scale))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(round: u64, ts_ns: u64) -> LbStep {
        LbStep {
            round,
            ts_ns,
            array: 1,
            ..LbStep::default()
        }
    }

    fn load(pe: u32, round: u64, before: u64, after: u64) -> LbPeLoad {
        LbPeLoad {
            pe,
            round,
            array: 1,
            before,
            after,
            ..LbPeLoad::default()
        }
    }

    fn rows(o: &str) -> usize {
        o.matches("<tr class=\"lb-pe\"").count()
    }

    #[test]
    fn few_pes_list_every_pe_with_its_next_load() {
        let steps = [step(1, 10), step(11, 90)];
        let loads = [
            load(1, 1, 30, 20),
            load(0, 1, 10, 20),
            load(0, 11, 25, 22),
            load(1, 11, 15, 18),
        ];
        let mut o = String::new();
        lb_pe_loads(&mut o, &steps, &loads);
        assert_eq!(rows(&o), 4, "{o}");
        let first = "<tr class=\"lb-pe\" data-round=\"1\" data-pe=\"0\" data-before-ns=\"10\" \
                     data-after-ns=\"20\"><td>0</td><td>10 ns</td><td>20 ns</td><td>25 ns</td>";
        assert!(o.contains(first), "{o}");
        assert!(o.contains("data-pe=\"1\" data-before-ns=\"15\""), "{o}");
        // The last step has no next one.
        assert!(o.contains("<td>18 ns</td><td>-</td>"), "{o}");
        assert!(!o.contains("lb-pe-histogram"));
    }

    #[test]
    fn many_pes_get_a_histogram_and_the_most_loaded() {
        let n = LB_PE_ROWS as u32 + 8;
        let loads: Vec<LbPeLoad> = (0..n)
            .map(|pe| load(pe, 1, u64::from(pe) * 10, 100))
            .collect();
        let mut o = String::new();
        lb_pe_loads(&mut o, &[step(1, 0)], &loads);
        assert_eq!(rows(&o), LB_TOP);
        let heaviest = format!("data-pe=\"{}\" data-before-ns=\"{}\"", n - 1, (n - 1) * 10);
        assert!(o.contains(&heaviest), "{o}");
        let counts: usize = o
            .match_indices("data-count=\"")
            .map(|(i, m)| {
                let rest = &o[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(
            counts,
            2 * n as usize,
            "every PE in a bin, before and after"
        );
    }

    #[test]
    fn only_the_first_steps_are_shown() {
        let steps: Vec<LbStep> = (0..LB_PE_STEPS as u64 + 3).map(|r| step(r, r)).collect();
        let loads: Vec<LbPeLoad> = (0..steps.len() as u64).map(|r| load(0, r, 5, 5)).collect();
        let mut o = String::new();
        lb_pe_loads(&mut o, &steps, &loads);
        assert_eq!(rows(&o), LB_PE_STEPS);
        assert!(o.contains("<p>3 more balancing steps' PE loads not shown.</p>"));
        let mut none = String::new();
        lb_pe_loads(&mut none, &steps, &[]);
        assert!(none.is_empty());
    }
}
