//! The report's sections for Projections' extra views: the utilisation heat map, the
//! message-size histogram, the critical path and the chare-array balancing steps' loads (see [`crate::analysis::views`]).

use std::fmt::Write as _;

use crate::analysis::figures::{CriticalPath, Summary};
use crate::analysis::model::LbStep;
use crate::analysis::style::{esc, fmt_bytes, fmt_ns, level, pe_label, ReportOptions, PALETTE};
use crate::analysis::svg::{row_label, runs, svg_open, time_axis, LABEL_W};
use crate::analysis::views::elide;

/// Critical-path steps listed in the report; a longer path shows its two ends.
const PATH_ROWS: usize = 200;

/// PE x time grid shaded by busy fraction, one `<g class="heat-row">` per row.
pub(crate) fn heat_map(o: &mut String, summary: &Summary, opts: &ReportOptions) {
    let h = &summary.heat_map;
    if h.rows.is_empty() {
        return;
    }
    let per_pe = h.rows.iter().all(|r| r.pes == 1);
    let _ = writeln!(
        o,
        "<h2>Utilisation heat map</h2>\n<p>Busy share of each {} per bin of {}: darker is busier.</p>",
        if per_pe { "PE" } else { "range of PEs" },
        esc(&fmt_ns(h.bin_ns))
    );
    let width = opts.columns.max(1) as f64;
    let row_h = (480.0 / h.rows.len() as f64).clamp(3.0, 14.0);
    let height = h.rows.len() as f64 * row_h + 30.0;
    svg_open(o, "heat-map", LABEL_W + width + 10.0, height);
    for (r, row) in h.rows.iter().enumerate() {
        let y = r as f64 * row_h;
        let label = pe_label(row.first_pe, row.last_pe, row.pes == 1);
        let _ = write!(
            o,
            "<g class=\"heat-row\" data-pes=\"{}-{}\">",
            row.first_pe, row.last_pe
        );
        row_label(o, y, row_h, &label);
        let keys: Vec<Option<(&str, u8)>> = row
            .busy
            .iter()
            .map(|&b| {
                let l = level(b);
                (l > 0).then_some((PALETTE[0], l))
            })
            .collect();
        runs(o, &keys, y, row_h, width / row.busy.len().max(1) as f64);
        o.push_str("</g>\n");
    }
    time_axis(o, summary.span_ns, width, h.rows.len() as f64 * row_h + 2.0);
    o.push_str("</svg>\n");
}

/// One bar per non-empty power-of-two size bucket.
pub(crate) fn size_histogram(o: &mut String, summary: &Summary) {
    let buckets = &summary.message_sizes;
    if buckets.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<h2>Message sizes</h2>\n<p>Received messages per power-of-two size bucket.</p>"
    );
    let (bar_w, h) = (64.0, 120.0);
    let most = buckets.iter().map(|b| b.messages).max().unwrap_or(1).max(1) as f64;
    let width = LABEL_W + bar_w * buckets.len() as f64 + 10.0;
    svg_open(o, "sizes", width, h + 40.0);
    for (i, b) in buckets.iter().enumerate() {
        let x = LABEL_W + i as f64 * bar_w;
        let bh = (h * b.messages as f64 / most).max(1.0);
        let _ = writeln!(
            o,
            "<g class=\"size-bucket\" data-min=\"{}\" data-messages=\"{}\"><title>{} .. {}: {} messages, {}</title>\
             <rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></g>",
            b.min_bytes,
            b.messages,
            esc(&fmt_bytes(b.min_bytes)),
            esc(&fmt_bytes(b.max_bytes)),
            b.messages,
            esc(&fmt_bytes(b.bytes)),
            h - bh,
            bar_w * 0.85,
            PALETTE[0],
            x + bar_w * 0.42,
            h - bh - 3.0,
            b.messages,
            x + bar_w * 0.42,
            h + 16.0,
            esc(&format!("≥{}", fmt_bytes(b.min_bytes)))
        );
    }
    o.push_str("</svg>\n");
}

/// The critical path as a table, first entry first.
pub(crate) fn critical_path_table(o: &mut String, path: Option<&CriticalPath>) {
    let Some(p) = path else {
        return;
    };
    let _ = writeln!(
        o,
        "<h2>Critical path</h2>\n<p>{} entries over {}: the longest chain in time of entries each started by a message from the one before (only arrows the trace draws are followed).</p>",
        p.entries.len(),
        esc(&fmt_ns(p.span_ns as f64))
    );
    o.push_str(
        "<table class=\"critical-path\">\n<tr><th>step</th><th>PE</th><th>start</th><th>duration</th><th class=\"name\">entry</th></tr>\n",
    );
    for i in elide(p.entries.len(), PATH_ROWS / 2) {
        let Some(i) = i else {
            let _ = writeln!(
                o,
                "<tr><td>...</td><td></td><td></td><td></td><td class=\"name\">{} more</td></tr>",
                p.entries.len() - PATH_ROWS
            );
            continue;
        };
        let e = &p.entries[i];
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td></tr>",
            i + 1,
            e.pe,
            esc(&fmt_ns(e.start_ns as f64)),
            esc(&fmt_ns(e.dur_ns as f64)),
            esc(&e.name)
        );
    }
    o.push_str("</table>\n");
}

