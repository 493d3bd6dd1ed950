//! A self-contained HTML report (inline SVG and CSS, no script, no network); the
//! sections beyond Projections' basic views are in the private `report_views` module.
//!
//! The document is well-formed XHTML (every element closed, every attribute quoted,
//! text escaped) so tools and tests can read it with an XML parser. Each overview row
//! is a `<g class="pe-row" data-pes="A-B">` element: one PE per row up to
//! [`ReportOptions::max_rows`] PEs, above that each row aggregates a range of PEs and is
//! shaded by their busy fraction per time column.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::analysis::compact::CompactTrace;
use crate::analysis::read::Trace;
use crate::analysis::report_views::{critical_path_table, heat_map, size_histogram};
use crate::analysis::summary::{
    fmt_bytes, fmt_ns, outermost_spans, spread, Summary, CAT_ENTRY, CAT_IDLE,
};
use crate::analysis::views::{critical_path, row_groups};

/// How the report is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportOptions {
    /// Page title.
    pub title: String,
    /// Most overview rows; above this many PEs, rows aggregate PE ranges.
    pub max_rows: usize,
    /// Time columns of the binned overview (and its width in px).
    pub columns: usize,
    /// Draw every slice when a per-PE overview has at most this many; bin otherwise.
    pub max_exact_slices: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: "chorus trace report".to_owned(),
            max_rows: 256,
            columns: 800,
            max_exact_slices: 20_000,
        }
    }
}

/// Colours of the ten entries with the most time; the rest share [`OTHER_COLOUR`].
pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#393b79",
];
pub(crate) const OTHER_COLOUR: &str = "#7f7f7f";
const IDLE_COLOUR: &str = "#d9d9d9";
pub(crate) const LABEL_W: f64 = 120.0;

/// Escapes text for XHTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Characters XML 1.0 forbids even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// Builds the report for `trace` and its `summary`.
pub fn render_report(trace: &Trace, summary: &Summary, opts: &ReportOptions) -> String {
    render_report_compact(&CompactTrace::from_trace(trace), summary, opts)
}

/// [`render_report`] for a [`CompactTrace`]: unpacks one track at a time.
pub fn render_report_compact(
    trace: &CompactTrace,
    summary: &Summary,
    opts: &ReportOptions,
) -> String {
    let colours: HashMap<&str, &'static str> = summary
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            (
                e.name.as_str(),
                PALETTE.get(i).copied().unwrap_or(OTHER_COLOUR),
            )
        })
        .collect();
    let colour_of = |name: &str| colours.get(name).copied().unwrap_or(OTHER_COLOUR);

    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n");
    o.push_str("<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n");
    o.push_str("<meta charset=\"utf-8\"/>\n");
    let _ = writeln!(o, "<title>{}</title>", esc(&opts.title));
    o.push_str(
        "<style>\nbody{font-family:sans-serif;margin:1.5em;color:#222}\n\
         table{border-collapse:collapse;font-size:13px}\n\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\n\
         td.name,th.name{text-align:left}\n\
         svg text{font-size:11px;font-family:sans-serif}\n\
         .legend span{display:inline-block;margin-right:1em;font-size:13px}\n\
         .swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\n\
         </style>\n</head>\n<body>\n",
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&opts.title));
    let _ = writeln!(
        o,
        "<p>{} PEs, span {}, mean utilisation {:.1}%, {} entry executions, {} messages ({}).</p>",
        summary.pe_count,
        esc(&fmt_ns(summary.span_ns as f64)),
        summary.mean_utilisation * 100.0,
        summary.entry_count,
        summary.message_count,
        esc(&fmt_bytes(summary.message_bytes))
    );

    legend(&mut o, summary);
    let rows = row_groups(trace.tracks.len(), opts.max_rows);
    overview(&mut o, trace, summary, opts, &rows, &colour_of);
    usage_profile(&mut o, summary, opts, &rows);
    time_profile(&mut o, trace, summary, opts, &colour_of);
    entry_table(&mut o, summary, &colour_of);
    heat_map(&mut o, summary, opts);
    size_histogram(&mut o, summary);
    critical_path_table(&mut o, critical_path(trace).as_ref());
    o.push_str("</body>\n</html>\n");
    o
}

fn legend(o: &mut String, summary: &Summary) {
    o.push_str("<p class=\"legend\">");
    for (i, e) in summary.entries.iter().take(PALETTE.len()).enumerate() {
        let _ = write!(
            o,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
            PALETTE[i],
            esc(&e.name)
        );
    }
    if summary.entries.len() > PALETTE.len() {
        let _ = write!(
            o,
            "<span><span class=\"swatch\" style=\"background:{OTHER_COLOUR}\"></span>other entries</span>"
        );
    }
    let _ = writeln!(
        o,
        "<span><span class=\"swatch\" style=\"background:{IDLE_COLOUR}\"></span>idle</span></p>"
    );
}

