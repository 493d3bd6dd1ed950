//! Where a user message goes: a chare, a group member, an array element.

use crate::base::ids::{ChareId, CollectionId};
use crate::msg::array::ElemAddr;
use serde::{Deserialize, Serialize};

/// What a user message is addressed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Dest {
    Chare(ChareId),
    Group(CollectionId),
    Array(CollectionId),
    /// An element, wherever the array's map puts it.
    Element(CollectionId, ElemAddr),
    /// An element that has migrated, sent on news that it reached the receiving PE on
    /// its n-th move (see `location.rs`).
    ElementAt(CollectionId, ElemAddr, u32),
}

/// A destination as a send names it: compared with a queued envelope's on every send,
/// and made into a `Dest` only when the message needs an envelope of its own. Chares
/// and groups, the common streams, name theirs by id, without building, comparing
/// and dropping a whole `Dest` per message.
pub(crate) trait DestKey {
    /// True if `dest` is this destination.
    fn is(&self, dest: &Dest) -> bool;
    /// The destination, for an envelope.
    fn into_dest(self) -> Dest;
}

impl DestKey for ChareId {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Chare(id) if id == self)
    }
    fn into_dest(self) -> Dest {
        Dest::Chare(self)
    }
}

/// The member of a group on the PE a message is sent to.
pub(crate) struct GroupMember(pub(crate) CollectionId);

impl DestKey for GroupMember {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Group(c) if *c == self.0)
    }
    fn into_dest(self) -> Dest {
        Dest::Group(self.0)
    }
}

impl DestKey for Dest {
    #[inline]
    fn is(&self, dest: &Dest) -> bool {
        self == dest
    }
    fn into_dest(self) -> Dest {
        self
    }
}

impl Dest {
    /// Bytes it takes on a wire, for traces.
    pub(crate) fn wire_bytes(&self) -> u64 {
        match self {
            Dest::Chare(_) => 12,
            Dest::Group(_) | Dest::Array(_) => 8,
            Dest::Element(_, addr) => 16 + addr.key.len() as u64,
            Dest::ElementAt(_, addr, _) => 20 + addr.key.len() as u64,
        }
    }

    /// The collection it names, if any.
    pub(crate) fn coll(&self) -> Option<CollectionId> {
        match self {
            Dest::Chare(_) => None,
            Dest::Group(c) | Dest::Array(c) | Dest::Element(c, _) | Dest::ElementAt(c, _, _) => {
                Some(*c)
            }
        }
    }
}
