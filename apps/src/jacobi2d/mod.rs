//! Jacobi2D: a 5-point stencil over a 2-D chare array of blocks with a moving hot
//! spot (blocks in a square cost `hot_factor` times more per step, and the square
//! drifts), balanced by the strategy `--array-lb` names. Its result is checked
//! exactly against a serial run of the same arithmetic in the same order.
#![forbid(unsafe_code)]

pub mod block;
pub mod grid;
pub mod params;

use crate::balancing::{json_num, run_app_with, AppError, Checked};
use crate::bench::report::Report;
use crate::checkpointing::CheckpointPlan;
use block::{Block, BlockEntries, BlockInit, BlockMsg};
use chorus_core::{ArrayMap, Config, Layer, NetworkModel};
pub use params::{JacobiArgs, JacobiParams, ParamError};
use serde_json::json;

/// Why a Jacobi2D run produced no outcome.
pub type JacobiError = AppError<ParamError>;

/// What one Jacobi2D run measured, beside the serial reference.
#[derive(Debug, Clone)]
pub struct JacobiOutcome {
    /// What was run.
    pub params: JacobiParams,
    /// The run's figures and the serial run's checksum.
    pub run: Checked,
    /// The ideal time per step (`JacobiParams::ideal_step_s`; compute only off sim).
    pub ideal_step_s: f64,
}

impl JacobiOutcome {
    /// Whether the grid equals the serial run's, bit for bit.
    pub fn exact(&self) -> bool {
        self.run.exact()
    }

    /// Seconds per step (virtual on sim).
    pub fn step_s(&self) -> f64 {
        self.run.step_s(self.params.steps)
    }
}

/// The network model the ideal counts communication with: sim's, none elsewhere.
pub fn ideal_model(config: &Config) -> Option<NetworkModel> {
    (config.layer == Layer::Sim).then(|| NetworkModel::from_args(&config.sim))
}

/// Run Jacobi2D under `config` and compare its grid with the serial run's.
pub fn run(config: &Config, params: JacobiParams) -> Result<JacobiOutcome, JacobiError> {
    run_checkpointed(config, params, CheckpointPlan::none())
}

/// [`run`], checkpointing as `plan` says; a job started with `--restart` goes on
/// from the checkpoint (made with the same parameters) instead of from step 0.
pub fn run_checkpointed(
    config: &Config,
    params: JacobiParams,
    plan: CheckpointPlan,
) -> Result<JacobiOutcome, JacobiError> {
    params.validate().map_err(AppError::Params)?;
    let nb = params.blocks_per_side();
    let figures = run_app_with::<Block, BlockEntries>(
        config,
        "chorus_apps::jacobi2d::Block",
        BlockEntries::register,
        move |ctx, results, entries| {
            let restored = ctx.restored_arrays::<Block, (usize, usize)>();
            if let Some(blocks) = restored.first() {
                return blocks.broadcast(ctx, BlockMsg::Restart { params, plan });
            }
            let init = BlockInit {
                params,
                results,
                plan,
                entries,
            };
            let blocks = ctx.create_array_2d::<Block>((nb, nb), init, ArrayMap::Block);
            blocks.broadcast(ctx, BlockMsg::Step);
        },
    )?;
    let ideal_step_s = params.ideal_step_s(figures.pes, ideal_model(config).as_ref());
    Ok(JacobiOutcome {
        params,
        run: Checked::new(config, figures, grid::serial_checksum(&params)),
        ideal_step_s,
    })
}

impl Report for JacobiOutcome {
    fn json(&self) -> String {
        let p = &self.params;
        self.run.json_with(json!({
                "app": "jacobi2d",
                "grid": p.grid,
                "block": p.block,
                "steps": p.steps,
                "hot_factor": json_num(p.hot_factor),
                "hot_blocks": p.hot_blocks,
                "drift_every": p.drift_every,
                "step_s": json_num(self.step_s()),
                "ideal_step_s": json_num(self.ideal_step_s),
        }))
    }

    fn table(&self) -> String {
        let p = &self.params;
        let ideal_of = match self.run.layer {
            Layer::Sim => "compute / PEs + communication",
            _ => "compute / PEs",
        };
        format!(
            "jacobi2d {g}x{g} in {b}x{b} blocks, {s} steps, hot spot {h}x{h} blocks x{k} drifting every {d}, {pes} PEs ({layer}), --array-lb {lb}\n\
             {verdict}\
             time per step {t:.3} ms, ideal {i:.3} ms ({ideal_of}), ratio {r:.2}\n\
             {loads}",
            g = p.grid,
            b = p.block,
            s = p.steps,
            h = p.hot_blocks,
            k = p.hot_factor,
            d = p.drift_every,
            pes = self.run.figures.pes,
            layer = self.run.layer.name(),
            lb = self.run.strategy,
            verdict = self.run.verdict_line("grid"),
            t = self.step_s() * 1e3,
            i = self.ideal_step_s * 1e3,
            r = self.step_s() / self.ideal_step_s,
            loads = self.run.load_line(),
        )
    }
}
