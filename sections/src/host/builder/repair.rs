//! The repairs part of the builder: a rebuild after failure, with the rendezvous of
//! the dead rank's neighbours, the notice over the patched tree, and the start.

use super::create::Launch;
use super::*;

/// Messages of repairs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RepairMsg {
    /// The runtime reports that a PE failed (sim layer).
    Failed(Pe),
    /// A neighbour of a dead rank arrives at the rendezvous of the repair.
    Hello {
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The neighbour.
        party: Party,
        /// How many neighbours will come.
        expect: u32,
    },
    /// The rendezvous introduces the dead rank's neighbours to each other.
    Links {
        /// The rebuild (its new section's name).
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// Every neighbour, sorted.
        parties: Vec<Party>,
    },
    /// Which rank died, spread over the patched tree.
    Notice {
        /// The rebuild.
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The PE it came from.
        from: Pe,
    },
}

/// A neighbour of a dead rank in a repair, ordered by rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Party {
    /// Its rank in the section.
    pub rank: u32,
    /// Its PE.
    pub pe: Pe,
}

/// The repairs waiting here, the rendezvous, for the dead rank's neighbours.
#[derive(Default)]
pub(super) struct Repairs {
    /// Removed when all of them have come, or when this PE frees the section. The
    /// rendezvous may be no member, so an entry whose neighbours never all come (some
    /// freed the section before they heard of the failure) stays: at most one per
    /// section alive at a failure and failed PE, and failures (a sim-layer event) are
    /// at most the PEs.
    meetings: HashMap<(SectionId, u32), Vec<Party>>,
}

impl Repairs {
    /// Forget the repairs of section `id`, freed here.
    pub(super) fn forget(&mut self, id: SectionId) {
        self.meetings.retain(|(sid, _), _| *sid != id);
    }

    /// How many repairs wait.
    pub(super) fn len(&self) -> usize {
        self.meetings.len()
    }
}

impl Builder {
    /// Handle a repair message.
    pub(super) fn on_repair(&mut self, ctx: &mut Ctx, msg: RepairMsg) -> Result<(), HostError> {
        match msg {
            RepairMsg::Failed(pe) => self.on_failed(ctx, pe),
            RepairMsg::Hello {
                sid,
                dead,
                party,
                expect,
            } => self.on_hello(ctx, sid, dead, party, expect),
            RepairMsg::Links {
                token,
                sid,
                dead,
                parties,
            } => self.on_links(ctx, token, sid, dead, parties),
            RepairMsg::Notice {
                token,
                sid,
                dead,
                from,
            } => self.on_notice(ctx, token, sid, dead, from),
        }
    }

