//! The MCMC benchmark kernel's driver: starts the walkers, checks every chain's end,
//! and reports the makespan and the regroup counts.

use crate::report::{McmcReport, RegroupStats};
use crate::strategy::{AsyncMerge, Collective, NoBalancing, Strategy, StrategySpec};
use crate::walker::{ChainEnd, Walker, WalkerEntries, WalkerInit, WalkerMsg, WORK_UNIT};
use crate::workload::Workload;
use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, GroupProxy, Registry, Runtime, RuntimeError,
};
use chorus_sections::collectives::Collectives;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// The benchmark's parameters (the paper's G, T and S).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct McmcParams {
    /// PEs per initial walker group (G).
    pub group_size: u32,
    /// Cost of one work item on one PE (T); a group of g PEs takes T/g per item.
    pub item: Duration,
    /// Chain lengths (S).
    pub workload: Workload,
}

/// Why an MCMC run did not produce a report.
#[derive(Debug, Error)]
pub enum LbError {
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The parameters cannot run.
    #[error("{0}")]
    Params(String),
    /// The job ended without publishing a result.
    #[error("the run published no {0}")]
    Missing(&'static str),
    /// Chains ran items more than once, not at all, or ended twice.
    #[error("chains were walked wrongly: {}", .0.join("; "))]
    Chains(Vec<String>),
}

/// What the driver starts from.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound = "S: Strategy")]
pub struct DriverInit<S> {
    strategy: S,
    params: McmcParams,
    chains: Arc<Vec<u64>>,
    walker_entries: WalkerEntries<S>,
    chain_ended: Entry<Driver<S>, Encoded<ChainEnd>>,
    regroups: Entry<Driver<S>, Vec<u64>>,
}

/// Messages of the driver.
#[derive(Clone, Serialize, Deserialize)]
pub enum DriverMsg {
    /// A chain's group reports its end.
    ChainEnded(ChainEnd),
    /// Every PE's regroup count and work share, in pairs by PE.
    Regroups(Vec<u64>),
}

/// The driver chare, on PE 0.
pub struct Driver<S> {
    init: DriverInit<S>,
    walkers: GroupProxy<Walker<S>>,
    started: f64,
    ended: Vec<Option<ChainEnd>>,
    open: usize,
    errors: Vec<String>,
}

impl<S: Strategy> Chare for Driver<S> {
    type Init = DriverInit<S>;
    type Msg = DriverMsg;

    fn create(init: DriverInit<S>, ctx: &mut Ctx) -> Self {
        let me = ctx
            .this_chare::<Driver<S>>()
            .expect("the driver is a singleton chare");
        let collectives = Collectives::create(ctx);
        let started = ctx.now();
        let walkers = ctx.create_group::<Walker<S>>(WalkerInit {
            strategy: init.strategy.clone(),
            group_size: init.params.group_size,
            item: init.params.item,
            chains: init.chains.clone(),
            collectives,
            on_chain_end: Callback::chare(&me, init.chain_ended),
            entries: init.walker_entries,
        });
        let n = init.chains.len();
        Driver {
            init,
            walkers,
            started,
            ended: vec![None; n],
            open: n,
            errors: Vec::new(),
        }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        match msg {
            DriverMsg::ChainEnded(end) => self.chain_ended(end, ctx),
            DriverMsg::Regroups(pairs) => {
                let counts: Vec<u64> = pairs.chunks(2).map(|c| c[0]).collect();
                self.check_work(&pairs);
                let makespan = self
                    .ended
                    .iter()
                    .flatten()
                    .map(|e| e.at - self.started)
                    .fold(0.0, f64::max);
                ctx.publish("makespan_s", &makespan);
                ctx.publish("regroups", &counts);
                ctx.publish("errors", &self.errors);
                ctx.exit();
            }
        }
    }
}

impl<S: Strategy> Driver<S> {
    /// Every item's work was done once in all: a PE lost from a group, or in two
    /// groups at once, would leave the PEs' shares short of or above the items.
    fn check_work(&mut self, pairs: &[u64]) {
        let done: f64 = pairs
            .chunks(2)
            .filter_map(|c| c.get(1))
            .map(|&s| s as f64 / WORK_UNIT)
            .sum();
        let items: u64 = self.init.chains.iter().sum();
        if (done - items as f64).abs() > 1e-6 * (items as f64 + 1.0) {
            self.errors.push(format!(
                "PEs did {done:.6} items' worth of work, the chains hold {items}: \
                 a PE was lost from a group or worked in two"
            ));
        }
    }

