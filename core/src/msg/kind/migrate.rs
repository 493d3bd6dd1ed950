//! Migration of array elements and the news of where they went (handled in
//! `engine/migration.rs`).

use super::payload_slot;
use super::{family, payload_in, Body};
use crate::base::ids::{CollectionId, Pe};
use crate::msg::array::ElemAddr;
use crate::msg::payload::Payload;
use serde::{Deserialize, Serialize};

family! {
    /// Migration and location.
    MoveMsg {
        Migrate = 15 => Some("chorus::migrate");
        Moved = 16 => Some("chorus::location");
        Destroy = 29 => Some("chorus::destroy");
        Deleted = 30 => Some("chorus::destroy");
    }
}

/// An array element moving here: its state, its move count and reduction progress.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Migrate {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) home: Pe,
    pub(crate) moves: u32,
    pub(crate) contributed: u64,
    /// Its `at_sync` calls so far, and whether it moves in a balancing step (so it
    /// waits for the step's resume where it arrives).
    pub(crate) syncs: u32,
    pub(crate) balancing: bool,
    /// Boxed: the largest runtime message sets the size of every envelope (see
    /// `engine::per_pe_sizes`), and a move is rare beside the messages it would widen.
    #[serde(with = "payload_slot")]
    pub(crate) state: Box<Payload>,
}

/// News that an element reached PE `pe` on its `moves`-th move.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Moved {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) home: Pe,
    pub(crate) pe: Pe,
    pub(crate) moves: u32,
}

/// A request to delete an element (`ArrayProxy::destroy`), routed as its messages are:
/// `moves` is the news it followed (0: sent by the map).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Destroy {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) moves: u32,
}

/// An element away from its home was deleted after `moves` moves and `contributed`
/// reductions: its home stands in for it in later reductions.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Deleted {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) moves: u32,
    pub(crate) contributed: u64,
}

impl Body for Destroy {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        16 + self.addr.key.len() as u64
    }
}

impl Body for Deleted {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        24 + self.addr.key.len() as u64
    }
}

impl Body for Migrate {
    payload_in!(state);
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        41 + self.addr.key.len() as u64 + self.state.wire_len()
    }
}

impl Body for Moved {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        32 + self.addr.key.len() as u64
    }
}
