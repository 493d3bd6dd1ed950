//! How a restarted job goes on as the job that wrote its checkpoint went on after
//! the commit: the manifest keeps the checkpoint's callback (and, on sim, the
//! virtual time and network state of the commit), and `Ctx::resume_from_checkpoint`
//! delivers that callback again, as Charm++'s `+restart` does. On sim, on as many
//! PEs, the restarted job then replays the rest of the run bit for bit: the same
//! deliveries at the same virtual times in the same order (`SimStats`'s digest since
//! the commit shows it). Not on another PE count (elements and reductions take
//! other PEs), and not for an element away from its map's home at the checkpoint:
//! a restart places elements by their maps and keeps no location cache, so such a
//! job goes on to the same answer by other deliveries.

use crate::base::checkpoint_error::CheckpointError;
use crate::machine::sim::resume::SimResume;
use crate::msg::callback::Callback;
use crate::msg::reduction::RedData;
use serde::{Deserialize, Serialize};

/// What a disk checkpoint's manifest keeps for the job restarted from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ResumePoint {
    /// The callback the checkpoint delivered at its commit.
    pub(crate) callback: Callback,
    /// On sim, where the simulation stood at the commit.
    pub(crate) sim: Option<SimResume>,
}

/// What a disk checkpoint's callback receives, at its commit and at a resume.
pub(crate) fn committed_data() -> RedData {
    RedData::List(Vec::new())
}

impl crate::engine::PeCore {
    /// Deliver the checkpoint's callback again, once, from this PE.
    pub(crate) fn resume_from_checkpoint(&mut self) -> Result<(), CheckpointError> {
        let Some(r) = self.resumed.as_deref_mut() else {
            return Err(CheckpointError::NothingToResume {
                why: "the job was not started with --restart".into(),
            });
        };
        let Some(callback) = r.callback.take() else {
            let why = if r.info.in_memory {
                "an in-memory rollback delivers the checkpoint's callback itself"
            } else {
                "the checkpoint's callback was delivered already, or its manifest (written by an older chorus) does not record it"
            };
            return Err(CheckpointError::NothingToResume { why: why.into() });
        };
        self.fire(&callback, committed_data());
        Ok(())
    }
}
