//! lb-test's command line.

use crate::cli;
use crate::lbtest::{LbTestParams, LoadDist, Topology};
use chorus_core::Config;
use clap::Parser;

/// The command line of lb-test.
#[derive(Parser)]
#[command(
    version,
    about = "A synthetic load-balancing benchmark after Charm++'s lb_test, balanced by --array-lb",
    after_help = "Every step each object sends a token to each neighbour and charges its load \
(ctx.work: virtual time on sim, spent on threads and mpi), then calls at_sync once it has \
every neighbour's token. Loads are drawn from --seed per object and phase (--change-every \
steps): uniform between --base-us and --ratio times it, skew (a random tenth of the objects \
--ratio times heavier) or linear (a ramp along the objects from a random start). The sum of \
every receipt must equal the serial one; the exit status says whether it did."
)]
pub struct Args {
    /// Objects in the array.
    #[arg(long, default_value_t = 256)]
    pub objects: usize,
    /// Steps.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub steps: u32,
    /// The objects' graph.
    #[arg(long, value_enum, default_value_t = Topology::Ring)]
    pub topology: Topology,
    /// Neighbours per object of the random graph (even) [default: 4]; only with
    /// --topology random.
    #[arg(long)]
    pub degree: Option<usize>,
    /// The load distribution.
    #[arg(long, value_enum, default_value_t = LoadDist::Skew)]
    pub load: LoadDist,
    /// The lightest load, microseconds.
    #[arg(long, default_value_t = 50.0, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e7))]
    pub base_us: f64,
    /// The heaviest load over the lightest.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| cli::f64_in(s, 1.0, 1e4))]
    pub ratio: f64,
    /// Steps between changes of the loads.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub change_every: u32,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

/// `--degree` when none is given.
const DEFAULT_DEGREE: usize = 4;

impl super::ProgramArgs for Args {
    const NAME: &'static str = "lb-test";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        if let (Some(d), false) = (self.degree, self.topology == Topology::Random) {
            return Err(format!(
                "--degree {d} has no effect with --topology {:?}: it sets the random graph's degree only",
                self.topology
            ));
        }
        self.params().validate().map_err(|e| e.to_string())
    }
}

impl Args {
    /// The run's parameters (checked by `usage`).
    pub fn params(&self) -> LbTestParams {
        LbTestParams {
            objects: self.objects,
            steps: self.steps,
            topology: self.topology,
            degree: self.degree.unwrap_or(DEFAULT_DEGREE),
            load: self.load,
            base_us: self.base_us,
            ratio: self.ratio,
            change_every: self.change_every,
            seed: self.chorus.seed,
        }
    }
}
