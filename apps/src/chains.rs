//! The MCMC kernel's chains as a chare array, the form of the kernel `mcmc
//! --checkpoint-every` runs: one element walks one chain of the workload (an item
//! costs T on its PE), all elements step together, a step commits each unfinished
//! chain's next item into its step ledger, and every `--checkpoint-every` steps the
//! job is saved at quiescence; between steps the elements call `at_sync`, so
//! `--array-lb` balances them. The walker groups of `--lb` hold sections and a
//! singleton driver, which a checkpoint does not save. At the end each chain
//! compares its ledger (items, index sum, XOR of `ledger_entry`) with the one its
//! length calls for; the job's checksum is the sum of the differences, 0 exactly when
//! every item of every chain was committed once, across any restarts.

use crate::balancing::{json_num, resume_by_message, run_app_with, AppError, Checked};
use crate::balancing::{LoadLog, Results};
use crate::bench::report::Report;
use crate::checkpointing::CheckpointPlan;
use chorus_core::{ArrayMap, Callback, Chare, Config, Ctx, Entry, Migratable, Reducer, Registry};
use chorus_lb::walker::ledger_entry;
use chorus_lb::Workload;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// What the chains kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChainParams {
    /// Cost of one item.
    pub item: Duration,
    /// PEs per group the workload's chains are laid out for (G).
    pub group_size: u32,
    /// Chain lengths.
    pub workload: Workload,
}

/// Why a chains run produced no outcome.
pub type ChainsError = AppError<std::convert::Infallible>;

/// What a chains run measured.
#[derive(Debug, Clone)]
pub struct ChainsOutcome {
    /// The figures; the checksum is the ledgers' discrepancy, expected 0.
    pub run: Checked,
    /// What was run.
    pub params: ChainParams,
}

/// One chain of the workload.
#[derive(Serialize, Deserialize)]
pub struct Chain {
    params: ChainParams,
    /// Its length (S).
    len: u64,
    /// Steps of the whole job (the longest chain, at least 1).
    steps: u32,
    /// Chains in the job.
    chains: usize,
    /// Steps done; the chain's next item while it is below `len`.
    step: u32,
    items: u64,
    index_sum: u64,
    ledger: u64,
    results: Results,
    plan: CheckpointPlan,
    entries: ChainEntries,
    load: LoadLog,
}

/// What a chain starts from.
#[derive(Clone, Serialize, Deserialize)]
pub struct ChainInit {
    params: ChainParams,
    lengths: Arc<Vec<u64>>,
    results: Results,
    plan: CheckpointPlan,
    entries: ChainEntries,
}

/// The entries of a chain that callbacks name: the checkpoint's.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct ChainEntries {
    reached: Entry<Chain, u64>,
    saved: Entry<Chain, ()>,
}

/// Messages of a chain.
#[derive(Clone, Serialize, Deserialize)]
pub enum ChainMsg {
    /// Take the next step.
    Step,
    /// Every chain reached the checkpoint step (to chain 0).
    Reached(u64),
    /// The checkpoint is committed: go on.
    Saved,
    /// The job was restarted: check the parameters, take the new plan, go on.
    Restart {
        /// The new job's parameters (the saved ones must equal them).
        params: ChainParams,
        /// The new job's checkpoint plan.
        plan: CheckpointPlan,
    },
}

/// The fingerprint of a chain's ledger.
fn digest(chain: usize, items: u64, index_sum: u64, ledger: u64) -> u64 {
    chorus_core::mix64(
        ledger ^ chorus_core::mix64(items ^ index_sum.rotate_left(29)) ^ chain as u64,
    )
}

/// How far chain `c` of length `len`, with ledger (items, index sum, XOR of
/// entries), is from the one that commits each of its items once: 0 if it is that.
fn discrepancy(c: usize, len: u64, (items, index_sum, ledger): (u64, u64, u64)) -> u64 {
    let want = (0..len).fold(0, |l, i| l ^ ledger_entry(c as u32, i));
    let sum = len * len.saturating_sub(1) / 2;
    digest(c, items, index_sum, ledger).wrapping_sub(digest(c, len, sum, want))
}

