//! Callbacks: where a reduction result or a quiescence notice is delivered.
//!
//! A callback names a target and a registered entry — never a closure — so it can be
//! carried in messages between processes. The typed constructors
//! (`Callback::chare` and its siblings) are in `api::callback`.

use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::array::ElemAddr;
use serde::{Deserialize, Serialize};

/// A destination for a value produced by the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Callback {
    /// Drop the value.
    Ignore,
    /// End the job.
    Exit,
    /// Send to a singleton chare's entry.
    Chare { id: ChareId, entry: u32 },
    /// Send to one group member's entry.
    GroupMember {
        coll: CollectionId,
        pe: Pe,
        entry: u32,
    },
    /// Broadcast to every group member's entry.
    GroupAll { coll: CollectionId, entry: u32 },
    /// Send to one array element's entry.
    ArrayElement {
        coll: CollectionId,
        addr: ElemAddr,
        entry: u32,
    },
    /// Broadcast to every array element's entry.
    ArrayAll { coll: CollectionId, entry: u32 },
}
