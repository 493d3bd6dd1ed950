//! How the outputs look: the number formats people read, the report's options,
//! colours and opacity levels, and escaping for its XHTML.

/// A duration for people: ns, µs, ms or s with a sensible number of digits.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.3} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// A byte count for people.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b < 1024.0 {
        format!("{b} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    }
}

/// The label of a row of PEs from `first` to `last`, of that one PE when `single`.
pub(crate) fn pe_label(first: u32, last: u32, single: bool) -> String {
    if single {
        format!("PE {first}")
    } else {
        format!("PE {first}-{last}")
    }
}

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
/// Colour of the entries past the palette.
pub(crate) const OTHER_COLOUR: &str = "#7f7f7f";
/// Colour of idle time.
pub(crate) const IDLE_COLOUR: &str = "#d9d9d9";

/// Opacity level 1..=10 for a fraction, 0 meaning nothing to draw.
pub(crate) fn level(frac: f64) -> u8 {
    if frac <= 0.0 {
        0
    } else {
        ((frac * 10.0).ceil() as u8).clamp(1, 10)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
