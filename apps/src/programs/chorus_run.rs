//! chorus-run's command line.

use chorus_core::Config;
use std::ffi::OsString;
use std::path::PathBuf;

/// The flags of `chorus-run`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    version,
    about = "Run a checkpointing chorus program under mpirun and restart it from its newest complete checkpoint when the job fails",
    after_help = "The program must checkpoint (mcmc or jacobi2d with --checkpoint-every N \
--checkpoint-dir DIR): chorus-run reads DIR from its arguments, and a restart adds \
--restart DIR to them. Example: chorus-run -n 4 --ranks-after-failure 2 -- \
target/release/jacobi2d --layer mpi --steps 200 --checkpoint-every 20 --checkpoint-dir ck"
)]
pub struct RunArgs {
    /// Ranks of the first attempt.
    #[arg(short = 'n', long = "ranks", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ranks: u32,
    /// Ranks of every attempt after a failure (at most --ranks) [default: --ranks].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ranks_after_failure: Option<u32>,
    /// Restarts allowed before giving up.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub max_restarts: u32,
    /// The mpirun to run.
    #[arg(long, default_value = "mpirun", value_parser = crate::checkpointing::named_path)]
    pub mpirun: PathBuf,
    /// A flag for mpirun, before the program (repeat for several), e.g.
    /// --mpirun-arg=--oversubscribe.
    #[arg(long, allow_hyphen_values = true)]
    pub mpirun_arg: Vec<String>,
    /// The program and its arguments.
    #[arg(required = true, last = true)]
    pub program: Vec<OsString>,
}

impl super::ProgramArgs for RunArgs {
    const NAME: &'static str = "chorus-run";

    fn job(&self) -> Option<Config> {
        None
    }

    fn usage(&self) -> Result<(), String> {
        match self.ranks_after_failure {
            Some(after) if after > self.ranks => Err(format!(
                "--ranks-after-failure {after} is more than --ranks {}: a restart runs on the same or fewer ranks",
                self.ranks
            )),
            _ => Ok(()),
        }
    }
}
