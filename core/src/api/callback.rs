//! Typed constructors of callbacks, checked against the target chare's entries.

use crate::api::chare::Chare;
use crate::api::proxy::{ArrayProxy, ChareProxy, GroupProxy};
use crate::api::registry::Entry;
use crate::base::ids::Pe;
use crate::msg::array::{ArrayIndex, ElemAddr};
use crate::msg::callback::Callback;
use crate::msg::reduction::Reducible;

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

    /// For a callback to a group (`group_all` or `group_member`), the same entry of
    /// the group's member on `pe`; any other callback as it is.
    pub fn with_pe(&self, pe: Pe) -> Self {
        match self {
            Callback::GroupAll { coll, entry } | Callback::GroupMember { coll, entry, .. } => {
                Callback::GroupMember {
                    coll: *coll,
                    pe,
                    entry: *entry,
                }
            }
            other => other.clone(),
        }
    }

    /// For a callback to one array element (`array_element`), the same entry of the
    /// element at `index` (of the array's index type); any other callback as it is.
    pub fn with_element<I: ArrayIndex>(&self, index: &I) -> Self {
        match self {
            Callback::ArrayElement { coll, entry, .. } => Callback::ArrayElement {
                coll: *coll,
                addr: ElemAddr::of(index),
                entry: *entry,
            },
            other => other.clone(),
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
