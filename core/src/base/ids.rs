//! Identifiers of PEs, chares and collections.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A processing element: the index of one scheduler in the job.
pub type Pe = u32;

/// Identity of a group or chare array, unique in the job: the PE that created it and
/// that PE's running count of created collections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CollectionId {
    /// PE that created the collection.
    pub creator: Pe,
    /// Sequence number among the collections `creator` created.
    pub seq: u32,
}

impl fmt::Display for CollectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "collection {}.{}", self.creator, self.seq)
    }
}

/// Identity of a singleton chare: where it lives and who created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChareId {
    /// PE the chare lives on.
    pub pe: Pe,
    /// PE that created it.
    pub creator: Pe,
    /// Count of chares `creator` had created on `pe` before this one; a number not
    /// seen yet on `pe` means the creation may still be in flight (creations can
    /// overtake each other).
    pub seq: u32,
}

impl fmt::Display for ChareId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chare {}@{}.{}", self.pe, self.creator, self.seq)
    }
}

pub use super::index_key::IndexKey;
