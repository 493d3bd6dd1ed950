//! Jacobi2D: a 5-point stencil over a 2-D chare array of blocks with a moving hot
//! spot (blocks in a square cost `hot_factor` times more per step, and the square
//! drifts), balanced by the strategy `--array-lb` names. Its result is checked
//! exactly against a serial run of the same arithmetic in the same order.

pub mod block;
pub mod grid;
pub mod params;

use crate::balancing::{json_num, register_array_strategies, Collector, Figures, RunError};
use crate::bench::report::Report;
use block::{Block, BlockInit, BlockMsg};
use chorus_core::{ArrayMap, Config, Layer, NetworkModel, Registry, Runtime};
pub use params::{JacobiArgs, JacobiParams, ParamError};
use serde_json::json;

/// Why a Jacobi2D run produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum JacobiError {
    /// The parameters cannot run.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// The job failed or published no result.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// What one Jacobi2D run measured, beside the serial reference.
#[derive(Debug, Clone)]
pub struct JacobiOutcome {
    /// What was run.
    pub params: JacobiParams,
    /// The layer it ran on.
    pub layer: Layer,
    /// The `--array-lb` strategy.
    pub strategy: String,
    /// The run's figures.
    pub figures: Figures,
    /// The serial run's checksum.
    pub expected: u64,
    /// The ideal time per step (`JacobiParams::ideal_step_s`; compute only off sim).
    pub ideal_step_s: f64,
}

impl JacobiOutcome {
    /// Whether the grid equals the serial run's, bit for bit.
    pub fn exact(&self) -> bool {
        self.figures.checksum == self.expected
    }

    /// Seconds per step (virtual on sim).
    pub fn step_s(&self) -> f64 {
        self.figures.seconds / f64::from(self.params.steps.max(1))
    }
}

/// The network model the ideal counts communication with: sim's, none elsewhere.
pub fn ideal_model(config: &Config) -> Option<NetworkModel> {
    (config.layer == Layer::Sim).then(|| NetworkModel::from_args(&config.sim))
}

/// Run Jacobi2D under `config` and compare its grid with the serial run's.
pub fn run(config: &Config, params: JacobiParams) -> Result<JacobiOutcome, JacobiError> {
    params.validate()?;
    let mut reg = Registry::new();
    register_array_strategies(&mut reg);
    let entries = Collector::register(&mut reg);
    reg.migratable::<Block>("chorus_apps::jacobi2d::Block");
    let nb = params.blocks_per_side();
    let report = Runtime::new(reg, config.clone())
        .run(move |ctx| {
            let results = Collector::start(ctx, entries);
            let init = BlockInit { params, results };
            let blocks = ctx.create_array_2d::<Block>((nb, nb), init, ArrayMap::Block);
            blocks.broadcast(ctx, BlockMsg::Step);
        })
        .map_err(RunError::from)?;
    let figures = Figures::read(&report)?;
    let ideal_step_s = params.ideal_step_s(figures.pes, ideal_model(config).as_ref());
    Ok(JacobiOutcome {
        params,
        layer: config.layer,
        strategy: config.array_lb.clone(),
        figures,
        expected: grid::serial_checksum(&params),
        ideal_step_s,
    })
}

impl Report for JacobiOutcome {
    fn json(&self) -> String {
        let p = &self.params;
        json!({
            "app": "jacobi2d",
            "layer": self.layer.name(),
            "pes": self.figures.pes,
            "array_lb": self.strategy,
            "grid": p.grid,
            "block": p.block,
            "steps": p.steps,
            "hot_factor": json_num(p.hot_factor),
            "hot_blocks": p.hot_blocks,
            "drift_every": p.drift_every,
            "checksum": format!("{:016x}", self.figures.checksum),
            "expected": format!("{:016x}", self.expected),
            "exact": self.exact(),
            "step_s": json_num(self.step_s()),
            "ideal_step_s": json_num(self.ideal_step_s),
            "max_over_avg_run": json_num(self.figures.run_max_over_avg()),
            "max_over_avg_last": json_num(self.figures.last_max_over_avg()),
        })
        .to_string()
    }

    fn table(&self) -> String {
        let p = &self.params;
        let f = &self.figures;
        let ideal_of = match self.layer {
            Layer::Sim => "compute / PEs + communication",
            _ => "compute / PEs",
        };
        format!(
            "jacobi2d {g}x{g} in {b}x{b} blocks, {s} steps, hot spot {h}x{h} blocks x{k} drifting every {d}, {pes} PEs ({layer}), --array-lb {lb}\n\
             grid checksum {c:016x}, serial {e:016x}: {verdict}\n\
             time per step {t:.3} ms, ideal {i:.3} ms ({ideal_of}), ratio {r:.2}\n\
             max/avg PE load {ma:.2} over the run, {ml:.2} in the last step\n",
            g = p.grid,
            b = p.block,
            s = p.steps,
            h = p.hot_blocks,
            k = p.hot_factor,
            d = p.drift_every,
            pes = f.pes,
            layer = self.layer.name(),
            lb = self.strategy,
            c = f.checksum,
            e = self.expected,
            verdict = if self.exact() { "exact" } else { "DIFFERENT" },
            t = self.step_s() * 1e3,
            i = self.ideal_step_s * 1e3,
            r = self.step_s() / self.ideal_step_s,
            ma = f.run_max_over_avg(),
            ml = f.last_max_over_avg(),
        )
    }
}
