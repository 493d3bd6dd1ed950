//! What a Jacobi2D run is asked to do, checked before it starts, and the ideal time
//! per step it is measured against.

use chorus_core::NetworkModel;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The largest grid side, in cells (the serial check holds the whole grid).
pub const MAX_GRID: usize = 1 << 14;

/// The grid, its blocks and the moving hot spot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JacobiParams {
    /// Cells per side of the whole grid.
    pub grid: usize,
    /// Cells per side of one block (one array element); divides `grid`.
    pub block: usize,
    /// Stencil steps.
    pub steps: u32,
    /// Compute charged per cell per step, ns (outside the hot spot).
    pub cell_ns: f64,
    /// How many times more a cell in the hot spot costs.
    pub hot_factor: f64,
    /// Side of the hot square, in blocks (0: no hot spot).
    pub hot_blocks: usize,
    /// Steps between moves of the hot square (one block down and right each time).
    pub drift_every: u32,
    /// Blocks tell the balancer the load of their next step (`predict_load`) and the
    /// first balancing step comes before step 0, instead of balancing the load
    /// measured in the step before.
    pub predict_load: bool,
}

/// The flags of a Jacobi2D run, shared by `jacobi2d` and `chorus-bench lb`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Jacobi2D")]
pub struct JacobiArgs {
    /// Cells per side of the grid.
    #[arg(long, default_value_t = 256)]
    pub grid: usize,
    /// Cells per side of a block (one array element); divides --grid.
    #[arg(long, default_value_t = 32)]
    pub block: usize,
    /// Stencil steps.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub steps: u32,
    /// Compute charged per cell per step, ns.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| crate::cli::f64_in(s, 0.0, 1e6))]
    pub cell_ns: f64,
    /// How many times more a cell in the hot spot costs.
    #[arg(long, default_value_t = 4.0, value_parser = |s: &str| crate::cli::f64_in(s, 1.0, 1e4))]
    pub hot_factor: f64,
    /// Side of the hot square, in blocks (0: none).
    #[arg(long, default_value_t = 2)]
    pub hot_blocks: usize,
    /// Steps between moves of the hot square.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub drift_every: u32,
    /// Each block tells the balancer its next step's load (it knows where the hot
    /// spot will be, as an AMR or stencil code knows its refinement), and the first
    /// balancing step comes before step 0; without it the balancer uses the load
    /// measured in the step before each balancing step.
    #[arg(long)]
    pub predict_load: bool,
}

impl JacobiArgs {
    /// The parameters the flags ask for (unchecked: see `JacobiParams::validate`).
    pub fn params(&self) -> JacobiParams {
        JacobiParams {
            grid: self.grid,
            block: self.block,
            steps: self.steps,
            cell_ns: self.cell_ns,
            hot_factor: self.hot_factor,
            hot_blocks: self.hot_blocks,
            drift_every: self.drift_every,
            predict_load: self.predict_load,
        }
    }
}

/// Why Jacobi2D parameters cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// The grid or a block has no cells, or the grid is over the limit.
    #[error("--grid {grid} and --block {block}: both must be from 1 to {MAX_GRID}")]
    Size {
        /// The grid side asked for.
        grid: usize,
        /// The block side asked for.
        block: usize,
    },
    /// The blocks do not tile the grid.
    #[error("--block {block} does not divide --grid {grid}: give a grid that is a multiple of the block")]
    NotDivisible {
        /// The grid side.
        grid: usize,
        /// The block side.
        block: usize,
    },
    /// The hot square is wider than the grid of blocks.
    #[error(
        "--hot-blocks {hot} is wider than the {blocks} blocks per side; give at most {blocks}"
    )]
    HotTooLarge {
        /// The hot side asked for.
        hot: usize,
        /// Blocks per side.
        blocks: usize,
    },
}

impl JacobiParams {
    /// Blocks per side of the grid.
    pub fn blocks_per_side(&self) -> usize {
        self.grid / self.block
    }

