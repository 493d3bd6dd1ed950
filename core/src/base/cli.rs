//! Parsers for numeric command-line flags. The apps' own flags are checked here
//! against the range each allows: clap calls these parsers, so a value out of range
//! is a usage error (exit code 2) whose message names the range, never a panic later
//! or a value that silently wraps. The job's flags (`Config`) are only parsed here;
//! `Config::validate` checks their ranges.

/// Most microseconds one `--sim-*-us` cost may take: one second per message keeps
/// every virtual clock far from overflowing its 64-bit nanoseconds.
pub const MAX_SIM_US: f64 = 1e6;

/// Most nanoseconds per byte a `--sim-*-ns-per-byte` cost may take (a 4 GiB message
/// then costs 50 virtual days, still far from overflow).
pub const MAX_SIM_NS_PER_BYTE: f64 = 1e6;

/// A finite number in `lo..=hi` (`inf`, `nan` and anything out of range are refused).
pub fn f64_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number; expected one in {lo}..={hi}"))?;
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{} is outside the allowed range {lo}..={hi}",
            s.trim()
        ))
    }
}

/// A finite number greater than 0 and at most `hi`.
pub fn positive_f64_up_to(s: &str, hi: f64) -> Result<f64, String> {
    match f64_in(s, 0.0, hi) {
        Ok(v) if v > 0.0 => Ok(v),
        _ => Err(format!(
            "{} is outside the allowed range: above 0 and at most {hi}",
            s.trim()
        )),
    }
}

/// A whole number in `lo..=hi`; too large for 64 bits or written as `1e30` is refused
/// with the range, not just "invalid digit".
pub fn u64_in(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let v: u128 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a whole number; expected one in {lo}..={hi}"))?;
    match u64::try_from(v) {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!(
            "{} is outside the allowed range {lo}..={hi}",
            s.trim()
        )),
    }
}

/// A `--sim-*-us` cost, microseconds (`Config::validate` checks `0..=MAX_SIM_US`).
pub fn sim_us(s: &str) -> Result<f64, String> {
    cost(s, MAX_SIM_US)
}

/// A `--sim-*-ns-per-byte` cost, nanoseconds (`Config::validate` checks
/// `0..=MAX_SIM_NS_PER_BYTE`).
pub fn sim_ns_per_byte(s: &str) -> Result<f64, String> {
    cost(s, MAX_SIM_NS_PER_BYTE)
}

/// A number, or an error naming the range `0..=max` a cost must be in.
fn cost(s: &str, max: f64) -> Result<f64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("not a number; expected one in 0..={max}"))
}

/// Nanoseconds in a time such as `250ns`, `1.5us`, `2ms` or `3s`.
pub(crate) fn parse_duration_ns(s: &str) -> Option<u64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let v: f64 = num.trim().parse().ok()?;
    // At most 1e6 s, so the time never saturates the 64-bit nanoseconds unnoticed.
    (v.is_finite() && (0.0..=1e6).contains(&(v * scale / 1e9))).then(|| (v * scale).round() as u64)
}

/// A time in the largest unit that shows it whole: `1500us`, `2ms`, `250ns`.
pub(crate) fn fmt_ns(ns: u64) -> String {
    let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    match units
        .iter()
        .find(|&&(per, _)| ns != 0 && ns.is_multiple_of(per))
    {
        Some(&(per, unit)) => format!("{}{unit}", ns / per),
        None => format!("{ns}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_outside_their_range_name_it() {
        assert_eq!(f64_in("2.5", 0.0, 10.0), Ok(2.5));
        for bad in ["1e30", "inf", "nan", "-1", "x"] {
            let e = f64_in(bad, 0.0, 10.0).expect_err(bad);
            assert!(e.contains("0..=10"), "{bad}: {e}");
        }
        assert!(positive_f64_up_to("0", 5.0).is_err());
        assert_eq!(u64_in("7", 1, 9), Ok(7));
        for bad in ["99999999999999999999", "1e30", "0", "-3", "10"] {
            let e = u64_in(bad, 1, 9).expect_err(bad);
            assert!(e.contains("1..=9"), "{bad}: {e}");
        }
    }
}
