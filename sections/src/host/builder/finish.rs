//! The end of a creation: member callbacks, then the two sums over the parent
//! tree (finish times and counts, then state peaks) and the report.

use super::*;

impl Builder {
    pub(super) fn check_finished(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let me = self.me;
        let now = ctx.now();
        let Some(run) = self.creations.runs.get_mut(&token) else {
            return Ok(());
        };
        if run.finished {
            return Ok(());
        }
        let mut placed = Vec::new();
        for p in run.parts.iter_mut().filter(|p| !p.finished) {
            if p.proto.finished() {
                p.finished = true;
                placed.extend(p.proto.placement().map(section_of));
            }
        }
        run.finished = run.parts.iter().all(|p| p.finished);
        if run.finished {
            run.tally.last_done = run.tally.last_done.max(now);
        }
        let cb = local_callback(&run.meta.on_member, me);
        let keep = run.keep;
        let meta = run.meta.clone();
        let then = run.then.clone();
        if let Some(key) = run.key {
            // A split by colour and key: members hear of their sections once ranked.
            for section in placed {
                let meta = keep.then(|| meta.clone());
                let to = (cb.clone(), then.clone());
                self.start_ranking(ctx, section, key, to, meta)?;
            }
            return self.try_up(ctx, token);
        }
        let stored: Vec<SectionId> = placed.iter().filter(|_| keep).map(|s| s.id).collect();
        for section in placed {
            if keep {
                self.kept.store(section.clone(), meta.clone());
            }
            ctx.send_to_callback(&cb, Encoded(section));
        }
        self.try_up(ctx, token)?;
        for id in stored {
            self.resume(ctx, id)?;
        }
        Ok(())
    }

    pub(super) fn try_up(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "done")?;
        if !run.finished || run.sent_up || run.children_done < run.down.len() {
            return Ok(());
        }
        run.sent_up = true;
        match run.up {
            Some(p) => {
                let tally = run.tally.clone();
                self.send(ctx, p, CreationMsg::Done { token, tally });
                Ok(())
            }
            None => self.on_release(ctx, token),
        }
    }

    pub(super) fn on_release(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "release")?;
        run.released = true;
        let own: usize = run
            .parts
            .iter()
            .map(|p| p.proto.peak_state_bytes() + p.inter.peak_state_bytes())
            .sum();
        run.peak = run.peak.max(own as u64);
        for c in run.down.clone() {
            self.send(ctx, c, CreationMsg::Release { token });
        }
        self.try_peak_up(ctx, token)
    }

    pub(super) fn try_peak_up(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "peak")?;
        if !run.released || run.children_peaked < run.down.len() {
            return Ok(());
        }
        let run = self.creations.runs.remove(&token).expect("looked up above");
        match run.up {
            Some(p) => self.send(
                ctx,
                p,
                CreationMsg::Peak {
                    token,
                    bytes: run.peak,
                },
            ),
            None => {
                let t = &run.tally;
                let sections: Vec<SectionId> = (t.members.iter().enumerate())
                    .map(|(c, &m)| SectionId::from_token(token + c as u64, m as u32))
                    .collect();
                let report = CreationReport {
                    tag: run.meta.tag,
                    id: sections[0],
                    sections,
                    algorithm: run.algorithm,
                    parent_pes: t.pes,
                    members: t.members.iter().sum(),
                    messages: t.messages,
                    bytes: t.bytes,
                    time_us: t.time_us(),
                    join_spread_us: t.join_spread_us(),
                    max_pe_state_bytes: run.peak,
                    phases: t.phase_reports(),
                    failed: None,
                };
                ctx.send_to_callback(&run.meta.on_report, Encoded(report));
            }
        }
        Ok(())
    }
}
