//! Quiescence detection's waves and requests, and the report of messages left
//! waiting at quiescence (handled in `engine/quiescence.rs`).

use super::{check_root, family, Body};
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use serde::{Deserialize, Serialize};

family! {
    /// Quiescence detection.
    QdMsg {
        QdRequest = 9 => Some("chorus::quiescence");
        QdWave = 10 => Some("chorus::quiescence");
        QdReply = 11 => Some("chorus::quiescence");
        Orphans = 12 => Some("chorus::orphans");
    }
}

/// Fire `callback` at the next quiescence (sent to PE 0).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct QdRequest {
    pub(crate) callback: Callback,
}

/// Wave `wave` going down the PE tree.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct QdWave {
    pub(crate) wave: u64,
}

/// A subtree's sums for wave `wave`, going up.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct QdReply {
    pub(crate) wave: u64,
    pub(crate) sent: u64,
    pub(crate) processed: u64,
}

/// Sent down the tree at quiescence: report messages still waiting for a creation.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Orphans {
    pub(crate) root: Pe,
}

impl Body for QdRequest {}

impl Body for QdWave {}

impl Body for QdReply {
    fn body_bytes(&self) -> u64 {
        24
    }
}

impl Body for Orphans {
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)
    }
}

impl QdMsg {
    /// True for a wave going down the PE tree or a reply coming up.
    pub(crate) fn is_wave(&self) -> bool {
        matches!(self, QdMsg::QdWave(_) | QdMsg::QdReply(_))
    }
}