pub(crate) fn time_axis(o: &mut String, summary: &Summary, width: f64, y: f64) {
    for k in 0..=4 {
        let x = LABEL_W + width * k as f64 / 4.0;
        let t = summary.span_ns as f64 * k as f64 / 4.0;
        let anchor = match k {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#999\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            y,
            y + 4.0,
            y + 16.0,
            esc(&fmt_ns(t))
        );
    }
}

/// Appends `rect`s for runs of equal `(colour, opacity)` columns.
pub(crate) fn runs(o: &mut String, cols: &[Option<(&str, u8)>], y: f64, h: f64, col_w: f64) {
    let mut i = 0;
    while i < cols.len() {
        let Some(key) = cols[i] else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < cols.len() && cols[j] == Some(key) {
            j += 1;
        }
        let _ = write!(
            o,
            "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"{}\" fill-opacity=\"{:.1}\"/>",
            LABEL_W + i as f64 * col_w,
            (j - i) as f64 * col_w,
            key.0,
            f64::from(key.1) / 10.0
        );
        i = j;
    }
}

/// Opacity level 1..=10 for a fraction, 0 meaning nothing to draw.
pub(crate) fn level(frac: f64) -> u8 {
    if frac <= 0.0 {
        0
    } else {
        ((frac * 10.0).ceil() as u8).clamp(1, 10)
    }
}

fn overview(
    o: &mut String,
    trace: &CompactTrace,
    summary: &Summary,
    opts: &ReportOptions,
    rows: &[std::ops::Range<usize>],
    colour_of: &dyn Fn(&str) -> &'static str,
) {
    let per_pe = rows.iter().all(|r| r.len() == 1);
    let width = opts.columns.max(1) as f64;
    let row_h = (640.0 / rows.len().max(1) as f64).clamp(3.0, 18.0);
    let gap = if row_h >= 8.0 { 2.0 } else { 0.0 };
    let height = rows.len() as f64 * row_h + 30.0;
    let _ = writeln!(
        o,
        "<h2>Overview</h2>\n<p>{}</p>",
        if per_pe {
            "One row per PE; entry methods coloured by name, idle in grey; column shading shows how much of each time column was busy."
        } else {
            "Each row is a range of PEs; shading is the busy fraction of those PEs in each time column."
        }
    );
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"overview\" width=\"{:.0}\" height=\"{height:.0}\">",
        LABEL_W + width + 10.0
    );
    let t0 = summary.start_ns;
    let span = summary.span_ns.max(1) as f64;
    let scale = width / span;
    let exact = per_pe && {
        let n: usize = trace.tracks.iter().map(|t| t.slice_count()).sum();
        n <= opts.max_exact_slices
    };
    let cols = opts.columns.max(1);
    let col_ns = span / cols as f64;
    for (r, range) in rows.iter().enumerate() {
        let y = r as f64 * row_h;
        let tracks = &trace.tracks[range.clone()];
        let label = if per_pe {
            format!("PE {}", tracks[0].tid)
        } else {
            format!("PE {}-{}", tracks[0].tid, tracks[tracks.len() - 1].tid)
        };
        let data = format!("{}-{}", tracks[0].tid, tracks[tracks.len() - 1].tid);
        let _ = write!(o, "<g class=\"pe-row\" data-pes=\"{}\">", esc(&data));
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"{:.0}\">{}</text>",
            LABEL_W - 6.0,
            y + row_h * 0.8,
            (row_h * 0.9).clamp(3.0, 11.0),
            esc(&label)
        );
        let h = row_h - gap;
        if exact {
            let t = &tracks[0];
            for s in outermost_spans(&trace.strings, t, CAT_IDLE) {
                let _ = write!(
                    o,
                    "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"{IDLE_COLOUR}\"/>",
                    LABEL_W + (s.ts_ns - t0) as f64 * scale,
                    (s.dur_ns as f64 * scale).max(0.3)
                );
            }
            for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
                let name = trace.strings.get(s.name);
                let _ = write!(
                    o,
                    "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {} at {}</title></rect>",
                    LABEL_W + (s.ts_ns - t0) as f64 * scale,
                    (s.dur_ns as f64 * scale).max(0.3),
                    colour_of(name),
                    esc(name),
                    esc(&fmt_ns(s.dur_ns as f64)),
                    esc(&fmt_ns((s.ts_ns - t0) as f64))
                );
            }
        } else if per_pe {
            // Per column: the entry with the most time sets the colour, busy time the
            // opacity; idle-dominated columns are grey.
            let t = &tracks[0];
            let mut busy = vec![0.0; cols];
            let mut idle = vec![0.0; cols];
            let mut by_entry: HashMap<(usize, &str), f64> = HashMap::new();
            let mut one = vec![0.0; cols];
            for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
                // `one` is all zeros between slices: only the touched columns are reset.
                let first = (((s.ts_ns - t0) as f64 / col_ns) as usize).min(cols - 1);
                let last = (((s.end_ns() - t0) as f64 / col_ns) as usize).min(cols - 1);
                spread(&mut one, t0, col_ns, s.ts_ns, s.end_ns());
                for (c, v) in one.iter_mut().enumerate().take(last + 1).skip(first) {
                    if *v > 0.0 {
                        busy[c] += *v;
                        *by_entry.entry((c, trace.strings.get(s.name))).or_default() += *v;
                    }
                    *v = 0.0;
                }
            }
            for s in outermost_spans(&trace.strings, t, CAT_IDLE) {
                spread(&mut idle, t0, col_ns, s.ts_ns, s.end_ns());
            }
            let mut best: Vec<(&str, f64)> = vec![("", 0.0); cols];
            for ((c, name), v) in by_entry {
                if v > best[c].1 || (v == best[c].1 && name < best[c].0) {
                    best[c] = (name, v);
                }
            }
            let keys: Vec<Option<(&str, u8)>> = (0..cols)
                .map(|c| {
                    if busy[c] >= idle[c] && busy[c] > 0.0 {
                        Some((colour_of(best[c].0), level(busy[c] / col_ns)))
                    } else if idle[c] > 0.0 {
                        Some((IDLE_COLOUR, level(idle[c] / col_ns)))
                    } else {
                        None
                    }
                })
                .collect();
            runs(o, &keys, y, h, width / cols as f64);
        } else {
            let mut busy = vec![0.0; cols];
            for t in tracks {
                for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
                    spread(&mut busy, t0, col_ns, s.ts_ns, s.end_ns());
                }
            }
            let denom = col_ns * tracks.len() as f64;
            let keys: Vec<Option<(&str, u8)>> = busy
                .iter()
                .map(|&b| {
                    let l = level(b / denom);
                    (l > 0).then_some((PALETTE[0], l))
                })
                .collect();
            runs(o, &keys, y, h, width / cols as f64);
        }
        o.push_str("</g>\n");
    }
    time_axis(o, summary, width, rows.len() as f64 * row_h + 2.0);
    o.push_str("</svg>\n");
}

