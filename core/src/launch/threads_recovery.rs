//! The threads layer's rollback to an in-memory checkpoint
//! (`engine/checkpoint/memory.rs`) after its injected PE failure: every port has
//! closed, the survivors' threads handed back their copies, and the job is started
//! again on the survivors, renumbered from 0, from the newest complete checkpoint,
//! as a restart on that many PEs would start it; PE 0 delivers the checkpoint's
//! callback again, saying it is a recovery. What was queued or in flight is
//! discarded and counted; the failed run's reports are dropped with it.

use super::{PeEnd, Session};
use crate::api::report::Recovery;
use crate::base::checkpoint_error::CheckpointError;
use crate::base::error::RuntimeError;
use crate::engine::checkpoint_memory::{assemble, Holder};
use crate::machine::Arrival;
use crate::msg::envelope::Envelope;
use crate::msg::kind::Kind;
use std::sync::Arc;
use std::time::Instant;

impl Session {
    /// Prepare the next run from what the PEs of the failed one handed back.
    pub(super) fn roll_back(
        &mut self,
        ends: Vec<PeEnd>,
        start: Instant,
    ) -> Result<(), RuntimeError> {
        let failed = self.failing.take().unwrap_or(0) as usize;
        let gathered = {
            let holders: Vec<Holder<'_>> = ends
                .iter()
                .zip(&self.ids)
                .enumerate()
                .map(|(q, (end, &name))| Holder {
                    name,
                    alive: q != failed,
                    copies: &end.1,
                })
                .collect();
            assemble(&holders).map_err(RuntimeError::Checkpoint)?
        };
        let Some(g) = gathered else {
            let failed = vec![self.ids[failed]];
            return Err(RuntimeError::Checkpoint(
                CheckpointError::NothingToRollBack { failed },
            ));
        };
        let survivors = self.ids.len() - 1;
        let restart = g
            .restart(&self.registry, survivors)
            .map_err(RuntimeError::Checkpoint)?;
        self.callback = ends[0]
            .2
            .iter()
            .find(|c| c.0 == g.epoch)
            .map(|c| c.1.clone());
        let user = |env: &Envelope| {
            if matches!(env.kind, Kind::User { .. }) {
                env.weight()
            } else {
                0
            }
        };
        let in_flight: u64 = std::mem::take(&mut self.inboxes)
            .iter()
            .flat_map(|rx| rx.try_iter())
            .map(|a| match a {
                Arrival::One(env) => user(&env),
                Arrival::Many(envs) => envs.iter().map(user).sum(),
                Arrival::Failed { .. } => 0,
            })
            .sum();
        let queued = ends
            .iter()
            .enumerate()
            .filter(|(q, _)| *q != failed)
            .map(|(_, e)| e.0.unprocessed)
            .sum();
        self.recoveries.push(Recovery {
            at: start.elapsed().as_secs_f64(),
            failed: vec![self.ids.remove(failed)],
            epoch: g.epoch,
            pes: survivors,
            discarded_in_flight: in_flight,
            discarded_queued: queued,
        });
        self.restart = Some(Arc::new(restart));
        self.resume = Some(g);
        Ok(())
    }
}
