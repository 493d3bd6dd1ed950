//! Checkpoints, on disk and in memory: the request that reaches PE 0, the order to
//! save that PE 0 sends every PE at quiescence, each PE's answer, and for an
//! in-memory checkpoint the copy a PE gives its buddy and PE 0's commit (handled in
//! `engine/checkpoint/`).

use super::{family, Body};
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use serde::{Deserialize, Serialize};

family! {
    /// Checkpoints.
    CkptMsg {
        CheckpointRequest = 24 => Some("chorus::checkpoint");
        WriteState = 25 => Some("chorus::checkpoint");
        StateWritten = 26 => Some("chorus::checkpoint");
        BuddyCopy = 34 => Some("chorus::checkpoint");
        MemoryCommit = 35 => Some("chorus::checkpoint");
    }
}

/// Checkpoint the job into `dir` (in memory when `None`) at the next quiescence,
/// then fire `callback` (sent to PE 0, counted so quiescence waits for it).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CheckpointRequest {
    pub(crate) dir: Option<String>,
    pub(crate) callback: Callback,
}

/// Save this PE's state as part of checkpoint `epoch` into `dir`, or in memory
/// when `None` (from PE 0).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WriteState {
    pub(crate) dir: Option<String>,
    pub(crate) epoch: u64,
}

/// PE `pe`'s state of checkpoint `epoch` is saved (`bytes` long, FNV-1a
/// `checksum`): written to its file, or held by its buddy; or it could not be
/// (`error`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StateWritten {
    pub(crate) epoch: u64,
    pub(crate) pe: Pe,
    pub(crate) bytes: u64,
    pub(crate) checksum: u64,
    /// Boxed: the error is large and rare, and the largest runtime message sets the
    /// size of every envelope (see `engine::per_pe_sizes`).
    pub(crate) error: Option<Box<crate::base::checkpoint_error::CheckpointError>>,
}

/// PE `pe`'s state in in-memory checkpoint `epoch`, for its buddy to keep.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct BuddyCopy {
    pub(crate) epoch: u64,
    pub(crate) pe: Pe,
    pub(crate) state: crate::base::bytes::Bytes,
}

/// In-memory checkpoint `epoch` is complete: drop the copies of older ones (from
/// PE 0).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct MemoryCommit {
    pub(crate) epoch: u64,
}

impl Body for CheckpointRequest {}

impl Body for WriteState {}

impl Body for StateWritten {}

impl Body for BuddyCopy {
    fn body_bytes(&self) -> u64 {
        self.state.len() as u64 + 16
    }
}

impl Body for MemoryCommit {}