    /// A PE failed: for every section it was a tree neighbour of this member in,
    /// go to the rendezvous of the repair.
    fn on_failed(&mut self, ctx: &mut Ctx, dead_pe: Pe) -> Result<(), HostError> {
        self.failed.insert(dead_pe);
        self.abort_runs(ctx, dead_pe);
        let mut ids: Vec<SectionId> = self.kept.sections.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let view = &self.kept.sections[&id];
            let Some((_, dead)) = rebuild::role(view, dead_pe) else {
                continue;
            };
            let expect = rebuild::parties(dead, view.size, view.k);
            let Some(at) = rebuild::rendezvous(id, dead, self.npes, &self.failed) else {
                continue;
            };
            let party = Party {
                rank: view.rank,
                pe: self.me,
            };
            let hello = RepairMsg::Hello {
                sid: id,
                dead,
                party,
                expect,
            };
            self.send(ctx, at, hello);
        }
        Ok(())
    }

    /// At the rendezvous: once every neighbour of the dead rank is here, name the
    /// new section and introduce them to each other.
    fn on_hello(
        &mut self,
        ctx: &mut Ctx,
        sid: SectionId,
        dead: u32,
        party: Party,
        expect: u32,
    ) -> Result<(), HostError> {
        if self.drop_freed(sid) {
            return Ok(());
        }
        let meetings = &mut self.repairs.meetings;
        let met = meetings.entry((sid, dead)).or_default();
        met.push(party);
        if met.len() < expect as usize {
            return Ok(());
        }
        let mut parties = meetings.remove(&(sid, dead)).unwrap_or_default();
        parties.sort_unstable();
        let token = SectionId::token(self.me, self.counter);
        self.counter += 1;
        for &Party { pe, .. } in &parties {
            let links = RepairMsg::Links {
                token,
                sid,
                dead,
                parties: parties.clone(),
            };
            self.send(ctx, pe, links);
        }
        Ok(())
    }

    /// A neighbour of the dead rank learns the others, patches its links and starts.
    fn on_links(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        sid: SectionId,
        dead: u32,
        parties: Vec<Party>,
    ) -> Result<(), HostError> {
        if self.drop_freed(sid) {
            return Ok(());
        }
        let old = self.view(sid)?;
        // Its own hello and this introduction are the rebuild's first messages.
        let party = Party {
            rank: old.rank,
            pe: self.me,
        };
        let hello = RepairMsg::Hello {
            sid,
            dead,
            party,
            expect: parties.len() as u32,
        };
        let links = RepairMsg::Links {
            token,
            sid,
            dead,
            parties: parties.clone(),
        };
        let mut tally = Tally::joined(Some(0), 1, ctx.now());
        tally.message(encoded_len(&hello));
        tally.message(encoded_len(&links));
        let k = old.k;
        let others = (parties.iter())
            .filter(|p| p.rank != old.rank)
            .map(|p| (p.rank, p.pe));
        let (mut adopted, mut across) = (Vec::new(), None);
        if kary::parent(old.rank, k) != Some(dead) {
            adopted = others.collect();
        } else if dead > 0 {
            let p = kary::parent(dead, k);
            across = parties.iter().find(|q| Some(q.rank) == p).map(|q| q.pe);
        } else if old.rank == 1 {
            adopted = others.collect();
        } else {
            across = parties.iter().find(|q| q.rank == 1).map(|q| q.pe);
        }
        let patched = Patched {
            old,
            dead,
            adopted,
            across,
        };
        self.start_rebuild(ctx, token, patched, None, tally)
    }

    /// Any other survivor hears which rank died.
    fn on_notice(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        sid: SectionId,
        dead: u32,
        from: Pe,
    ) -> Result<(), HostError> {
        if self.drop_freed(sid) {
            return Ok(());
        }
        let patched = Patched {
            old: self.view(sid)?,
            dead,
            adopted: Vec::new(),
            across: None,
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        self.start_rebuild(ctx, token, patched, Some(from), tally)
    }

    /// Spread the notice over the old tree (the dead PE aside), then run.
    fn start_rebuild(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        patched: Patched,
        from: Option<Pe>,
        mut tally: Tally,
    ) -> Result<(), HostError> {
        let sid = patched.old.id;
        let dead_pe = |pe: &Pe| self.failed.contains(pe);
        let next: Vec<Pe> = (patched.old.parent.iter().chain(&patched.old.children))
            .copied()
            .filter(|pe| Some(*pe) != from && !dead_pe(pe))
            .collect();
        for pe in next {
            let notice = RepairMsg::Notice {
                token,
                sid,
                dead: patched.dead,
                from: self.me,
            };
            tally.message(self.send_counted(ctx, pe, notice));
        }
        let meta = (self.kept.meta.get(&sid))
            .cloned()
            .ok_or(HostError::UnknownParent {
                pe: self.me,
                id: sid,
            })?;
        let launch = Launch {
            token,
            meta,
            up: patched.up(),
            down: patched.down(),
            size: patched.size(),
            k: patched.old.k,
            way: Way::Patched(patched),
        };
        self.launch(ctx, launch, tally)
    }
}
