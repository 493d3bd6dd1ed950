//! The strategies side by side on one input: wall time of each decision, the
//! balance and migrations it reaches, and its modelled cost on the machine (what
//! `chorus-bench lb` prints at 131,072 PEs and a million elements).

use super::catalog::{build, StrategyParams, UnknownStrategy};
use super::comm::edge_cut;
use super::plan::DecisionCost;
use super::workload::{loads_after, skewed, Topology};
use chorus_core::api::balance::{check_decision, max_over_avg, DecisionError, LoadStats};
use chorus_core::NetworkModel;
use std::fmt;
use std::time::Instant;

/// One strategy's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleRow {
    /// The strategy's name.
    pub strategy: String,
    /// Wall time of its decision on this machine, in seconds (a sequential run,
    /// simulating every PE for the per-group and per-PE strategies).
    pub wall_s: f64,
    /// Most loaded PE over the mean, after its moves.
    pub max_over_avg: f64,
    /// Elements it moves.
    pub migrations: usize,
    /// Weight of the communication between PEs after its moves.
    pub edge_cut: f64,
    /// Its modelled cost on the machine.
    pub cost: DecisionCost,
    /// That cost in seconds under the network model and the calibrated step time.
    pub modelled_s: f64,
}

/// The strategies compared on one synthetic input.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleReport {
    /// PEs.
    pub pes: usize,
    /// Elements.
    pub objs: usize,
    /// Most loaded PE over the mean before balancing.
    pub before_max_over_avg: f64,
    /// Communication between PEs before balancing.
    pub before_edge_cut: f64,
    /// Nanoseconds per modelled compute step: the first strategy's wall time over
    /// its steps, so modelled compute is in this machine's time.
    pub ns_per_op: f64,
    /// One row per strategy, in the order asked.
    pub rows: Vec<ScaleRow>,
}

/// Why a comparison could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScaleError {
    /// A strategy name is not one of this crate's.
    #[error(transparent)]
    Unknown(#[from] UnknownStrategy),
    /// A strategy returned a decision the runtime would refuse (a bug in it).
    #[error("strategy {strategy} returned an invalid decision: {error}")]
    BadDecision {
        /// The strategy.
        strategy: String,
        /// What was wrong.
        error: DecisionError,
    },
}

/// What to compare on: the input's shape and the strategies' parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleInput {
    /// PEs.
    pub pes: usize,
    /// Elements.
    pub objs: usize,
    /// Ratio of the heaviest PE's base load to the lightest's.
    pub skew: f64,
    /// Seed of the loads (and of the strategies, through `params`).
    pub seed: u64,
    /// The communication graph.
    pub topology: Topology,
}

/// Run each of `names` on the synthetic input and gather the figures; the first
/// name calibrates the step time (greedy, as the reference, by convention).
pub fn scale_report(
    input: &ScaleInput,
    names: &[&str],
    params: &StrategyParams,
    net: &NetworkModel,
) -> Result<ScaleReport, ScaleError> {
    let stats = skewed(
        input.pes,
        input.objs,
        input.skew,
        input.seed,
        input.topology,
    );
    let mut rows = Vec::new();
    let mut ns_per_op = None;
    for &name in names {
        let strategy = build(name, params)?;
        let start = Instant::now();
        let plan = strategy.plan(&stats);
        let wall_s = start.elapsed().as_secs_f64();
        let moves =
            check_decision(&stats, plan.moves).map_err(|error| ScaleError::BadDecision {
                strategy: name.to_string(),
                error,
            })?;
        let ns = *ns_per_op.get_or_insert(wall_s * 1e9 / plan.cost.critical_ops.max(1) as f64);
        rows.push(ScaleRow {
            strategy: name.to_string(),
            wall_s,
            max_over_avg: max_over_avg(&loads_after(&stats, &moves)),
            migrations: moves.len(),
            edge_cut: edge_cut(&stats, &moves),
            modelled_s: plan.cost.modelled_ns(net, ns) * 1e-9,
            cost: plan.cost,
        });
    }
    Ok(ScaleReport {
        pes: input.pes,
        objs: input.objs,
        before_max_over_avg: stats.max_over_avg(),
        before_edge_cut: edge_cut(&stats, &[]),
        ns_per_op: ns_per_op.unwrap_or(0.0),
        rows,
    })
}

impl ScaleReport {
    /// The row of `strategy`.
    pub fn row(&self, strategy: &str) -> Option<&ScaleRow> {
        self.rows.iter().find(|r| r.strategy == strategy)
    }
}

/// Statistics a benchmark can pass to other strategies of its own.
pub fn input_stats(input: &ScaleInput) -> LoadStats {
    skewed(
        input.pes,
        input.objs,
        input.skew,
        input.seed,
        input.topology,
    )
}

impl fmt::Display for ScaleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} PEs, {} elements: max/avg {:.3}, edge cut {:.3e} before; {:.2} ns per step",
            self.pes, self.objs, self.before_max_over_avg, self.before_edge_cut, self.ns_per_op
        )?;
        writeln!(
            f,
            "{:<13} {:>10} {:>12} {:>12} {:>6} {:>8} {:>10} {:>10}",
            "strategy",
            "wall ms",
            "modelled ms",
            "crit. steps",
            "hops",
            "max/avg",
            "migrations",
            "edge cut"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<13} {:>10.2} {:>12.3} {:>12} {:>6} {:>8.3} {:>10} {:>10.3e}",
                r.strategy,
                r.wall_s * 1e3,
                r.modelled_s * 1e3,
                r.cost.critical_ops,
                r.cost.critical_hops,
                r.max_over_avg,
                r.migrations,
                r.edge_cut
            )?;
        }
        Ok(())
    }
}
