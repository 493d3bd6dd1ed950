//! jacobi2d's command line.

use crate::jacobi2d::JacobiArgs;
use chorus_core::Config;
use clap::Parser;

/// The command line of jacobi2d.
#[derive(Parser)]
#[command(
    version,
    about = "Jacobi2D over a 2-D array of blocks with a moving hot spot, balanced by --array-lb",
    after_help = "Each block charges --cell-ns per cell per step (ctx.work: virtual time on \
sim, spent on threads and mpi), --hot-factor times more inside a square of --hot-blocks \
blocks that moves one block down and right every --drift-every steps. Every block calls \
at_sync after each step and goes on in resume_from_sync. The final grid's checksum (over \
the cells' bit patterns) must equal a serial run's; the exit status says whether it did. \
The ideal time per step is the compute spread evenly over the PEs, plus on sim the CPU \
costs of the ghosts crossing the sides of a square patch of blocks per PE and one ghost's \
latency."
)]
pub struct Args {
    #[command(flatten)]
    pub jacobi: JacobiArgs,
    #[command(flatten)]
    pub checkpoint: crate::checkpointing::CheckpointArgs,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

impl super::ProgramArgs for Args {
    const NAME: &'static str = "jacobi2d";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        self.jacobi.params().validate().map_err(|e| e.to_string())
    }
}
