//! mcmc's command line.

use chorus_core::Config;
use chorus_lb::{StrategySpec, Workload};
use clap::Parser;

/// The command line of mcmc.
#[derive(Parser)]
#[command(
    version,
    about = "MCMC walker groups load-balanced by none, collective regrouping or asynchronous merge"
)]
pub struct Args {
    /// PEs per initial walker group (G).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub group_size: u32,
    /// Cost of one work item on one PE, in ms (T), above 0 and at most 3600000 (an
    /// hour) [default: 100 on sim, 40 elsewhere].
    #[arg(long, value_parser = |s: &str| crate::cli::positive_f64_up_to(s, 3.6e6))]
    pub item_ms: Option<f64>,
    /// Chain lengths: `cyclic` (S = 10 * (leader mod 32)) or `random` (from --seed).
    #[arg(long, default_value = "cyclic", value_parser = workload)]
    pub workload: String,
    /// Strategies: none, collective:I, async, or all (none, collective:1,16,128, async)
    /// [default: all]. Not with --checkpoint-every or --restart, which run the chains
    /// as a chare array balanced by --array-lb.
    #[arg(long, value_parser = strategies)]
    pub lb: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    #[command(flatten)]
    pub checkpoint: crate::checkpointing::CheckpointArgs,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

impl Args {
    /// The strategies `--lb` names.
    pub fn strategies(&self) -> &str {
        self.lb.as_deref().unwrap_or("all")
    }

    /// True if the run checkpoints or restarts: it then runs the chains kernel
    /// (`crate::chains`).
    pub fn checkpointed(&self) -> bool {
        self.checkpoint.checkpoint_every.is_some() || self.chorus.restart.is_some()
    }
}

/// `--lb` checked as it is parsed, so a bad strategy is a usage error.
fn strategies(s: &str) -> Result<String, String> {
    StrategySpec::parse_list(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// `--workload` checked as it is parsed, so a bad one is a usage error.
fn workload(s: &str) -> Result<String, String> {
    s.parse::<Workload>()
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

impl super::ProgramArgs for Args {
    const NAME: &'static str = "mcmc";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        if let (true, Some(lb)) = (self.checkpointed(), &self.lb) {
            return Err(format!(
                "--lb {lb} with --checkpoint-every or --restart: walker groups cannot be \
                 checkpointed (their sections and driver are not saved); a checkpointed run \
                 walks the chains as a chare array, balanced by --array-lb"
            ));
        }
        // Under mpirun the PEs are the ranks', checked when the job starts.
        if self.chorus.layer != chorus_core::Layer::Mpi && self.group_size > self.chorus.pes {
            return Err(format!(
                "--group-size {} is more than the job's --pes {}: a walker group lives on distinct PEs",
                self.group_size, self.chorus.pes
            ));
        }
        Ok(())
    }
}