impl Chare for Chain {
    type Init = ChainInit;
    type Msg = ChainMsg;

    fn create(init: ChainInit, ctx: &mut Ctx) -> Self {
        let c = ctx.this_index::<usize>().unwrap_or(0);
        let steps = init.lengths.iter().copied().max().unwrap_or(0).max(1);
        Chain {
            params: init.params,
            len: init.lengths.get(c).copied().unwrap_or(0),
            steps: u32::try_from(steps).unwrap_or(u32::MAX),
            chains: init.lengths.len(),
            step: 0,
            items: 0,
            index_sum: 0,
            ledger: 0,
            results: init.results,
            plan: init.plan,
            entries: init.entries,
            load: LoadLog::default(),
        }
    }

    fn handle(&mut self, msg: ChainMsg, ctx: &mut Ctx) {
        let Some(array) = ctx.this_array::<Chain, usize>() else {
            return ctx.fail("mcmc", "a chain is not an array element");
        };
        match msg {
            ChainMsg::Step => self.step(ctx),
            ChainMsg::Reached(_) => {
                let after = Callback::array_all(&array, self.entries.saved);
                ctx.checkpoint(&self.plan.dir, after);
            }
            ChainMsg::Saved => {
                if ctx.this_index::<usize>() == Some(0) {
                    self.plan.note_saved(self.step);
                }
                self.step(ctx);
            }
            ChainMsg::Restart { params, plan } if params == self.params => {
                self.plan = plan;
                self.load.clear();
                self.step(ctx);
            }
            ChainMsg::Restart { params, .. } => {
                let why = format!(
                    "the checkpoint holds chains of {:?}, the restarted job asks for {params:?}: \
                     restart with the flags of the run that wrote it",
                    self.params
                );
                ctx.fail("mcmc", why);
            }
        }
    }
}

impl Migratable for Chain {
    fn resume_from_sync(&mut self, ctx: &mut Ctx) {
        resume_by_message::<Chain, usize>(ctx, ChainMsg::Step);
    }
}

impl Chain {
    /// Commit the chain's next item (if it has one), then the step's end.
    fn step(&mut self, ctx: &mut Ctx) {
        let c = ctx.this_index::<usize>().unwrap_or(0);
        if self.step >= self.steps {
            return;
        }
        let item = u64::from(self.step);
        if item < self.len {
            self.load.charge(ctx, self.params.item);
            self.items += 1;
            self.index_sum += item;
            self.ledger ^= ledger_entry(c as u32, item);
        } else {
            // A chain past its last item still notes the step's end: the collector
            // takes the latest end of each step over equally long lists.
            self.load.charge(ctx, Duration::ZERO);
        }
        self.step += 1;
        self.plan.die_if_due(self.step, c + 1 == self.chains);
        if c == 0 {
            self.plan.note_progress(self.step);
        }
        self.end_step(c, ctx);
    }

    /// After a step: the result after the last, a checkpoint when due, else `at_sync`.
    fn end_step(&mut self, c: usize, ctx: &mut Ctx) {
        if self.step == self.steps {
            let off = discrepancy(c, self.len, (self.items, self.index_sum, self.ledger));
            return self.results.contribute(ctx, off, &self.load);
        }
        if self.plan.due(self.step, self.steps) {
            let Some(array) = ctx.this_array::<Chain, usize>() else {
                return ctx.fail("mcmc", "a chain is not an array element");
            };
            let zero = Callback::array_element(&array, &0, self.entries.reached);
            return ctx.contribute(u64::from(self.step), Reducer::Sum, zero);
        }
        if let Err(e) = ctx.at_sync() {
            ctx.fail("mcmc", e);
        }
    }
}

