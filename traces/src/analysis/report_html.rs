//! A self-contained HTML report (inline SVG and CSS, no script, no network). The
//! overview is drawn by the private `report_overview` module, the sections beyond
//! Projections' basic views by `report_views`; both draw with `style` and `svg`.
//!
//! The document is well-formed XHTML (every element closed, every attribute quoted,
//! text escaped) so tools and tests can read it with an XML parser. Each overview row
//! is a `<g class="pe-row" data-pes="A-B">` element: one PE per row up to
//! [`ReportOptions::max_rows`] PEs, above that each row aggregates a range of PEs and is
//! shaded by their busy fraction per time column.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use crate::analysis::accumulate::{outermost_spans, spread};
use crate::analysis::compact::CompactTrace;
use crate::analysis::figures::Summary;
use crate::analysis::model::CAT_ENTRY;
use crate::analysis::read::Trace;
use crate::analysis::report_overview::overview;
use crate::analysis::report_views::{critical_path_table, heat_map, lb_steps, size_histogram};
use crate::analysis::style::{
    esc, fmt_bytes, fmt_ns, pe_label, IDLE_COLOUR, OTHER_COLOUR, PALETTE,
};
use crate::analysis::svg::{percent_axis, svg_open, time_axis, LABEL_W};
use crate::analysis::views::{critical_path, row_groups};

// The options keep their first path (`report_html::ReportOptions`).
pub use crate::analysis::style::ReportOptions;

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
    lb_steps(&mut o, &trace.lb_steps);
    crate::analysis::report_lb::lb_pe_loads(&mut o, &trace.lb_steps, &trace.lb_pe_loads);
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

fn usage_profile(o: &mut String, summary: &Summary, opts: &ReportOptions, rows: &[Range<usize>]) {
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
    svg_open(o, "usage", LABEL_W + width + 10.0, h + 40.0);
    percent_axis(o, width, h);
    let bar_w = width / rows.len().max(1) as f64;
    for (r, range) in rows.iter().enumerate() {
        let pes = &summary.pes[range.clone()];
        let n = pes.len().max(1) as f64;
        let busy = pes.iter().map(|p| p.utilisation).sum::<f64>() / n;
        let idle = pes.iter().map(|p| p.idle_fraction).sum::<f64>() / n;
        let x = LABEL_W + r as f64 * bar_w;
        let bw = (bar_w * 0.85).max(0.5);
        let label = pe_label(pes[0].pe, pes[pes.len() - 1].pe, pes.len() == 1);
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
    let stacks = colour_stacks(trace, summary, bins, colour_of);
    let denom = tp.bin_ns * summary.pe_count.max(1) as f64;
    let mut order: Vec<&'static str> = PALETTE.to_vec();
    order.push(OTHER_COLOUR);
    let width = opts.columns.max(1) as f64;
    let h = 160.0;
    svg_open(o, "time-profile", LABEL_W + width + 10.0, h + 40.0);
    percent_axis(o, width, h);
    let bar_w = width / bins as f64;
    for b in 0..bins {
        let x = LABEL_W + b as f64 * bar_w;
        let bw = (bar_w * 0.9).max(0.5);
        let _ = write!(
            o,
            "<g><title>{}: busy {:.1}%, idle {:.1}%</title>",
            esc(&fmt_ns(b as f64 * tp.bin_ns)),
            tp.busy.get(b).copied().unwrap_or(0.0) * 100.0,
            tp.idle.get(b).copied().unwrap_or(0.0) * 100.0
        );
        let shares = order.iter().filter_map(|&colour| {
            let v = stacks.get(colour)?;
            let f = if denom > 0.0 { v[b] / denom } else { 0.0 };
            (f > 0.0).then_some((colour, f))
        });
        let idle = tp.idle.get(b).copied().unwrap_or(0.0);
        stacked_bar(o, (x, bw, h), shares, idle);
        o.push_str("</g>");
    }
    o.push('\n');
    time_axis(o, summary.span_ns, width, h + 2.0);
    o.push_str("</svg>\n");
}

/// Time in outermost entries per entry colour and bin, so the time profile's bars
/// stack like Projections'.
fn colour_stacks(
    trace: &CompactTrace,
    summary: &Summary,
    bins: usize,
    colour_of: &dyn Fn(&str) -> &'static str,
) -> HashMap<&'static str, Vec<f64>> {
    let mut stacks: HashMap<&'static str, Vec<f64>> = HashMap::new();
    let bin_ns = summary.time_profile.bin_ns;
    for t in &trace.tracks {
        for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
            let v = stacks
                .entry(colour_of(trace.strings.get(s.name)))
                .or_insert_with(|| vec![0.0; bins]);
            spread(v, summary.start_ns, bin_ns, s.ts_ns, s.end_ns());
        }
    }
    stacks
}

/// One bar of a chart `h` px high at `x`, `bw` px wide: the coloured shares from the
/// bottom up, then the idle share, all cut to fit in 100%.
fn stacked_bar<'a>(
    o: &mut String,
    (x, bw, h): (f64, f64, f64),
    shares: impl Iterator<Item = (&'a str, f64)>,
    idle: f64,
) {
    let mut acc = 0.0;
    for (colour, f) in shares {
        let f = f.min(1.0 - acc).max(0.0);
        let _ = write!(
            o,
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{colour}\"/>",
            h * (1.0 - acc - f),
            h * f
        );
        acc += f;
    }
    let idle = idle.min(1.0 - acc).max(0.0);
    if idle > 0.0 {
        let _ = write!(
            o,
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bw:.2}\" height=\"{:.2}\" fill=\"{IDLE_COLOUR}\"/>",
            h * (1.0 - acc - idle),
            h * idle
        );
    }
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
