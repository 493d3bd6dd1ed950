//! Disk checkpoints: the request that reaches PE 0, the order to write that PE 0
//! sends every PE at quiescence, and each PE's answer (handled in
//! `engine/checkpoint.rs`).

use super::{family, Body};
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use serde::{Deserialize, Serialize};

family! {
    /// Disk checkpoints.
    CkptMsg {
        CheckpointRequest = 24 => Some("chorus::checkpoint");
        WriteState = 25 => Some("chorus::checkpoint");
        StateWritten = 26 => Some("chorus::checkpoint");
    }
}

/// Checkpoint the job into `dir` at the next quiescence, then fire `callback`
/// (sent to PE 0, counted so quiescence waits for it).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CheckpointRequest {
    pub(crate) dir: String,
    pub(crate) callback: Callback,
}

/// Write this PE's state as part of checkpoint `epoch` into `dir` (from PE 0).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WriteState {
    pub(crate) dir: String,
    pub(crate) epoch: u64,
}

/// PE `pe` wrote its file of checkpoint `epoch` (`bytes` long, FNV-1a `checksum`),
/// or could not (`error`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StateWritten {
    pub(crate) epoch: u64,
    pub(crate) pe: Pe,
    pub(crate) bytes: u64,
    pub(crate) checksum: u64,
    pub(crate) error: Option<crate::base::checkpoint_error::CheckpointError>,
}

impl Body for CheckpointRequest {}

impl Body for WriteState {}

impl Body for StateWritten {}
