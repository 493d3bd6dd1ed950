//! The report's sections for Projections' extra views: the utilisation heat map, the
//! message-size histogram and the critical path (see [`crate::analysis::views`]).

use std::fmt::Write as _;

use crate::analysis::figures::{CriticalPath, Summary};
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