    fn chain_ended(&mut self, end: ChainEnd, ctx: &mut Ctx) {
        let c = end.chain as usize;
        let want = self.init.chains.get(c).copied();
        match (want, self.ended.get(c)) {
            (Some(s), Some(None)) => {
                let sum = s * s.saturating_sub(1) / 2;
                if end.items != s || end.index_sum != sum {
                    self.errors.push(format!(
                        "chain {c} ran {} items (index sum {}), expected {s} ({sum})",
                        end.items, end.index_sum
                    ));
                }
                self.ended[c] = Some(end);
                self.open -= 1;
            }
            _ => {
                // Counted once, so the report below starts exactly once.
                self.errors
                    .push(format!("chain {c} ended twice or does not exist"));
                return;
            }
        }
        if self.open == 0 {
            let me = ctx
                .this_chare::<Driver<S>>()
                .expect("the driver is a singleton chare");
            let cb = Callback::chare(&me, self.init.regroups);
            self.walkers.broadcast(ctx, WalkerMsg::Report(cb));
        }
    }
}

/// Run the MCMC benchmark kernel once with `strategy` under `config`.
pub fn run<S: Strategy>(
    config: &Config,
    params: McmcParams,
    strategy: S,
) -> Result<McmcReport, LbError> {
    if params.group_size == 0 {
        return Err(LbError::Params("--group-size must be at least 1".into()));
    }
    if params.group_size > config.pes {
        return Err(LbError::Params(format!(
            "--group-size {} is larger than --pes {}: use at least one whole group",
            params.group_size, config.pes
        )));
    }
    let chains = Arc::new(params.workload.chains(config.pes, params.group_size));
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Driver<S>>("chorus_lb::Driver")
        .chare::<Walker<S>>("chorus_lb::Walker");
    let walker_entries = WalkerEntries {
        stepped: reg.entry::<Walker<S>, Vec<u64>>("Walker::stepped", WalkerMsg::Stepped),
        exchanged: reg.entry::<Walker<S>, Vec<u64>>("Walker::exchanged", WalkerMsg::Exchanged),
    };
    let chain_ended = reg.entry::<Driver<S>, Encoded<ChainEnd>>("Driver::chain_ended", |e| {
        DriverMsg::ChainEnded(e.0)
    });
    let regroups = reg.entry::<Driver<S>, Vec<u64>>("Driver::regroups", DriverMsg::Regroups);
    let init = DriverInit {
        strategy: strategy.clone(),
        params,
        chains: chains.clone(),
        walker_entries,
        chain_ended,
        regroups,
    };
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        ctx.create_chare::<Driver<S>>(init, 0);
    })?;
    let errors: Vec<String> = report.output("errors").ok_or(LbError::Missing("errors"))?;
    if !errors.is_empty() {
        return Err(LbError::Chains(errors));
    }
    let makespan_s: f64 = report
        .output("makespan_s")
        .ok_or(LbError::Missing("makespan"))?;
    let counts: Vec<u64> = report
        .output("regroups")
        .ok_or(LbError::Missing("regroup counts"))?;
    let work: u64 = chains.iter().sum();
    let ideal_s = work as f64 * params.item.as_secs_f64() / f64::from(config.pes);
    Ok(McmcReport {
        name: strategy.name(),
        makespan_s,
        ideal_s,
        regroups: RegroupStats::of(&counts),
        trace: report.trace.map(|t| t.file),
        sim: report.sim,
    })
}

/// Run the MCMC benchmark kernel once with the built-in strategy `spec`.
pub fn run_spec(
    config: &Config,
    params: McmcParams,
    spec: StrategySpec,
) -> Result<McmcReport, LbError> {
    match spec {
        StrategySpec::None => run(config, params, NoBalancing),
        StrategySpec::Collective(interval) => run(config, params, Collective { interval }),
        StrategySpec::Async => run(config, params, AsyncMerge),
    }
}