/// Balancing steps listed in the report; a run with more shows its first ones and
/// says how many it left out, so the report stays small however long the run.
const LB_ROWS: usize = 200;

/// Width in px of a step's load chart.
const LB_CHART_W: f64 = 240.0;

/// One row per chare-array balancing step: what moved, the least, mean and most PE
/// load before and after, and a chart of each as a min-to-max bar with the mean
/// marked, on one scale for every step. One row per step whatever the PE count.
pub(crate) fn lb_steps(o: &mut String, steps: &[LbStep]) {
    if steps.is_empty() {
        return;
    }
    o.push_str(
        "<h2>Load balancing steps</h2>\n<p>PE loads measured before each balancing step \
         (upper bar) and as its moves left them (lower bar): each bar runs from the least \
         to the most loaded PE, the mark is the mean.</p>\n<table class=\"lb-steps\">\n\
         <tr><th>round</th><th>at</th><th>took</th><th>moved</th>\
         <th>min / avg / max before</th><th>min / avg / max after</th>\
         <th>max/avg</th><th class=\"name\">loads</th></tr>\n",
    );
    let shown = &steps[..steps.len().min(LB_ROWS)];
    let scale = shown.iter().map(|s| s.before[2].max(s.after[2])).max();
    let scale = scale.unwrap_or(0).max(1) as f64;
    for s in shown {
        let _ = write!(
            o,
            "<tr class=\"lb-step\" data-round=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{} of {}</td>\
             <td>{}</td><td>{}</td><td>{} &#8594; {}</td><td class=\"name\">",
            s.round,
            s.round,
            esc(&fmt_ns(s.ts_ns as f64)),
            esc(&fmt_ns(s.dur_ns as f64)),
            s.migrations,
            s.objects,
            esc(&fmt_loads(s.before)),
            esc(&fmt_loads(s.after)),
            fmt_ratio(s.before),
            fmt_ratio(s.after),
        );
        svg_open(o, "lb-loads", LB_CHART_W, 22.0);
        range_bar(o, 1.0, s.before, scale, "#d62728");
        range_bar(o, 12.0, s.after, scale, "#1f77b4");
        o.push_str("</svg></td></tr>\n");
    }
    o.push_str("</table>\n");
    if steps.len() > shown.len() {
        let _ = writeln!(
            o,
            "<p>{} more balancing steps not shown.</p>",
            steps.len() - shown.len()
        );
    }
}

/// `min / avg / max` of a step's loads.
fn fmt_loads([min, avg, max]: [u64; 3]) -> String {
    format!(
        "{} / {} / {}",
        fmt_ns(min as f64),
        fmt_ns(avg as f64),
        fmt_ns(max as f64)
    )
}

/// The most loaded PE over the mean, as the runtime reports it.
fn fmt_ratio([_, avg, max]: [u64; 3]) -> String {
    if avg == 0 {
        return "-".to_owned();
    }
    format!("{:.2}", max as f64 / avg as f64)
}

/// A bar from `min` to `max` at height `y`, with a mark at `avg`.
fn range_bar(o: &mut String, y: f64, [min, avg, max]: [u64; 3], scale: f64, colour: &str) {
    let x = |v: u64| v as f64 / scale * (LB_CHART_W - 2.0) + 1.0;
    let _ = write!(
        o,
        "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"8\" fill=\"{colour}\" fill-opacity=\"0.5\"/>\
         <rect x=\"{:.1}\" y=\"{:.1}\" width=\"2\" height=\"10\" fill=\"{colour}\"/>",
        x(min),
        (x(max) - x(min)).max(1.0),
        x(avg) - 1.0,
        y - 1.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(round: u64) -> LbStep {
        LbStep {
            round,
            migrations: 3,
            objects: 8,
            before: [10, 20, 40],
            after: [18, 20, 22],
            ..LbStep::default()
        }
    }

    #[test]
    fn a_step_row_shows_its_loads_and_ratios() {
        let mut o = String::new();
        lb_steps(&mut o, &[step(1)]);
        assert!(o.contains("<td>3 of 8</td>"), "{o}");
        assert!(o.contains("<td>10 ns / 20 ns / 40 ns</td>"), "{o}");
        assert!(o.contains("<td>2.00 &#8594; 1.10</td>"), "{o}");
        assert_eq!(o.matches("<rect ").count(), 4, "two bars, two marks");
    }

    #[test]
    fn a_long_run_lists_its_first_steps_and_counts_the_rest() {
        let steps: Vec<LbStep> = (0..LB_ROWS as u64 + 7).map(step).collect();
        let mut o = String::new();
        lb_steps(&mut o, &steps);
        assert_eq!(o.matches("<tr class=\"lb-step\"").count(), LB_ROWS);
        assert!(o.contains("<p>7 more balancing steps not shown.</p>"));
    }

    #[test]
    fn no_step_no_section() {
        let mut o = String::new();
        lb_steps(&mut o, &[]);
        assert!(o.is_empty());
    }
}