/// Run the chains of `params` under `config`, checkpointing as `plan` says (a job
/// started with `--restart` goes on from the checkpoint).
pub fn run(
    config: &Config,
    params: ChainParams,
    plan: CheckpointPlan,
) -> Result<ChainsOutcome, ChainsError> {
    let register = |reg: &mut Registry| ChainEntries {
        reached: reg.entry::<Chain, u64>("Chain::reached", ChainMsg::Reached),
        saved: reg.entry::<Chain, ()>("Chain::saved", |()| ChainMsg::Saved),
    };
    let figures = run_app_with::<Chain, ChainEntries>(
        config,
        "chorus_apps::chains::Chain",
        register,
        move |ctx, results, entries| {
            if let Some(chains) = ctx.restored_arrays::<Chain, usize>().first() {
                return chains.broadcast(ctx, ChainMsg::Restart { params, plan });
            }
            // The job's PEs (the ranks' under mpirun) lay the chains out.
            let lengths =
                Arc::new((params.workload).chains(ctx.num_pes() as u32, params.group_size));
            let n = lengths.len();
            if n == 0 {
                let why = format!(
                    "--group-size {} leaves no chain on {} PEs",
                    params.group_size,
                    ctx.num_pes()
                );
                return ctx.fail("mcmc", why);
            }
            let init = ChainInit {
                params,
                lengths,
                results,
                plan,
                entries,
            };
            let chains = ctx.create_array_1d::<Chain>(n, init, ArrayMap::Block);
            chains.broadcast(ctx, ChainMsg::Step);
        },
    )?;
    Ok(ChainsOutcome {
        run: Checked::new(config, figures, 0),
        params,
    })
}

impl ChainsOutcome {
    /// Whether every chain's ledger is the one its length calls for.
    pub fn exact(&self) -> bool {
        self.run.exact()
    }

    /// The ledger's verdict, in words.
    fn verdict(&self) -> &'static str {
        if self.exact() {
            "every item of every chain committed exactly once"
        } else {
            "ITEMS LOST OR COMMITTED MORE THAN ONCE"
        }
    }
}

impl Report for ChainsOutcome {
    fn json(&self) -> String {
        let p = &self.params;
        self.run.json_with(json!({
                "app": "mcmc-chains",
                "item_ms": json_num(p.item.as_secs_f64() * 1e3),
                "group_size": p.group_size,
                "workload": p.workload.to_string(),
                "seconds": json_num(self.run.figures.seconds),
                "ledger_exactly_once": self.exact(),
        }))
    }

    fn table(&self) -> String {
        let p = &self.params;
        format!(
            "mcmc chains as a chare array: workload {w} laid out for G = {g}, T = {t} ms, {pes} PEs ({layer}), --array-lb {lb}\n\
             step ledger discrepancy {d:016x}: {verdict}\n\
             time {s:.3} s\n\
             {loads}",
            w = p.workload,
            g = p.group_size,
            t = p.item.as_secs_f64() * 1e3,
            pes = self.run.figures.pes,
            layer = self.run.layer.name(),
            lb = self.run.strategy,
            d = self.run.figures.checksum,
            verdict = self.verdict(),
            s = self.run.figures.seconds,
            loads = self.run.load_line(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ledger of chain `c` committing `items` in order.
    fn ledger_of(c: usize, items: &[u64]) -> (u64, u64, u64) {
        let x = items.iter().fold(0, |l, &i| l ^ ledger_entry(c as u32, i));
        (items.len() as u64, items.iter().sum(), x)
    }

    #[test]
    fn only_every_item_once_has_no_discrepancy() {
        assert_eq!(discrepancy(3, 5, ledger_of(3, &[0, 1, 2, 3, 4])), 0);
        assert_eq!(discrepancy(3, 0, ledger_of(3, &[])), 0);
        for wrong in [
            &[0, 1, 2, 3][..],
            &[0, 1, 2, 2, 3, 4],
            &[0, 1, 1, 3, 4],
            &[0, 1, 2, 3, 4, 5],
        ] {
            assert_ne!(discrepancy(3, 5, ledger_of(3, wrong)), 0, "{wrong:?}");
        }
        assert_ne!(discrepancy(4, 5, ledger_of(3, &[0, 1, 2, 3, 4])), 0);
    }
}
