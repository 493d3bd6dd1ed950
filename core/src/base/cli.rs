//! Parsers for numeric command-line flags with the range each allows. Clap calls
//! them, so a value out of range is a usage error (exit code 2) whose message names
//! the range, never a panic later or a value that silently wraps.

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

/// A `--sim-*-us` cost: microseconds in `0..=MAX_SIM_US`.
pub fn sim_us(s: &str) -> Result<f64, String> {
    f64_in(s, 0.0, MAX_SIM_US)
}

/// A `--sim-*-ns-per-byte` cost: nanoseconds in `0..=MAX_SIM_NS_PER_BYTE`.
pub fn sim_ns_per_byte(s: &str) -> Result<f64, String> {
    f64_in(s, 0.0, MAX_SIM_NS_PER_BYTE)
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
