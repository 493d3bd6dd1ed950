//! The sim layer's rollback to an in-memory checkpoint (`engine/checkpoint/memory.rs`)
//! after `--sim-kill`: the survivors' copies give the newest complete checkpoint,
//! every message of the failed epoch is discarded and counted, and the job is
//! rebuilt on the survivors, renumbered from 0, as a restart on that many PEs would
//! build it (elements placed by their maps, groups through their `restore`); PE 0
//! then delivers the checkpoint's callback again, saying it is a recovery. The
//! rollback happens at the failure's virtual time; what the copies' transfer would
//! cost is not modelled.

use super::{SimPe, Simulator};
use crate::api::report::Recovery;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::checkpoint_memory::{assemble, Gathered, Holder};
use crate::msg::callback::Callback;
use crate::msg::kind::Kind;
use std::sync::Arc;

impl Simulator {
    /// True once PE 0 holds in-memory copies: failures then roll the job back.
    pub(super) fn holds_memory_checkpoint(&self) -> bool {
        self.pes[0]
            .rt
            .as_ref()
            .is_some_and(|rt| !rt.memory_copies().is_empty())
    }

    /// Roll the job back at `t` to the newest complete in-memory checkpoint; with
    /// none complete yet the failed PEs are lost as without one, and with a state
    /// lost with every PE that held it the job ends with that error.
    pub(super) fn recover(&mut self, t: u64) {
        self.recover_pending = false;
        let gathered = {
            let holders: Vec<Holder<'_>> = self
                .pes
                .iter()
                .enumerate()
                .map(|(q, p)| Holder {
                    name: self.started_as(q as Pe),
                    alive: !p.dead(),
                    copies: p.rt.as_ref().map_or(&[], |rt| rt.memory_copies()),
                })
                .collect();
            assemble(&holders)
        };
        match gathered {
            Ok(Some(g)) => self.rebuild(&g, t),
            Ok(None) => {
                let dead: Vec<Pe> = (0..self.pes.len() as Pe)
                    .filter(|&q| self.pes[q as usize].dead())
                    .collect();
                for q in dead {
                    self.lose(q, t);
                }
            }
            Err(e) => self.end_with(RuntimeError::Checkpoint(e), t),
        }
    }

    /// End the job at `t` with `err`, from PE 0.
    fn end_with(&mut self, err: RuntimeError, t: u64) {
        self.cursor.borrow_mut().begin(0, t);
        self.runtime(0).core.abort(err);
        self.after_run(0, t);
    }

    /// Rebuild the job on the survivors from `g` at `t`.
    fn rebuild(&mut self, g: &Gathered, t: u64) {
        let survivors = self.pes.iter().filter(|p| !p.dead()).count();
        let restart = match g.restart(&self.registry, survivors) {
            Ok(r) => Arc::new(r),
            Err(e) => return self.end_with(RuntimeError::Checkpoint(e), t),
        };
        let callback = self.pes[0]
            .rt
            .as_ref()
            .and_then(|rt| rt.memory_callback(g.epoch))
            .unwrap_or(Callback::Ignore);
        let in_flight: u64 = self
            .events
            .keep_only_kills()
            .iter()
            .filter(|env| matches!(env.kind, Kind::User { .. }))
            .map(|env| env.weight())
            .sum();
        let mut record = Recovery {
            at: t as f64 * 1e-9,
            epoch: g.epoch,
            pes: survivors,
            discarded_in_flight: in_flight + std::mem::take(&mut self.pending_discarded),
            ..Recovery::default()
        };
        let ids: Vec<Pe> = (0..self.pes.len() as Pe)
            .map(|q| self.started_as(q))
            .collect();
        let old = std::mem::take(&mut self.pes);
        self.ids.clear();
        for (p, id) in old.into_iter().zip(ids) {
            if p.dead() {
                record.failed.push(id);
                continue;
            }
            let busy = p.busy_ns();
            if let Some(rt) = p.rt {
                record.discarded_queued += rt.into_report().unprocessed;
            }
            self.ids.push(id);
            let mut kept = SimPe {
                busy_until: t,
                ..SimPe::default()
            };
            kept.add_busy(busy);
            self.pes.push(kept);
        }
        tracing::info!(failed = ?record.failed, epoch = g.epoch, "sim: rolled back");
        self.recoveries.push(record);
        // The failure subscriptions were the failed epoch's.
        self.cursor.borrow_mut().subscribers.clear();
        self.restart = Some(restart);
        for q in 0..survivors as Pe {
            self.cursor.borrow_mut().begin(q, t);
            let rt = self.runtime(q);
            rt.hold_copies(g.copies_for(q, survivors));
            if q == 0 {
                rt.resume_from_memory(g.epoch, callback.clone());
            }
            self.after_run(q, t);
        }
        self.restart = None;
    }
}
