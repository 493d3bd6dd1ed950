//! Ports of Charm++'s own benchmarks (`benchmarks/charm++/` in charmplusplus/charm),
//! with the originals' parameters, result checks and output lines, so that
//! `scripts/vs-charm.sh` can run each beside its Charm++ build and parse both.
//!
//! Each port runs on the layer `--layer` names (threads beside Charm++'s multicore
//! build, mpi under `mpirun` beside its mpi build), checks its result and fails
//! with [`CharmError::Check`] when the check does not hold.

pub mod alltoall;
pub mod jacobi2d;
pub mod kneighbor;
pub mod leanmd;
pub mod migrate;
pub mod pingpong;
pub mod xcastredn;

use crate::bench::report::{print, Report};
use crate::job::JobProcess;
use chorus_core::{Config, RuntimeError};

/// Why a port ended without a result it trusts.
#[derive(Debug, thiserror::Error)]
pub enum CharmError {
    /// The job itself failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The job ended without publishing what the port reads.
    #[error("the run ended without publishing {what}; rerun, and report it if it repeats")]
    Unpublished {
        /// The figure or count that is missing.
        what: &'static str,
    },
    /// The port's check of its result failed: the runtime lost, duplicated or
    /// corrupted something.
    #[error("{bench}: {what}")]
    Check {
        /// The port.
        bench: &'static str,
        /// What was expected and what came.
        what: String,
    },
    /// A parameter the original refuses too.
    #[error("{bench}: {what}")]
    Usage {
        /// The port.
        bench: &'static str,
        /// The parameter and the range it must be in.
        what: String,
    },
}

/// Run a port as its own job (starting MPI on the mpi layer) and print its report on
/// the one process that speaks.
pub fn show<R: Report>(
    config: &Config,
    as_json: bool,
    run: impl FnOnce() -> Result<R, CharmError>,
) -> Result<(), String> {
    let job = JobProcess::start(config)?;
    let out = run().map_err(|e| e.to_string())?;
    if job.speaks {
        print(&out, as_json);
    }
    Ok(())
}

/// The value published under `key`, or the error naming `what` is missing.
fn output<T: serde::de::DeserializeOwned>(
    report: &chorus_core::RunReport,
    key: &str,
    what: &'static str,
) -> Result<T, CharmError> {
    report.output(key).ok_or(CharmError::Unpublished { what })
}

/// The largest message a port sends: 1 GiB, so that a size flag cannot ask for
/// more memory than a machine has before the job starts.
pub const MAX_MESSAGE_BYTES: usize = 1 << 30;

/// Refuse `value` of `flag` above `max` (a usage error naming the flag).
fn at_most(bench: &'static str, flag: &str, value: usize, max: usize) -> Result<(), CharmError> {
    if value > max {
        return Err(CharmError::Usage {
            bench,
            what: format!("{flag} is {value}; give at most {max}"),
        });
    }
    Ok(())
}