    /// Check the sizes; `drift_every`, `cell_ns` and `hot_factor` are range-checked
    /// by their flags.
    pub fn validate(&self) -> Result<(), ParamError> {
        let (grid, block) = (self.grid, self.block);
        if !(1..=MAX_GRID).contains(&grid) || !(1..=MAX_GRID).contains(&block) {
            return Err(ParamError::Size { grid, block });
        }
        if !grid.is_multiple_of(block) {
            return Err(ParamError::NotDivisible { grid, block });
        }
        let blocks = self.blocks_per_side();
        if self.hot_blocks > blocks {
            return Err(ParamError::HotTooLarge {
                hot: self.hot_blocks,
                blocks,
            });
        }
        Ok(())
    }

    /// The compute one block charges for one step, hot or not.
    pub fn block_work(&self, hot: bool) -> Duration {
        let factor = if hot { self.hot_factor } else { 1.0 };
        let ns = (self.block * self.block) as f64 * self.cell_ns * factor;
        Duration::from_nanos(ns.round() as u64)
    }

    /// Compute charged per step over the whole grid, seconds (the hot square has the
    /// same number of blocks at every step).
    pub fn work_per_step_s(&self) -> f64 {
        let nb = self.blocks_per_side();
        let hot = self.hot_blocks * self.hot_blocks;
        let cold = nb * nb - hot;
        cold as f64 * self.block_work(false).as_secs_f64()
            + hot as f64 * self.block_work(true).as_secs_f64()
    }

    /// The ideal time per step on `pes` PEs: the compute spread evenly, plus, on sim
    /// with network `model` and more than one PE, the stencil's communication as if
    /// each PE held a square patch of blocks: the CPU costs of the ghosts crossing
    /// the patch's four sides (sent and received) and one ghost's latency. Without a
    /// model, compute only.
    pub fn ideal_step_s(&self, pes: usize, model: Option<&NetworkModel>) -> f64 {
        let pes = pes.max(1);
        let compute = self.work_per_step_s() / pes as f64;
        let Some(m) = model.filter(|_| pes > 1) else {
            return compute;
        };
        let nb = self.blocks_per_side();
        let side = ((nb * nb) as f64 / pes as f64).sqrt().max(1.0);
        let bytes = 8 * self.block as u64;
        let per_ghost_ns = m.send_overhead_ns + m.receive_ns(bytes) + m.handler_ns;
        let cpu_ns = 4.0 * side * per_ghost_ns as f64;
        let latency_ns = (m.alpha_ns + m.wire_ns(bytes)) as f64;
        compute + (cpu_ns + latency_ns) * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> JacobiParams {
        JacobiParams {
            grid: 64,
            block: 16,
            steps: 4,
            cell_ns: 10.0,
            hot_factor: 5.0,
            hot_blocks: 2,
            drift_every: 2,
            predict_load: false,
        }
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(params().validate(), Ok(()));
        let p = JacobiParams {
            block: 24,
            ..params()
        };
        assert_eq!(
            p.validate(),
            Err(ParamError::NotDivisible {
                grid: 64,
                block: 24
            })
        );
        let p = JacobiParams {
            hot_blocks: 5,
            ..params()
        };
        assert_eq!(
            p.validate(),
            Err(ParamError::HotTooLarge { hot: 5, blocks: 4 })
        );
        let p = JacobiParams {
            grid: 0,
            ..params()
        };
        assert!(matches!(p.validate(), Err(ParamError::Size { .. })));
    }

    #[test]
    fn the_ideal_spreads_the_hot_work() {
        // 12 cold blocks of 256 cells at 10 ns, 4 hot ones at 50 ns: 81,920 ns.
        let p = params();
        assert!((p.work_per_step_s() - 81_920e-9).abs() < 1e-15);
        assert!((p.ideal_step_s(4, None) - 20_480e-9).abs() < 1e-15);
        let ideal = NetworkModel::preset(chorus_core::SimPreset::Ideal);
        assert!((p.ideal_step_s(4, Some(&ideal)) - 20_480e-9).abs() < 1e-15);
        // Cluster, 2x2 blocks a PE: 8 ghosts of 128 B at 200 + 200 + 6 + 100 ns, and
        // one ghost's 1,000 + 10 ns on the wire.
        let cluster = NetworkModel::preset(chorus_core::SimPreset::Cluster);
        let comm = (8.0 * 506.0 + 1_010.0) * 1e-9;
        assert!((p.ideal_step_s(4, Some(&cluster)) - 20_480e-9 - comm).abs() < 1e-15);
        assert_eq!(p.ideal_step_s(1, Some(&cluster)), p.ideal_step_s(1, None));
    }
}
