//! Broadcasts: a user message for every member of a group or array, forwarded down
//! the PE tree, or to every member of a nodegroup down the tree over nodes (handled
//! in `engine/deliver.rs`).

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
        NodeBcast = 41 => None;
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

/// A broadcast to every member of nodegroup `coll`, forwarded down the tree over
/// nodes rooted at `root`'s node (`root` is that node's first PE).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct NodeBcast {
    pub(crate) coll: CollectionId,
    pub(crate) root: Pe,
    #[serde(with = "payload_slot")]
    pub(crate) payload: Payload,
}

impl Body for NodeBcast {
    payload_in!(payload);
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)
    }
    fn body_bytes(&self) -> u64 {
        12 + self.payload.wire_len()
    }
}
