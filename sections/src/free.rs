//! Freeing sections: the bounded memory of freed ids that the builder and the
//! collectives host each keep, and the sizes of their maps, which tests read to check
//! that creating and freeing sections leaves nothing behind.
//!
//! A freed section's id is remembered so that a late call or message for it is told
//! from one for a section not made on this PE yet (which must wait): a collective
//! started on it is an error, a message for it is dropped and counted. Only the last
//! [`FREED_MEMORY`] ids are kept: ids of built sections never recur (a creator's
//! counter names each), so forgetting an old one only loses that diagnosis.

use crate::section::SectionId;
use chorus_core::{RedData, Reducible};
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};

/// How many freed section ids each builder and collectives host member remembers.
pub const FREED_MEMORY: usize = 1024;

/// The last [`FREED_MEMORY`] section ids freed on one PE, oldest first.
#[derive(Debug, Default)]
pub(crate) struct FreedIds {
    order: VecDeque<SectionId>,
    set: HashSet<SectionId>,
}

impl FreedIds {
    /// Remember `id`, forgetting the oldest id once [`FREED_MEMORY`] are held.
    pub(crate) fn insert(&mut self, id: SectionId) {
        if !self.set.insert(id) {
            return;
        }
        self.order.push_back(id);
        if self.order.len() > FREED_MEMORY {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    /// True if `id` was freed here (among the last [`FREED_MEMORY`]).
    pub(crate) fn contains(&self, id: &SectionId) -> bool {
        self.set.contains(id)
    }

    /// How many ids are remembered.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

/// Sizes of one PE's section builder maps (entries, not bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuilderStats {
    /// Sections this PE is a member of and keeps.
    pub sections: usize,
    /// Their callbacks, kept for rebuilds.
    pub meta: usize,
    /// Repairs waiting at this PE (the rendezvous) for the dead rank's neighbours.
    pub meetings: usize,
    /// Creations this PE takes part in.
    pub runs: usize,
    /// Creations with messages that came before their start.
    pub early: usize,
    /// Intermediaries serving creations that have not started here.
    pub orphans: usize,
    /// Merges this PE offered as A's root, until B accepts.
    pub pending_merges: usize,
    /// Parents with creation starts waiting for the parent to be stored here.
    pub waiting: usize,
    /// Parents this PE has split.
    pub splits_called: usize,
    /// This PE's split calls whose start has not come.
    pub calls: usize,
    /// Split starts this PE has not called yet.
    pub held_splits: usize,
    /// Sections being ranked by (key, PE) here.
    pub rankings: usize,
    /// Sections with subtree lists that came before their ranking started.
    pub early_ranks: usize,
    /// Frees waiting for this PE's split calls on the section to start.
    pub freeing: usize,
    /// Freed ids remembered (at most [`FREED_MEMORY`]).
    pub freed_remembered: usize,
    /// Messages dropped because their section was freed here.
    pub dropped: u64,
}

impl BuilderStats {
    /// Every map's (name, entries), in the order of the fields.
    pub fn maps(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("sections", self.sections),
            ("meta", self.meta),
            ("meetings", self.meetings),
            ("runs", self.runs),
            ("early", self.early),
            ("orphans", self.orphans),
            ("pending_merges", self.pending_merges),
            ("waiting", self.waiting),
            ("splits_called", self.splits_called),
            ("calls", self.calls),
            ("held_splits", self.held_splits),
            ("rankings", self.rankings),
            ("early_ranks", self.early_ranks),
            ("freeing", self.freeing),
        ]
    }
}

/// Sizes of one PE's collectives host maps (entries, not bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStats {
    /// Sections with a count of collectives started here.
    pub next_seq: usize,
    /// Collectives running here.
    pub running: usize,
    /// Collectives with messages that came before their local start.
    pub early: usize,
    /// Collectives that failed here, whose late messages are dropped.
    pub failed: usize,
    /// Collectives another member failed before this member started them.
    pub aborted: usize,
    /// Frees waiting for the section's running collectives here.
    pub freeing: usize,
    /// Freed ids remembered (at most [`FREED_MEMORY`]).
    pub freed_remembered: usize,
    /// Messages dropped because their section was freed here.
    pub dropped: u64,
}

impl HostStats {
    /// Every map's (name, entries), in the order of the fields.
    pub fn maps(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("next_seq", self.next_seq),
            ("running", self.running),
            ("early", self.early),
            ("failed", self.failed),
            ("aborted", self.aborted),
            ("freeing", self.freeing),
        ]
    }
}

/// One PE's builder and collectives host map sizes, as `Sections::stats` reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionsStats {
    /// The section builder's maps.
    pub builder: BuilderStats,
    /// The collectives host's maps.
    pub host: HostStats,
}

impl SectionsStats {
    /// Every map of both, named `builder.x` and `host.x`, with its entries.
    pub fn maps(&self) -> Vec<(String, usize)> {
        let b = self
            .builder
            .maps()
            .into_iter()
            .map(|(n, v)| (format!("builder.{n}"), v));
        let h = self
            .host
            .maps()
            .into_iter()
            .map(|(n, v)| (format!("host.{n}"), v));
        b.chain(h).collect()
    }

    /// The sum of every map's entries.
    pub fn total(&self) -> usize {
        self.maps().iter().map(|(_, v)| v).sum()
    }
}

/// Stats arrive at an entry taking `SectionsStats` (encoded, as a `Section`).
impl Reducible for SectionsStats {
    fn into_data(self) -> RedData {
        chorus_core::Encoded(self).into_data()
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        chorus_core::Encoded::<SectionsStats>::from_data(d).map(|e| e.0)
    }
}

/// A freed section's id arrives at an entry taking `SectionId`.
impl Reducible for SectionId {
    fn into_data(self) -> RedData {
        chorus_core::Encoded(self).into_data()
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        chorus_core::Encoded::<SectionId>::from_data(d).map(|e| e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_ids_forget_the_oldest_past_the_memory() {
        let mut f = FreedIds::default();
        let id = |n: u32| SectionId::created(0, n, 4);
        for n in 0..(FREED_MEMORY as u32 + 10) {
            f.insert(id(n));
            f.insert(id(n));
        }
        assert_eq!(f.len(), FREED_MEMORY);
        assert!(!f.contains(&id(9)));
        assert!(f.contains(&id(10)));
        assert!(f.contains(&id(FREED_MEMORY as u32 + 9)));
    }
}
