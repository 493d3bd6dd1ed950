//! How a bench's result is printed: as lines for a reader, or as the one JSON object
//! `--json` prints; and the figures a bench aims for.

use std::fmt;

/// A bench's result, printable both ways.
pub trait Report {
    /// The one JSON object printed under `--json`.
    fn json(&self) -> String;
    /// The lines printed without `--json`, each ending in a newline.
    fn table(&self) -> String;
}

/// Print `report` to stdout: its JSON under `as_json`, else its table.
pub fn print(report: &impl Report, as_json: bool) {
    if as_json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
}

/// A bound a measured figure (usually a ratio) aims to meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// At least this.
    AtLeast(f64),
    /// At most this.
    AtMost(f64),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::AtLeast(v) => write!(f, ">= {v}"),
            Target::AtMost(v) => write!(f, "<= {v}"),
        }
    }
}

/// Which way a figure improves, for picking the best of repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Rates: the highest is best.
    Higher,
    /// Times: the lowest is best.
    Lower,
}

impl Better {
    /// The better of the best so far (if any) and `v`.
    pub fn pick(self, best: Option<f64>, v: f64) -> f64 {
        match (best, self) {
            (None, _) => v,
            (Some(b), Better::Higher) => b.max(v),
            (Some(b), Better::Lower) => b.min(v),
        }
    }
}

/// The best of `reps` (at least one) runs of `f`.
pub fn best<E>(reps: u32, better: Better, mut f: impl FnMut() -> Result<f64, E>) -> Result<f64, E> {
    let mut out = better.pick(None, f()?);
    for _ in 1..reps {
        out = better.pick(Some(out), f()?);
    }
    Ok(out)
}

/// Peak resident set size of this process in MiB, from /proc (Linux only).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A `{:?}`-style name lowercased, as the JSON prints presets (`bgp`, `ideal`).
pub fn lower_debug(v: &impl fmt::Debug) -> String {
    format!("{v:?}").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_print_as_the_tables_state_them() {
        assert_eq!(format!("{}x", Target::AtLeast(5.0)), ">= 5x");
        assert_eq!(format!("{}x", Target::AtMost(1.5)), "<= 1.5x");
        assert_eq!(Target::AtLeast(0.9).to_string(), ">= 0.9");
    }

    #[test]
    fn best_keeps_the_highest_rate_and_the_lowest_time() {
        let mut v = [3.0, 5.0, 4.0].into_iter();
        let hi = best::<()>(3, Better::Higher, || Ok(v.next().unwrap())).unwrap();
        assert_eq!(hi, 5.0);
        let mut v = [3.0, 5.0, 1.0].into_iter();
        let lo = best::<()>(3, Better::Lower, || Ok(v.next().unwrap())).unwrap();
        assert_eq!(lo, 1.0);
    }
}
