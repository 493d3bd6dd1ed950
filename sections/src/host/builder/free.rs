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
use crate::collectives::host::HostMsg;
use crate::free::{BuilderStats, FreedIds};

/// Messages of frees, and the question for the maps' sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum FreeMsg {
    /// From the application to the builder on its own PE: free this member's view of
    /// section `id`, then its collectives host's; `on_freed` gets the id.
    Free {
        /// The section.
        id: SectionId,
        /// The collectives group, which frees the section's collectives next.
        collectives: GroupProxy<CollectivesHost>,
        /// Where the freed id goes once both are done.
        on_freed: Callback,
    },
    /// From the application to the builder on its own PE: send the sizes of this
    /// PE's builder and collectives host maps to `on_stats`.
    Stats {
        /// The collectives group, which adds its sizes.
        collectives: GroupProxy<CollectivesHost>,
        /// Where the [`crate::free::SectionsStats`] goes.
        on_stats: Callback,
    },
}

/// A free waiting for this PE's split calls on the section to start.
struct Freeing {
    collectives: GroupProxy<CollectivesHost>,
    on_freed: Callback,
}

/// The frees waiting here and the sections freed.
#[derive(Default)]
pub(super) struct Frees {
    /// Frees waiting for this PE's split calls on the section to start: at most one
    /// per kept section.
    freeing: HashMap<SectionId, Box<Freeing>>,
    /// The last sections freed here, to tell late calls and messages for them apart:
    /// at most [`crate::free::FREED_MEMORY`].
    pub(super) freed: FreedIds,
}

impl Builder {
    /// Handle a free message.
    pub(super) fn on_free_msg(&mut self, ctx: &mut Ctx, msg: FreeMsg) -> Result<(), HostError> {
        match msg {
            FreeMsg::Free {
                id,
                collectives,
                on_freed,
            } => self.on_free(ctx, id, collectives, on_freed),
            FreeMsg::Stats {
                collectives,
                on_stats,
            } => {
                let builder = self.stats();
                let msg = HostMsg::Stats { builder, on_stats };
                CollectivesHost::send_here(&collectives, ctx, msg);
                Ok(())
            }
        }
    }

    /// The error for a section this PE does not keep: freed here, or never stored.
    pub(super) fn missing(&self, id: SectionId) -> HostError {
        if self.frees.freed.contains(&id) || self.frees.freeing.contains_key(&id) {
            HostError::Freed { pe: self.me, id }
        } else {
            HostError::UnknownParent { pe: self.me, id }
        }
    }

    /// This member frees section `id`: drop the builder's state of it once this
    /// PE's calls of splits of it have started, then free it in the collectives host.
    fn on_free(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        collectives: GroupProxy<CollectivesHost>,
        on_freed: Callback,
    ) -> Result<(), HostError> {
        if self.frees.freeing.contains_key(&id) || self.frees.freed.contains(&id) {
            return Err(HostError::Freed { pe: self.me, id });
        }
        if !self.kept.sections.contains_key(&id) {
            return Err(HostError::UnknownSection { pe: self.me, id });
        }
        // Splits others started and this PE never called can never finish: report
        // them, and free all the same (the free itself is sound).
        let splits = self.splits.drop_uncalled(id);
        let freeing = Freeing {
            collectives,
            on_freed,
        };
        self.frees.freeing.insert(id, Box::new(freeing));
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
        if !self.frees.freeing.contains_key(&id) || self.splits.calling(id) {
            return;
        }
        if let Some(f) = self.frees.freeing.remove(&id) {
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
        self.kept.forget(id);
        self.creations.forget(id);
        self.splits.forget(id);
        self.repairs.forget(id);
        self.merges.forget(id);
        self.frees.freed.insert(id);
        let free = HostMsg::Free {
            section: id,
            on_freed,
        };
        CollectivesHost::send_here(&collectives, ctx, free);
    }

    /// A repair message for section `sid`, freed here: drop it, count it.
    pub(super) fn drop_freed(&mut self, sid: SectionId) -> bool {
        let freed = self.frees.freed.contains(&sid);
        if freed {
            self.dropped += 1;
        }
        freed
    }

    /// The sizes of this PE's maps.
    pub fn stats(&self) -> BuilderStats {
        let (c, s) = (&self.creations, &self.splits);
        BuilderStats {
            sections: self.kept.sections.len(),
            meta: self.kept.meta.len(),
            meetings: self.repairs.len(),
            runs: c.runs.len(),
            early: c.early.len(),
            orphans: c.orphans.len(),
            pending_merges: self.merges.len(),
            waiting: c.waiting.len(),
            splits_called: s.called.len(),
            calls: s.calls.len(),
            held_splits: s.held.len(),
            rankings: s.rankings.len(),
            early_ranks: s.early_ranks.len(),
            freeing: self.frees.freeing.len(),
            freed_remembered: self.frees.freed.len(),
            dropped: self.dropped,
        }
    }
}
