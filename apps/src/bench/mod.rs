//! Side-by-side measurements: chorus against baselines run in the same process.

#[cfg(feature = "baselines")]
pub mod baselines;
pub mod messaging;
#[cfg(feature = "mpi")]
pub mod mpi_pingpong;
pub mod sections;
#[cfg(feature = "mpi")]
pub mod sections_vs_mpi;
pub mod sim_scale;

/// Median of a sample (sorts it).
pub fn median(samples: &mut [f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
