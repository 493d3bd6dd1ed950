//! Freeing a section on one member (`MPI_Comm_free`): the builder's part, then the
//! collectives host's; and the sizes of the builder's maps.
//!
//! A member frees its own view once it has made every split of the section it will
//! make (the same splits as the other members, in the same order). A split it called
//! whose start has not come yet is pending work: the free waits for it here, as it
//! waits in the collectives host for the member's running collectives. A start of a
//! split the member never called is an error ([`HostError::UncalledSplits`]): no call
//! can come after the free, so it could never finish. The section's id is then
//! remembered ([`crate::free::FreedIds`]), so a later free, split or creation from it
//! is a [`HostError::Freed`], and repair messages for it are dropped and counted.

use super::*;
use crate::free::BuilderStats;

/// A free waiting for this PE's split calls on the section to start.
pub(super) struct Freeing {
    collectives: GroupProxy<CollectivesHost>,
    on_freed: Callback,
}

impl Builder {
    /// The error for a section this PE does not keep: freed here, or never stored.
    pub(super) fn missing(&self, id: SectionId) -> HostError {
        if self.freed.contains(&id) || self.freeing.contains_key(&id) {
            HostError::Freed { pe: self.me, id }
        } else {
            HostError::UnknownParent { pe: self.me, id }
        }
    }

    /// This member frees section `id`: drop the builder's state of it once this
    /// PE's calls of splits of it have started, then free it in the collectives host.
    pub(super) fn on_free(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        collectives: GroupProxy<CollectivesHost>,
        on_freed: Callback,
    ) -> Result<(), HostError> {
        if self.freeing.contains_key(&id) || self.freed.contains(&id) {
            return Err(HostError::Freed { pe: self.me, id });
        }
        if !self.sections.contains_key(&id) {
            return Err(HostError::UnknownSection { pe: self.me, id });
        }
        // Splits others started and this PE never called can never finish: report
        // them, and free all the same (the free itself is sound).
        let parent = Parent::Section(id);
        let before = self.held_splits.len();
        self.held_splits.retain(|(p, _), _| *p != parent);
        let splits = before - self.held_splits.len();
        let freeing = Freeing {
            collectives,
            on_freed,
        };
        self.freeing.insert(id, Box::new(freeing));
        self.free_if_ready(ctx, id);
        match splits {
            0 => Ok(()),
            splits => Err(HostError::UncalledSplits {
                pe: self.me,
                id,
                splits,
            }),
        }
    }

    /// Finish the free of `id`, if one waits and no split call of it is pending.
    pub(super) fn free_if_ready(&mut self, ctx: &mut Ctx, id: SectionId) {
        let parent = Parent::Section(id);
        if !self.freeing.contains_key(&id) || self.calls.keys().any(|(p, _)| *p == parent) {
            return;
        }
        if let Some(f) = self.freeing.remove(&id) {
            self.forget(ctx, id, f.collectives, f.on_freed);
        }
    }

    /// Remove every trace of section `id` here, remember it as freed, and free it in
    /// the collectives host, which sends `on_freed` once its collectives are done.
    fn forget(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        collectives: GroupProxy<CollectivesHost>,
        on_freed: Callback,
    ) {
        let parent = Parent::Section(id);
        self.sections.remove(&id);
        self.meta.remove(&id);
        self.splits_called.remove(&parent);
        self.calls.retain(|(p, _), _| *p != parent);
        self.held_splits.retain(|(p, _), _| *p != parent);
        self.waiting.remove(&id);
        self.rankings.remove(&id);
        self.early_ranks.remove(&id);
        self.meetings.retain(|(sid, _), _| *sid != id);
        self.pending_merges.retain(|_, (_, a)| a.id != id);
        self.freed.insert(id);
        CollectivesHost::send_free(&collectives, ctx, id, on_freed);
    }

    /// A repair message for section `sid`, freed here: drop it, count it.
    pub(super) fn drop_freed(&mut self, sid: SectionId) -> bool {
        let freed = self.freed.contains(&sid);
        if freed {
            self.dropped += 1;
        }
        freed
    }

    /// The sizes of this PE's maps.
    pub fn stats(&self) -> BuilderStats {
        BuilderStats {
            sections: self.sections.len(),
            meta: self.meta.len(),
            meetings: self.meetings.len(),
            runs: self.runs.len(),
            early: self.early.len(),
            orphans: self.orphans.len(),
            pending_merges: self.pending_merges.len(),
            waiting: self.waiting.len(),
            splits_called: self.splits_called.len(),
            calls: self.calls.len(),
            held_splits: self.held_splits.len(),
            rankings: self.rankings.len(),
            early_ranks: self.early_ranks.len(),
            freeing: self.freeing.len(),
            freed_remembered: self.freed.len(),
            dropped: self.dropped,
        }
    }
}