fn usage_profile(
    o: &mut String,
    summary: &Summary,
    opts: &ReportOptions,
    rows: &[std::ops::Range<usize>],
) {
    let _ = writeln!(
        o,
        "<h2>Usage profile</h2>\n<p>Busy (blue) and idle (grey) share of the trace span per {}.</p>",
        if rows.iter().all(|r| r.len() == 1) {
            "PE"
        } else {
            "range of PEs"
        }
    );
    let width = opts.columns.max(1) as f64;
    let h = 160.0;
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"usage\" width=\"{:.0}\" height=\"{:.0}\">",
        LABEL_W + width + 10.0,
        h + 40.0
    );
    percent_axis(o, width, h);
    let bar_w = width / rows.len().max(1) as f64;
    for (r, range) in rows.iter().enumerate() {
        let pes = &summary.pes[range.clone()];
        let n = pes.len().max(1) as f64;
        let busy = pes.iter().map(|p| p.utilisation).sum::<f64>() / n;
        let idle = pes.iter().map(|p| p.idle_fraction).sum::<f64>() / n;
        let x = LABEL_W + r as f64 * bar_w;
        let bw = (bar_w * 0.85).max(0.5);
        let label = if pes.len() == 1 {
            format!("PE {}", pes[0].pe)
        } else {
            format!("PE {}-{}", pes[0].pe, pes[pes.len() - 1].pe)
        };
        let _ = write!(
            o,
            "<g><title>{}: busy {:.1}%, idle {:.1}%</title>\
             <rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{}\"/>\
             <rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{IDLE_COLOUR}\"/></g>",
            esc(&label),
            busy * 100.0,
            idle * 100.0,
            h * (1.0 - busy),
            h * busy,
            PALETTE[0],
            h * (1.0 - busy - idle).max(0.0),
            h * idle.min(1.0 - busy).max(0.0)
        );
    }
    o.push('\n');
    let first = summary.pes.first().map_or(0, |p| p.pe);
    let last = summary.pes.last().map_or(0, |p| p.pe);
    let _ = writeln!(
        o,
        "<text x=\"{LABEL_W:.0}\" y=\"{:.0}\">PE {first}</text><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">PE {last}</text>",
        h + 16.0,
        LABEL_W + width,
        h + 16.0
    );
    o.push_str("</svg>\n");
}

