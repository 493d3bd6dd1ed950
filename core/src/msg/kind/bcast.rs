//! Broadcasts: a user message for every member of a group or array, forwarded down
//! the PE tree (handled in `engine/deliver.rs`).

use super::payload_slot;
use super::{check_root, family, payload_in, Body};
use crate::base::ids::{CollectionId, Pe};
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
    payload_in!(payload);
    fn needs(&self) -> Option<CollectionId> {
        self.dest.coll()
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)
    }
    fn body_bytes(&self) -> u64 {
        self.dest.wire_bytes() + self.payload.wire_len()
    }
}
