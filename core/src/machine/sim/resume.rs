//! The sim layer's state at a checkpoint's commit, which a disk checkpoint keeps so
//! that a job restarted from it on as many PEs goes on bit for bit as the job that
//! wrote it: the virtual time of the commit and the network model's state then.
//! What the PEs' runtimes hold is in the checkpoint's PE files; the event list
//! holds nothing then but the commit's own sends (a checkpoint is taken at
//! quiescence, and every PE answered PE 0 before it commits).

use serde::{Deserialize, Serialize};

/// Where a simulated job stood when a checkpoint was committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimResume {
    /// PE 0's virtual clock at the commit, nanoseconds: the checkpoint's callback
    /// fires then, and a restarted job resumes then.
    pub at_ns: u64,
    /// Jitter delays drawn so far (each network message draws the next).
    pub jitter_draws: u64,
    /// With `--sim-contention`, every PE's (outgoing, incoming) link bookings.
    pub links: Option<(Vec<u64>, Vec<u64>)>,
}
