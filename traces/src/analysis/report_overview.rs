//! The report's overview: one row per PE (or range of PEs) across the trace span.
//! A per-PE overview with few slices draws every outermost slice; otherwise each row
//! is binned into columns first (the accumulation below) and then drawn as runs of
//! shaded columns.

use crate::ids::run_id;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use crate::analysis::accumulate::{outermost_spans, spread};
use crate::analysis::compact::{CompactTrace, CompactTrack};
use crate::analysis::figures::Summary;
use crate::analysis::model::{CAT_ENTRY, CAT_IDLE};
use crate::analysis::style::{esc, fmt_ns, level, pe_label, ReportOptions, IDLE_COLOUR, PALETTE};
use crate::analysis::svg::{row_label, runs, svg_open, time_axis, LABEL_W};

/// A column's colour and opacity level, `None` for an empty column.
type Column = Option<(&'static str, u8)>;

/// The overview's horizontal scale.
struct Frame {
    /// The trace's start in ns.
    t0: u64,
    /// Px per ns.
    scale: f64,
    /// Columns of a binned row.
    cols: usize,
    /// Width of a column in ns.
    col_ns: f64,
    /// Width of a column in px.
    col_w: f64,
}

/// Draws the overview of `trace`, one row per range in `rows`.
pub(crate) fn overview(
    o: &mut String,
    trace: &CompactTrace,
    summary: &Summary,
    opts: &ReportOptions,
    rows: &[Range<usize>],
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
    svg_open(o, "overview", LABEL_W + width + 10.0, height);
    let span = summary.span_ns.max(1) as f64;
    let cols = opts.columns.max(1);
    let frame = Frame {
        t0: summary.start_ns,
        scale: width / span,
        cols,
        col_ns: span / cols as f64,
        col_w: width / cols as f64,
    };
    let exact = per_pe && {
        let n: usize = trace.tracks.iter().map(|t| t.slice_count()).sum();
        n <= opts.max_exact_slices
    };
    for (r, range) in rows.iter().enumerate() {
        let y = r as f64 * row_h;
        let tracks = &trace.tracks[range.clone()];
        let (first, last) = (run_id(tracks[0].tid), run_id(tracks[tracks.len() - 1].tid));
        let data = format!("{first}-{last}");
        let _ = write!(o, "<g class=\"pe-row\" data-pes=\"{}\">", esc(&data));
        row_label(o, y, row_h, &pe_label(first, last, per_pe));
        let h = row_h - gap;
        if exact {
            exact_row(o, trace, &tracks[0], &frame, (y, h), colour_of);
        } else if per_pe {
            let keys = pe_columns(trace, &tracks[0], &frame, colour_of);
            runs(o, &keys, y, h, frame.col_w);
        } else {
            let keys = range_columns(trace, tracks, &frame);
            runs(o, &keys, y, h, frame.col_w);
        }
        o.push_str("</g>\n");
    }
    time_axis(o, summary.span_ns, width, rows.len() as f64 * row_h + 2.0);
    o.push_str("</svg>\n");
}

/// Every outermost idle and entry slice of track `t`, in a row at `y`, `h` px high.
fn exact_row(
    o: &mut String,
    trace: &CompactTrace,
    t: &CompactTrack,
    f: &Frame,
    (y, h): (f64, f64),
    colour_of: &dyn Fn(&str) -> &'static str,
) {
    for s in outermost_spans(&trace.strings, t, CAT_IDLE) {
        let _ = write!(
            o,
            "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"{IDLE_COLOUR}\"/>",
            LABEL_W + (s.ts_ns - f.t0) as f64 * f.scale,
            (s.dur_ns as f64 * f.scale).max(0.3)
        );
    }
    for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
        let name = trace.strings.get(s.name);
        let _ = write!(
            o,
            "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {} at {}</title></rect>",
            LABEL_W + (s.ts_ns - f.t0) as f64 * f.scale,
            (s.dur_ns as f64 * f.scale).max(0.3),
            colour_of(name),
            esc(name),
            esc(&fmt_ns(s.dur_ns as f64)),
            esc(&fmt_ns((s.ts_ns - f.t0) as f64))
        );
    }
}

/// One PE's columns: the entry with the most time in a column sets its colour, busy
/// time its opacity; idle-dominated columns are grey.
fn pe_columns(
    trace: &CompactTrace,
    t: &CompactTrack,
    f: &Frame,
    colour_of: &dyn Fn(&str) -> &'static str,
) -> Vec<Column> {
    let cols = f.cols;
    let mut busy = vec![0.0; cols];
    let mut idle = vec![0.0; cols];
    let mut by_entry: HashMap<(usize, &str), f64> = HashMap::new();
    let mut one = vec![0.0; cols];
    for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
        // `one` is all zeros between slices: only the touched columns are reset.
        let first = (((s.ts_ns - f.t0) as f64 / f.col_ns) as usize).min(cols - 1);
        let last = (((s.end_ns() - f.t0) as f64 / f.col_ns) as usize).min(cols - 1);
        spread(&mut one, f.t0, f.col_ns, s.ts_ns, s.end_ns());
        for (c, v) in one.iter_mut().enumerate().take(last + 1).skip(first) {
            if *v > 0.0 {
                busy[c] += *v;
                *by_entry.entry((c, trace.strings.get(s.name))).or_default() += *v;
            }
            *v = 0.0;
        }
    }
    for s in outermost_spans(&trace.strings, t, CAT_IDLE) {
        spread(&mut idle, f.t0, f.col_ns, s.ts_ns, s.end_ns());
    }
    let mut best: Vec<(&str, f64)> = vec![("", 0.0); cols];
    for ((c, name), v) in by_entry {
        if v > best[c].1 || (v == best[c].1 && name < best[c].0) {
            best[c] = (name, v);
        }
    }
    (0..cols)
        .map(|c| {
            if busy[c] >= idle[c] && busy[c] > 0.0 {
                Some((colour_of(best[c].0), level(busy[c] / f.col_ns)))
            } else if idle[c] > 0.0 {
                Some((IDLE_COLOUR, level(idle[c] / f.col_ns)))
            } else {
                None
            }
        })
        .collect()
}

/// A range of PEs' columns, shaded by their busy fraction.
fn range_columns(trace: &CompactTrace, tracks: &[CompactTrack], f: &Frame) -> Vec<Column> {
    let mut busy = vec![0.0; f.cols];
    for t in tracks {
        for s in outermost_spans(&trace.strings, t, CAT_ENTRY) {
            spread(&mut busy, f.t0, f.col_ns, s.ts_ns, s.end_ns());
        }
    }
    let denom = f.col_ns * tracks.len() as f64;
    busy.iter()
        .map(|&b| {
            let l = level(b / denom);
            (l > 0).then_some((PALETTE[0], l))
        })
        .collect()
}
