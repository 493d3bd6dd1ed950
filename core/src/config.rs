//! Settings shared by every chorus program, from flags or `CHORUS_*` variables.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Which machine layer runs the PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Layer {
    /// One OS thread per PE in this process.
    Threads,
}

impl Layer {
    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Threads => "threads",
        }
    }
}

/// What the runtime does when a message cannot be delivered or a handler fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ErrorPolicy {
    /// End the job; `Runtime::run` returns the first error.
    Abort,
    /// Log the error, drop the message, go on; errors are listed in the run report.
    Drop,
}

/// How `ctx.work(d)` spends `d` on real machine layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkMode {
    /// Sleep, leaving the core to other PEs (right when PEs outnumber cores).
    Sleep,
    /// Busy-wait, as real computation would.
    Spin,
}

/// Job configuration; flatten it into an app's clap parser.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Number of processing elements.
    #[arg(long, env = "CHORUS_PES", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub pes: u32,
    /// Machine layer to run on.
    #[arg(long, env = "CHORUS_LAYER", value_enum, default_value_t = Layer::Threads)]
    pub layer: Layer,
    /// Seed for everything random in the job.
    #[arg(long, env = "CHORUS_SEED", default_value_t = 1)]
    pub seed: u64,
    /// Write a Chrome/Perfetto trace of the run to this file.
    #[arg(long, env = "CHORUS_TRACE")]
    pub trace: Option<PathBuf>,
    /// What to do on an undeliverable message or a failed handler.
    #[arg(long = "on-error", env = "CHORUS_ON_ERROR", value_enum, default_value_t = ErrorPolicy::Abort)]
    pub on_error: ErrorPolicy,
    /// How ctx.work() spends time on real layers.
    #[arg(long, env = "CHORUS_WORK", value_enum, default_value_t = WorkMode::Sleep)]
    pub work: WorkMode,
    /// Arity of the spanning tree used by broadcasts, reductions and quiescence waves.
    #[arg(long = "tree-arity", env = "CHORUS_TREE_ARITY", default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub tree_arity: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            pes: 4,
            layer: Layer::Threads,
            seed: 1,
            trace: None,
            on_error: ErrorPolicy::Abort,
            work: WorkMode::Sleep,
            tree_arity: 4,
        }
    }
}

impl Config {
    /// The default configuration with `pes` PEs.
    pub fn with_pes(pes: u32) -> Self {
        Config {
            pes,
            ..Config::default()
        }
    }

    /// Check values that the parser cannot (for configurations built in code).
    pub fn validate(&self) -> Result<(), String> {
        if self.pes == 0 {
            return Err("--pes must be at least 1".into());
        }
        if !(2..=64).contains(&self.tree_arity) {
            return Err(format!(
                "--tree-arity must be in 2..=64, got {}",
                self.tree_arity
            ));
        }
        Ok(())
    }
}
