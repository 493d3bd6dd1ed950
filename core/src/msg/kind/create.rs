//! Creation of chares, groups, arrays and inserted elements, and the census that
//! counts an array's elements for its reductions (handled in `engine/create.rs`).

use super::payload_slot;
use super::{check_root, family, payload_in, Body};
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::array::{ArrayMap, ElemAddr, Shape};
use crate::msg::payload::Payload;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

family! {
    /// Creations and the census.
    CreateMsg {
        CreateChare = 2 => None;
        CreateGroup = 3 => None;
        CreateArray = 4 => None;
        Insert = 5 => None;
        DoneInserting = 6 => Some("chorus::census");
        Census = 7 => Some("chorus::census");
        Emptied = 31 => Some("chorus::census");
        CreateNodeGroup = 40 => None;
    }
}

/// Create singleton chare `id` of registered type `ty` here.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateChare {
    pub(crate) id: ChareId,
    pub(crate) ty: u32,
    #[serde(with = "payload_slot")]
    pub(crate) init: Payload,
}

/// Create the member of group `coll` here, and pass the creation down the tree.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateGroup {
    pub(crate) coll: CollectionId,
    pub(crate) ty: u32,
    pub(crate) root: Pe,
    #[serde(with = "payload_slot")]
    pub(crate) init: Payload,
}

/// Create the member of nodegroup `coll` here, on its node's first PE, and pass the
/// creation down the tree over nodes rooted at `root`'s node (`root` is the first PE
/// of the tree's root node).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct CreateNodeGroup(pub(crate) CreateGroup);

/// Create the elements of array `coll` the map places here, and pass it down the tree.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateArray {
    pub(crate) coll: CollectionId,
    pub(crate) ty: u32,
    pub(crate) root: Pe,
    #[serde(with = "payload_slot")]
    pub(crate) init: Payload,
    pub(crate) shape: Arc<Shape>,
    pub(crate) map: ArrayMap,
}

/// Insert element `addr` into array `coll`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Insert {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    #[serde(with = "payload_slot")]
    pub(crate) init: Payload,
    /// Times the insert was forwarded towards the element's home.
    pub(crate) hops: u8,
    /// The first balancing step the element takes part in as the inserting PE saw
    /// it (one past the last step it began); its home takes the later of this and
    /// its own, so a newcomer never joins a step the inserting PE had begun.
    pub(crate) round: u32,
    /// The PE that inserted it, whose `done_inserting` covers it.
    pub(crate) origin: Pe,
}

/// Array `coll` has all its inserts: count its elements again, down the tree
/// rooted at `root`, each home once the inserts `root` sent it have arrived.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DoneInserting {
    pub(crate) coll: CollectionId,
    pub(crate) root: Pe,
    /// How many of `root`'s inserts went to each PE below the receiver (empty in
    /// the root's own, which it fills in).
    pub(crate) expect: Vec<(Pe, u32)>,
}

/// A child's count of array elements in its subtree.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Census {
    pub(crate) coll: CollectionId,
    pub(crate) epoch: u32,
    pub(crate) count: u64,
}

/// Every element below the sender was deleted (census epoch `epoch`): its parent
/// stops waiting for its subtree from reduction `from` on.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Emptied {
    pub(crate) coll: CollectionId,
    pub(crate) epoch: u32,
    pub(crate) from: u64,
}

impl Body for Emptied {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
}

impl Body for CreateChare {
    payload_in!(init);
    fn body_bytes(&self) -> u64 {
        16 + self.init.wire_len()
    }
}

impl Body for CreateGroup {
    payload_in!(init);
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)
    }
    fn body_bytes(&self) -> u64 {
        16 + self.init.wire_len()
    }
}

impl Body for CreateNodeGroup {
    fn payload(&self) -> Option<&Payload> {
        self.0.payload()
    }
    fn payload_mut(&mut self) -> Option<&mut Payload> {
        self.0.payload_mut()
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        self.0.check(npes)
    }
    fn body_bytes(&self) -> u64 {
        self.0.body_bytes()
    }
}

impl Body for CreateArray {
    payload_in!(init);
    fn check(&self, npes: usize) -> Result<(), String> {
        self.shape.check().map_err(|e| e.to_string())?;
        check_root(self.root, npes)
    }
    fn body_bytes(&self) -> u64 {
        24 + self.init.wire_len() + bincode::serialized_size(&*self.shape).unwrap_or(0)
    }
}

impl Body for Insert {
    payload_in!(init);
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        24 + self.addr.key.len() as u64 + self.init.wire_len()
    }
}

impl Body for DoneInserting {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)?;
        match self.expect.iter().find(|(pe, _)| *pe as usize >= npes) {
            Some((pe, _)) => Err(format!("expected inserts at PE {pe} of {npes}")),
            None => Ok(()),
        }
    }
    fn body_bytes(&self) -> u64 {
        16 + 8 * self.expect.len() as u64
    }
}

impl Body for Census {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
}
