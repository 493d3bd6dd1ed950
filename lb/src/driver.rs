//! The MCMC benchmark kernel's driver: starts the walkers, checks every chain's end,
//! and reports the makespan and the regroup counts.

use crate::recovery;
use crate::report::{Ledger, McmcReport, RegroupStats};
use crate::strategy::{AsyncMerge, Collective, NoBalancing, Strategy, StrategySpec};
use crate::walker::{
    ledger_entry, ChainEnd, GroupState, Recovery, Walker, WalkerEntries, WalkerInit, WalkerMsg,
    WORK_UNIT,
};
use crate::workload::Workload;
use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, ErrorPolicy, GroupProxy, Layer, Pe, Registry,
    Runtime, RuntimeError,
};
use chorus_sections::collectives::Collectives;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
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
    recovery: Entry<Driver<S>, Encoded<Recovery>>,
    pe_failed: Entry<Driver<S>, Pe>,
    /// PEs may fail (`--sim-kill`): run the recovery protocol (`crate::recovery`).
    fault_tolerant: bool,
}

/// Messages of the driver.
#[derive(Clone, Serialize, Deserialize)]
pub enum DriverMsg {
    /// A chain's group reports its end.
    ChainEnded(ChainEnd),
    /// Every PE's regroup count and work share, in pairs by PE; with fault
    /// tolerance, one PE's [PE, regroup count, work share].
    Regroups(Vec<u64>),
    /// A walker's snapshot or a leader's commit.
    Recovery(Recovery),
    /// A PE failed.
    PeFailed(Pe),
}

/// The driver chare, on PE 0.
pub struct Driver<S> {
    init: DriverInit<S>,
    walkers: GroupProxy<Walker<S>>,
    started: f64,
    ended: Vec<Option<ChainEnd>>,
    open: usize,
    errors: Vec<String>,
    /// PEs reported failed: at most the job's PEs.
    dead: BTreeSet<Pe>,
    /// Live walkers' snapshots, with their epoch: at most one per PE.
    snapshots: BTreeMap<Pe, (u64, GroupState)>,
    /// Each chain's latest committed state, as its leader sent it: one per chain.
    replicas: BTreeMap<u32, GroupState>,
    /// Recoveries planned.
    recoveries: u64,
    /// With fault tolerance, the live PEs' (regroup count, work share), by PE.
    reports: BTreeMap<Pe, (u64, u64)>,
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
            fault_tolerant: init.fault_tolerant,
            on_recovery: Callback::chare(&me, init.recovery),
        });
        if init.fault_tolerant {
            ctx.on_pe_failure(Callback::chare(&me, init.pe_failed));
        }
        let n = init.chains.len();
        Driver {
            init,
            walkers,
            started,
            ended: vec![None; n],
            open: n,
            errors: Vec::new(),
            dead: BTreeSet::new(),
            snapshots: BTreeMap::new(),
            replicas: BTreeMap::new(),
            recoveries: 0,
            reports: BTreeMap::new(),
        }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        match msg {
            DriverMsg::ChainEnded(end) => self.chain_ended(end, ctx),
            DriverMsg::Recovery(Recovery::Commit(state)) => {
                let r = self.replicas.entry(state.chain).or_insert(state);
                if state.next_item > r.next_item {
                    *r = state;
                }
            }
            DriverMsg::Recovery(Recovery::Snapshot { epoch, pe, state }) => {
                self.snapshots.insert(pe, (epoch, state));
                self.try_resume(ctx);
            }
            DriverMsg::PeFailed(pe) => {
                self.dead.insert(pe);
                self.try_resume(ctx);
            }
            DriverMsg::Regroups(v) if self.init.fault_tolerant => {
                if let [pe, regroups, share] = v[..] {
                    self.reports.insert(pe as Pe, (regroups, share));
                }
                if self.reports.len() + self.dead.len() == ctx.num_pes() {
                    let pairs: Vec<u64> =
                        (self.reports.values()).flat_map(|&(r, s)| [r, s]).collect();
                    self.finish(&pairs, ctx);
                }
            }
            DriverMsg::Regroups(pairs) => self.finish(&pairs, ctx),
        }
    }
}