fn percent_axis(o: &mut String, width: f64, h: f64) {
    for k in 0..=4 {
        let y = h * (1.0 - k as f64 / 4.0);
        let _ = writeln!(
            o,
            "<line x1=\"{LABEL_W:.0}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}%</text>",
            LABEL_W + width,
            LABEL_W - 6.0,
            y + 4.0,
            k * 25
        );
    }
}

fn time_profile(
    o: &mut String,
    trace: &CompactTrace,
    summary: &Summary,
    opts: &ReportOptions,
    colour_of: &dyn Fn(&str) -> &'static str,
) {
    let tp = &summary.time_profile;
    let bins = tp.busy.len().max(1);
    let _ = writeln!(
        o,
        "<h2>Time profile</h2>\n<p>Share of all PEs' time spent in each entry method (coloured) and idle (grey), per bin of {}.</p>",
        esc(&fmt_ns(tp.bin_ns))
    );
    // Per entry colour and bin, so the bars stack like Projections' time profile.
    let mut stacks: HashMap<&'static str, Vec<f64>> = HashMap::new();
    for t in &trace.tracks {
        for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
            let v = stacks
                .entry(colour_of(trace.strings.get(s.name)))
                .or_insert_with(|| vec![0.0; bins]);
            spread(v, summary.start_ns, tp.bin_ns, s.ts_ns, s.end_ns());
        }
    }
    let denom = tp.bin_ns * summary.pe_count.max(1) as f64;
    let mut order: Vec<&'static str> = PALETTE.to_vec();
    order.push(OTHER_COLOUR);
    let width = opts.columns.max(1) as f64;
    let h = 160.0;
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"time-profile\" width=\"{:.0}\" height=\"{:.0}\">",
        LABEL_W + width + 10.0,
        h + 40.0
    );
    percent_axis(o, width, h);
    let bar_w = width / bins as f64;
    for b in 0..bins {
        let x = LABEL_W + b as f64 * bar_w;
        let bw = (bar_w * 0.9).max(0.5);
        let mut acc = 0.0;
        let _ = write!(
            o,
            "<g><title>{}: busy {:.1}%, idle {:.1}%</title>",
            esc(&fmt_ns(b as f64 * tp.bin_ns)),
            tp.busy.get(b).copied().unwrap_or(0.0) * 100.0,
            tp.idle.get(b).copied().unwrap_or(0.0) * 100.0
        );
        for colour in &order {
            let Some(v) = stacks.get(colour) else {
                continue;
            };
            let f = if denom > 0.0 { v[b] / denom } else { 0.0 };
            if f <= 0.0 {
                continue;
            }
            let f = f.min(1.0 - acc).max(0.0);
            let _ = write!(
                o,
                "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{colour}\"/>",
                h * (1.0 - acc - f),
                h * f
            );
            acc += f;
        }
        let idle = tp
            .idle
            .get(b)
            .copied()
            .unwrap_or(0.0)
            .min(1.0 - acc)
            .max(0.0);
        if idle > 0.0 {
            let _ = write!(
                o,
                "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{IDLE_COLOUR}\"/>",
                h * (1.0 - acc - idle),
                h * idle
            );
        }
        o.push_str("</g>");
    }
    o.push('\n');
    time_axis(o, summary, width, h + 2.0);
    o.push_str("</svg>\n");
}

fn entry_table(o: &mut String, summary: &Summary, colour_of: &dyn Fn(&str) -> &'static str) {
    o.push_str(
        "<h2>Entry methods</h2>\n<table class=\"entries\">\n<tr><th class=\"name\">entry</th>\
         <th>count</th><th>total</th><th>mean</th><th>max</th><th>bytes</th><th>share of busy</th></tr>\n",
    );
    let total: u64 = summary.entries.iter().map(|e| e.total_ns).sum();
    for e in &summary.entries {
        let _ = writeln!(
            o,
            "<tr><td class=\"name\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
            colour_of(&e.name),
            esc(&e.name),
            e.count,
            esc(&fmt_ns(e.total_ns as f64)),
            esc(&fmt_ns(e.mean_ns)),
            esc(&fmt_ns(e.max_ns as f64)),
            esc(&fmt_bytes(e.bytes)),
            if total > 0 {
                e.total_ns as f64 * 100.0 / total as f64
            } else {
                0.0
            }
        );
    }
    o.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
