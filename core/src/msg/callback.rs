//! Callbacks: where a reduction result or a quiescence notice is delivered.
//!
//! A callback names a target and a registered entry — never a closure — so it can be
//! carried in messages between processes. The typed constructors
//! (`Callback::chare` and its siblings) are in `api::callback`.

use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::array::ElemAddr;
use crate::msg::section_spec::SectionSpec;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A destination for a value produced by the runtime.
///
/// Build one with the typed constructors, which check the entry against the target
/// chare's (`Callback::chare`, `group_member`, `group_all`, `node_group_member`,
/// `node_group_all`, `array_element`, `array_all`, `section`), or name `Callback::Ignore` or `Callback::Exit`. The variants that
/// carry a target cannot be built from their raw fields outside chorus-core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Callback {
    /// Drop the value.
    Ignore,
    /// End the job.
    Exit,
    /// Send to a singleton chare's entry.
    #[non_exhaustive]
    Chare {
        /// The chare.
        id: ChareId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Send to one group member's entry.
    #[non_exhaustive]
    GroupMember {
        /// The group.
        coll: CollectionId,
        /// The PE of the member.
        pe: Pe,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to every group member's entry.
    #[non_exhaustive]
    GroupAll {
        /// The group.
        coll: CollectionId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Send to one array element's entry.
    #[non_exhaustive]
    ArrayElement {
        /// The array.
        coll: CollectionId,
        /// The element's address.
        addr: ElemAddr,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to every array element's entry.
    #[non_exhaustive]
    ArrayAll {
        /// The array.
        coll: CollectionId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Send to one nodegroup member's entry, on its node's first PE.
    #[non_exhaustive]
    NodeGroupMember {
        /// The nodegroup.
        coll: CollectionId,
        /// The member's node.
        node: u32,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to every nodegroup member's entry, once per node.
    #[non_exhaustive]
    NodeGroupAll {
        /// The nodegroup.
        coll: CollectionId,
        /// The id of the registered entry.
        entry: u32,
    },
    /// Broadcast to the entry of every member of an array section.
    #[non_exhaustive]
    Section {
        /// The section.
        section: SectionRef,
        /// The id of the registered entry.
        entry: u32,
    },
}

/// The section a `Callback::Section` broadcasts to (its members and tree, as the
/// section's handle holds them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionRef(pub(crate) Arc<SectionSpec>);
