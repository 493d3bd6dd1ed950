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
    Chare {
        /// The chare.
        id: ChareId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Send to one group member's entry.
    GroupMember {
        /// The group.
        coll: CollectionId,
        /// The PE of the member.
        pe: Pe,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to every group member's entry.
    GroupAll {
        /// The group.
        coll: CollectionId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Send to one array element's entry.
    ArrayElement {
        /// The array.
        coll: CollectionId,
        /// The element's address.
        addr: ElemAddr,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to every array element's entry.
    ArrayAll {
        /// The array.
        coll: CollectionId,
        /// The id of the registered entry.
        entry: u32,
    },
}
