//! The builder's side of a rebuild after failure: the rendezvous of the dead
//! rank's neighbours, the notice over the patched tree, and the start.

use super::*;

impl Builder {
    /// A PE failed: for every section it was a tree neighbour of this member in,
    /// go to the rendezvous of the repair.
    pub(super) fn on_failed(&mut self, ctx: &mut Ctx, dead_pe: Pe) -> Result<(), HostError> {
        self.failed.insert(dead_pe);
        self.abort_runs(ctx, dead_pe);
        let mut ids: Vec<SectionId> = self.sections.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let view = &self.sections[&id];
            let Some((_, dead)) = rebuild::role(view, dead_pe) else {
                continue;
            };
            let expect = rebuild::parties(dead, view.size, view.k);
            let Some(at) = rebuild::rendezvous(id, dead, self.npes, &self.failed) else {
                continue;
            };
            let hello = BuilderMsg::Hello {
                sid: id,
                dead,
                rank: view.rank,
                pe: self.me,
                expect,
            };
            self.send(ctx, at, hello);
        }
        Ok(())
    }

    /// At the rendezvous: once every neighbour of the dead rank is here, name the
    /// new section and introduce them to each other.
    pub(super) fn on_hello(
        &mut self,
        ctx: &mut Ctx,
        sid: SectionId,
        dead: u32,
        party: (u32, Pe),
        expect: u32,
    ) -> Result<(), HostError> {
        if self.drop_freed(sid) {
            return Ok(());
        }
        let met = self.meetings.entry((sid, dead)).or_default();
        met.push(party);
        if met.len() < expect as usize {
            return Ok(());
        }
        let mut parties = self.meetings.remove(&(sid, dead)).unwrap_or_default();
        parties.sort_unstable();
        let token = SectionId::token(self.me, self.counter);
        self.counter += 1;
        for &(_, pe) in &parties {
            let links = BuilderMsg::Links {
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
    pub(super) fn on_links(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        sid: SectionId,
        dead: u32,
        parties: Vec<(u32, Pe)>,
    ) -> Result<(), HostError> {
        if self.drop_freed(sid) {
            return Ok(());
        }
        let old = self.view(sid)?;
        // Its own hello and this introduction are the rebuild's first messages.
        let hello = BuilderMsg::Hello {
            sid,
            dead,
            rank: old.rank,
            pe: self.me,
            expect: parties.len() as u32,
        };
        let links = BuilderMsg::Links {
            token,
            sid,
            dead,
            parties: parties.clone(),
        };
        let mut tally = Tally::joined(Some(0), 1, ctx.now());
        tally.message(encoded_len(&hello));
        tally.message(encoded_len(&links));
        let k = old.k;
        let others = parties.iter().copied().filter(|p| p.0 != old.rank);
        let (mut adopted, mut across) = (Vec::new(), None);
        if kary::parent(old.rank, k) != Some(dead) {
            adopted = others.collect();
        } else if dead > 0 {
            let p = kary::parent(dead, k);
            across = parties.iter().find(|q| Some(q.0) == p).map(|q| q.1);
        } else if old.rank == 1 {
            adopted = others.collect();
        } else {
            across = parties.iter().find(|q| q.0 == 1).map(|q| q.1);
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
    pub(super) fn on_notice(
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
    pub(super) fn start_rebuild(
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
            let notice = BuilderMsg::Notice {
                token,
                sid,
                dead: patched.dead,
                from: self.me,
            };
            tally.message(self.send_counted(ctx, pe, notice));
        }
        let meta = self
            .meta
            .get(&sid)
            .cloned()
            .ok_or(HostError::UnknownParent {
                pe: self.me,
                id: sid,
            })?;
        let (up, down) = (patched.up(), patched.down());
        let size = (patched.size(), patched.old.k);
        self.launch(
            ctx,
            token,
            meta,
            Way::Patched(patched),
            (up, down),
            size,
            tally,
        )
    }
}
