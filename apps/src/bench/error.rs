//! Why a bench could not produce its figures, besides the runtime's own errors.

use chorus_core::RuntimeError;
use chorus_sections::host::batch::BatchError;

/// A bench that ended without its figures.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The job itself failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A batch of section creations failed.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// The job ended without publishing a figure the bench reads.
    #[error("the run ended without publishing {what}; rerun, and report it if it repeats")]
    Unpublished {
        /// The figure that is missing.
        what: &'static str,
    },
    /// A run that had to be simulated reported no simulator statistics.
    #[error("the run reported no simulator statistics: this bench runs on --layer sim only")]
    NotSimulated,
    /// The flood's sink did not receive every message.
    #[error("the flood lost messages: its sink's checksum is {got:?}, expected {expected} (none: a timestamp is missing)")]
    LostMessages {
        /// The sink's checksum of the items it received.
        got: Option<u64>,
        /// The sum of every item sent.
        expected: u64,
    },
    /// A group size outside the job.
    #[error("a group of {group} PEs does not fit in --pes {pes}; give sizes from 1 to {pes}")]
    GroupDoesNotFit {
        /// The size asked for.
        group: u32,
        /// PEs in the job.
        pes: u32,
    },
    /// Some of the planned runs never finished.
    #[error("{finished} of {planned} runs finished")]
    Unfinished {
        /// Runs that reported a time.
        finished: usize,
        /// Runs planned.
        planned: usize,
    },
    /// A creation of the MPI models failed, in the creator's words.
    #[error("a modelled communicator creation failed: {0}")]
    ModelFailed(String),
    /// An MPI bench started on fewer than two ranks.
    #[error("{bench} needs at least 2 ranks: {example}")]
    TooFewRanks {
        /// The bench's name.
        bench: &'static str,
        /// A command line that runs it.
        example: &'static str,
    },
}
