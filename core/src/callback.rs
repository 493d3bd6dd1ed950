//! Callbacks: where a reduction result or a quiescence notice is delivered.
//!
//! A callback names a target and a registered entry — never a closure — so it can be
//! carried in messages between processes.

use crate::array::{ArrayIndex, ElemAddr};
use crate::chare::Chare;
use crate::ids::{ChareId, CollectionId, Pe};
use crate::proxy::{ArrayProxy, ChareProxy, GroupProxy};
use crate::reduction::Reducible;
use crate::registry::Entry;
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

impl Callback {
    /// Deliver to `entry` of a singleton chare.
    pub fn chare<C: Chare, T: Reducible>(proxy: &ChareProxy<C>, entry: Entry<C, T>) -> Self {
        Callback::Chare {
            id: proxy.id,
            entry: entry.id,
        }
    }

    /// Deliver to `entry` of the group member on `pe`.
    pub fn group_member<C: Chare, T: Reducible>(
        proxy: &GroupProxy<C>,
        pe: Pe,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::GroupMember {
            coll: proxy.coll,
            pe,
            entry: entry.id,
        }
    }

    /// Broadcast to `entry` of every group member.
    pub fn group_all<C: Chare, T: Reducible>(proxy: &GroupProxy<C>, entry: Entry<C, T>) -> Self {
        Callback::GroupAll {
            coll: proxy.coll,
            entry: entry.id,
        }
    }

    /// Deliver to `entry` of one array element.
    pub fn array_element<C: Chare, I: ArrayIndex, T: Reducible>(
        proxy: &ArrayProxy<C, I>,
        index: &I,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::ArrayElement {
            coll: proxy.coll,
            addr: ElemAddr::of(index),
            entry: entry.id,
        }
    }

    /// Broadcast to `entry` of every array element.
    pub fn array_all<C: Chare, I: ArrayIndex, T: Reducible>(
        proxy: &ArrayProxy<C, I>,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::ArrayAll {
            coll: proxy.coll,
            entry: entry.id,
        }
    }
}
