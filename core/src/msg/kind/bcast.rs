//! Broadcasts: a user message for every member of a group or array, forwarded down
//! the PE tree (handled in `engine/deliver.rs`).

use super::payload_slot;
use super::{family, Body};
use crate::base::ids::{CollectionId, Pe};
use crate::base::tree;
use crate::msg::dest::Dest;
use crate::msg::payload::Payload;
use serde::{Deserialize, Serialize};

family! {
    /// Broadcasts.
    BcastMsg {
        Bcast = 1 => None;
    }
}

/// A broadcast to a group or array, forwarded down the tree rooted at `root`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Bcast {
    pub(crate) dest: Dest,
    pub(crate) root: Pe,
    #[serde(with = "payload_slot")]
    pub(crate) payload: Payload,
}

impl Body for Bcast {
    fn payload(&self) -> Option<&Payload> {
        Some(&self.payload)
    }
    fn payload_mut(&mut self) -> Option<&mut Payload> {
        Some(&mut self.payload)
    }
    fn needs(&self) -> Option<CollectionId> {
        self.dest.coll()
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        tree::check_root(self.root, npes).map_err(|e| e.to_string())
    }
    fn body_bytes(&self) -> u64 {
        self.dest.wire_bytes() + self.payload.wire_len()
    }
}
