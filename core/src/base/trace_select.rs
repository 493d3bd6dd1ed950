//! What part of a run `--trace` records: `--trace-pes LIST|RANGE` and
//! `--trace-window T0..T1`.

use crate::base::cli::{fmt_ns, parse_duration_ns};

/// PEs to trace: PEs and inclusive ranges, e.g. `0..63` (64 PEs) or `0,5,8..15`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeList {
    /// Inclusive ranges, sorted and merged.
    ranges: Vec<(u32, u32)>,
}

impl PeList {
    /// The inclusive ranges, sorted, disjoint and not touching.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// Whether `pe` is in the list.
    pub fn contains(&self, pe: u32) -> bool {
        let i = self.ranges.partition_point(|&(_, last)| last < pe);
        self.ranges.get(i).is_some_and(|&(first, _)| first <= pe)
    }

    /// How many PEs the list names.
    pub fn count(&self) -> u64 {
        self.ranges.iter().map(|&(a, b)| u64::from(b - a) + 1).sum()
    }

    /// The highest PE named.
    pub fn max(&self) -> u32 {
        self.ranges.last().map_or(0, |&(_, b)| b)
    }
}

impl std::str::FromStr for PeList {
    type Err = String;

    /// Comma-separated PEs and inclusive ranges `A..B`.
    fn from_str(s: &str) -> Result<Self, String> {
        let help = "expected PEs and inclusive ranges separated by commas, e.g. 0..63 or 0,5,8..15";
        let pe = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("{t:?} in {s:?} is not a PE number ({help})"))
        };
        let mut ranges = Vec::new();
        for part in s.split(',') {
            if part.trim().is_empty() {
                return Err(format!("{s:?} has an empty item ({help})"));
            }
            let (a, b) = match part.split_once("..") {
                Some((a, b)) => (pe(a)?, pe(b.strip_prefix('=').unwrap_or(b))?),
                None => {
                    let p = pe(part)?;
                    (p, p)
                }
            };
            if a > b {
                return Err(format!(
                    "{part:?} in {s:?} runs backwards: the first PE must not exceed the last"
                ));
            }
            ranges.push((a, b));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if u64::from(a) <= u64::from(last.1) + 1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Ok(PeList { ranges: merged })
    }
}

impl std::fmt::Display for PeList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(a, b)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}..{b}")?;
            }
        }
        Ok(())
    }
}

/// A span of the layer's clock to trace, in ns: events from `from_ns` to `to_ns`
/// inclusive (`to_ns` is `u64::MAX` when the window is open at its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceWindow {
    /// First time recorded.
    pub from_ns: u64,
    /// Last time recorded.
    pub to_ns: u64,
}

impl std::str::FromStr for TraceWindow {
    type Err = String;

    /// `T0..T1`, each a number with `ns`, `us`, `ms` or `s` (or `0`), either left out.
    fn from_str(s: &str) -> Result<Self, String> {
        let help = "expected T0..T1 with times such as 250us or 1.5ms (either end may be left out, e.g. 2ms..)";
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("{s:?} is not a window ({help})"))?;
        let time = |t: &str, open: u64| -> Result<u64, String> {
            match t.trim() {
                "" => Ok(open),
                "0" => Ok(0),
                t => parse_duration_ns(t)
                    .ok_or_else(|| format!("{t:?} in {s:?} is not a time ({help})")),
            }
        };
        // An empty window parses: `Config::validate` refuses it.
        let (from_ns, to_ns) = (time(a, 0)?, time(b, u64::MAX)?);
        Ok(TraceWindow { from_ns, to_ns })
    }
}

impl std::fmt::Display for TraceWindow {
    /// As the flag takes it: `1ms..2500us`, or `2ms..` when open at its end.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..", fmt_ns(self.from_ns))?;
        match self.to_ns {
            u64::MAX => Ok(()),
            to => f.write_str(&fmt_ns(to)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PeList, TraceWindow};

    #[test]
    fn pe_lists_parse_merge_and_answer() {
        let l: PeList = "8..15, 0,5 ,3..4,16".parse().unwrap();
        assert_eq!(l.ranges(), [(0, 0), (3, 5), (8, 16)]);
        assert_eq!(l.count(), 1 + 3 + 9);
        assert_eq!(l.max(), 16);
        assert!(l.contains(0) && l.contains(4) && l.contains(16));
        assert!(!l.contains(1) && !l.contains(7) && !l.contains(17));
        assert_eq!(l.to_string(), "0,3..5,8..16");
        let all: PeList = "0..63".parse().unwrap();
        assert_eq!(all.count(), 64, "ranges include their last PE");
        assert_eq!("0..=63".parse::<PeList>().unwrap(), all);
        for bad in ["", "1,,2", "x", "5..2", "1..", "-1", "0..4294967296"] {
            let e = bad.parse::<PeList>().expect_err(bad);
            assert!(
                e.contains(&format!("{bad:?}")) || e.contains("empty"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn windows_parse_with_units_and_open_ends() {
        let w: TraceWindow = "1ms..2.5ms".parse().unwrap();
        assert_eq!((w.from_ns, w.to_ns), (1_000_000, 2_500_000));
        let w: TraceWindow = "..250us".parse().unwrap();
        assert_eq!((w.from_ns, w.to_ns), (0, 250_000));
        let w: TraceWindow = "2s..".parse().unwrap();
        assert_eq!((w.from_ns, w.to_ns), (2_000_000_000, u64::MAX));
        assert_eq!("0..1ns".parse::<TraceWindow>().unwrap().to_ns, 1);
        for bad in ["1ms", "1..2", "a..b"] {
            assert!(bad.parse::<TraceWindow>().is_err(), "{bad}");
        }
        let empty: TraceWindow = "2ms..1ms".parse().expect("validate refuses it");
        assert_eq!(empty.to_string(), "2ms..1ms");
        assert_eq!(w.to_string(), "2s..");
    }
}