impl<S: Strategy> Driver<S> {
    /// Publish the results and end the job.
    fn finish(&mut self, pairs: &[u64], ctx: &mut Ctx) {
        let counts: Vec<u64> = pairs.chunks(2).map(|c| c[0]).collect();
        if self.dead.is_empty() {
            // Work redone after a failure, and the dead PEs' shares, leave
            // the sum off by design.
            self.check_work(pairs);
        }
        let makespan = self
            .ended
            .iter()
            .flatten()
            .map(|e| e.at - self.started)
            .fold(0.0, f64::max);
        ctx.publish("makespan_s", &makespan);
        ctx.publish("regroups", &counts);
        ctx.publish("errors", &self.errors);
        let ends: Vec<ChainEnd> = self.ended.iter().flatten().copied().collect();
        let ledger = Ledger {
            chains: self.ended.len() as u64,
            finished: ends.len() as u64,
            items: ends.iter().map(|e| e.items).sum(),
            pes_failed: self.dead.len() as u64,
            recoveries: self.recoveries,
        };
        ctx.publish("ledger", &ledger);
        ctx.exit();
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
                let ledger = (0..s).fold(0, |l, i| l ^ ledger_entry(end.chain, i));
                if end.items != s || end.index_sum != sum || end.ledger != ledger {
                    self.errors.push(format!(
                        "chain {c} ran {} items (index sum {}, ledger {:x}), expected {s} \
                         ({sum}, {ledger:x}): a step was lost or committed twice",
                        end.items, end.index_sum, end.ledger
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
            if self.init.fault_tolerant {
                // A broadcast cannot pass a failed PE: ask each live PE.
                for pe in (0..ctx.num_pes() as Pe).filter(|p| !self.dead.contains(p)) {
                    self.walkers.send(ctx, pe, WalkerMsg::Report(cb.clone()));
                }
            } else {
                self.walkers.broadcast(ctx, WalkerMsg::Report(cb));
            }
        }
    }

    /// Once every live walker has sent its snapshot for the current epoch, plan the
    /// groups (`recovery::plan`) and resume them.
    fn try_resume(&mut self, ctx: &mut Ctx) {
        let epoch = self.dead.len() as u64;
        let npes = ctx.num_pes() as u32;
        let live = npes as usize - self.dead.len();
        let snaps: BTreeMap<Pe, GroupState> = (self.snapshots.iter())
            .filter(|(pe, (e, _))| *e == epoch && !self.dead.contains(pe))
            .map(|(&pe, &(_, s))| (pe, s))
            .collect();
        if epoch == 0 || snaps.len() < live || self.open == 0 {
            return;
        }
        self.snapshots.clear();
        self.recoveries += 1;
        let open: Vec<(u32, u64)> = (self.ended.iter().enumerate())
            .filter(|(_, e)| e.is_none())
            .map(|(c, _)| (c as u32, self.init.chains[c]))
            .collect();
        let (groups, extra) = recovery::plan(npes, &self.dead, &open, &snaps, &self.replicas);
        for s in extra {
            self.errors.push(format!(
                "chain {} was left without a group: more chains than the {live} live PEs",
                s.chain
            ));
            self.ended[s.chain as usize] = Some(ChainEnd {
                chain: s.chain,
                at: ctx.now(),
                items: s.items,
                index_sum: s.index_sum,
                ledger: s.ledger,
            });
            self.open -= 1;
        }
        for (first, last, state) in groups {
            for pe in (first..=last).filter(|p| !self.dead.contains(p)) {
                let msg = WalkerMsg::Resume {
                    epoch,
                    first,
                    last,
                    state,
                };
                self.walkers.send(ctx, pe, msg);
            }
        }
    }
}

/// True if the run injects failures: the walkers then run the recovery protocol.
/// The driver lives on PE 0, and failed collectives are reported errors the run
/// must outlive, so PE 0 cannot be killed and the policy must be `drop`.
fn fault_tolerant(config: &Config) -> Result<bool, LbError> {
    let kills = &config.sim.kill;
    if kills.is_empty() || config.layer != Layer::Sim {
        return Ok(false);
    }
    if kills.iter().any(|k| k.pe == 0) {
        return Err(LbError::Params(
            "--sim-kill 0@...: PE 0 holds the driver and cannot be killed".into(),
        ));
    }
    if config.on_error != ErrorPolicy::Drop {
        return Err(LbError::Params(
            "--sim-kill needs --on-error drop: collectives cut by a failure are reported errors the run outlives".into(),
        ));
    }
    Ok(true)
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
        pe_failed: reg.entry::<Walker<S>, Pe>("Walker::pe_failed", WalkerMsg::PeFailed),
    };
    let chain_ended = reg.entry::<Driver<S>, Encoded<ChainEnd>>("Driver::chain_ended", |e| {
        DriverMsg::ChainEnded(e.0)
    });
    let regroups = reg.entry::<Driver<S>, Vec<u64>>("Driver::regroups", DriverMsg::Regroups);
    let recovery =
        reg.entry::<Driver<S>, Encoded<Recovery>>("Driver::recovery", |e| DriverMsg::Recovery(e.0));
    let pe_failed = reg.entry::<Driver<S>, Pe>("Driver::pe_failed", DriverMsg::PeFailed);
    let init = DriverInit {
        strategy: strategy.clone(),
        params,
        chains: chains.clone(),
        walker_entries,
        chain_ended,
        regroups,
        recovery,
        pe_failed,
        fault_tolerant: fault_tolerant(config)?,
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
    let ledger: Ledger = report
        .output("ledger")
        .ok_or(LbError::Missing("chain ledger"))?;
    let work: u64 = chains.iter().sum();
    let ideal_s = work as f64 * params.item.as_secs_f64() / f64::from(config.pes);
    Ok(McmcReport {
        name: strategy.name(),
        makespan_s,
        ideal_s,
        regroups: RegroupStats::of(&counts),
        ledger,
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
