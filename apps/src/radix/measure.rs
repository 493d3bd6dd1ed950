//! The overlapped sort and its blocking baseline, run side by side, and the
//! NBCBench overlap they give.

use super::driver::{run, RadixError};
use super::key::Key;
use super::overlap::overlap_of;
use super::params::RadixParams;
use super::report::SortReport;
use chorus_core::Config;

/// One allgather algorithm measured both ways.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The sort with the allgather overlapped with the local key movement.
    pub overlapped: SortReport,
    /// The baseline: the allgather waited for first.
    pub blocking: SortReport,
    /// NBCBench overlap: t_comm and t_comp from the baseline, t_comp+comm from the
    /// overlapped run (None if the allgather took no time).
    pub overlap: Option<f64>,
}

impl Comparison {
    /// Both runs sorted.
    pub fn sorted(&self) -> bool {
        self.overlapped.sorted && self.blocking.sorted
    }
}

/// Run the baseline, then the overlapped sort, on the same input (same seed).
pub fn compare<K: Key>(config: &Config, params: RadixParams) -> Result<Comparison, RadixError> {
    let blocking = run::<K>(
        config,
        RadixParams {
            blocking: true,
            ..params
        },
    )?;
    let overlapped = run::<K>(
        config,
        RadixParams {
            blocking: false,
            ..params
        },
    )?;
    let overlap = overlap_of(&blocking.times, &overlapped.times);
    Ok(Comparison {
        overlapped,
        blocking,
        overlap,
    })
}
