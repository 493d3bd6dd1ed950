//! The report's drawing primitives: SVG elements, axes, row labels and runs of
//! shaded columns, all left of a label margin of [`LABEL_W`] px.

use std::fmt::Write as _;

use crate::analysis::style::{esc, fmt_ns};

/// Width of the label margin left of every chart, in px.
pub(crate) const LABEL_W: f64 = 120.0;

/// Opens an `<svg>` element of class `class`, `width` by `height` px.
pub(crate) fn svg_open(o: &mut String, class: &str, width: f64, height: f64) {
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{width:.0}\" height=\"{height:.0}\">"
    );
}

/// A row's label in the margin, right-aligned, for a row `row_h` px high at `y`.
pub(crate) fn row_label(o: &mut String, y: f64, row_h: f64, label: &str) {
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"{:.0}\">{}</text>",
        LABEL_W - 6.0,
        y + row_h * 0.8,
        (row_h * 0.9).clamp(3.0, 11.0),
        esc(label)
    );
}

/// Ticks and times at 0, 1/4, .. 1 of a span of `span_ns` drawn `width` px wide, at `y`.
pub(crate) fn time_axis(o: &mut String, span_ns: u64, width: f64, y: f64) {
    for k in 0..=4 {
        let x = LABEL_W + width * k as f64 / 4.0;
        let t = span_ns as f64 * k as f64 / 4.0;
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

/// Grid lines and labels at 0, 25, .. 100% of a chart `h` px high.
pub(crate) fn percent_axis(o: &mut String, width: f64, h: f64) {
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
