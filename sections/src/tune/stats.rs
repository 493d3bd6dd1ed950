//! The statistics of a measurement: relative standard error (the NREP stopping rule),
//! minimum and median.

/// Relative standard error of the mean of `xs` (0 for fewer than two values or a zero mean).
pub fn rse(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (var / n).sqrt() / mean
}

/// Smallest value (infinite for none).
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Median (the mean of the middle two for an even count; NaN for none).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rse_min_median() {
        assert_eq!(rse(&[5.0, 5.0, 5.0]), 0.0);
        let r = rse(&[1.0, 3.0]);
        // mean 2, sample stdev sqrt(2), standard error 1.
        assert!((r - 0.5).abs() < 1e-12);
        assert_eq!(min(&[3.0, 1.0, 2.0]), 1.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
