//! lb-test: objects on a ring, mesh or random graph exchange tokens and compute
//! loads that change every few steps, balanced by `--array-lb`; the checksum of what
//! every object received is checked against a serial computation.
#![forbid(unsafe_code)]

use chorus_apps::balancing::main_of;
use chorus_apps::cli;
use chorus_apps::lbtest::{self, LbTestParams, LoadDist, Topology};
use chorus_core::Config;
use clap::Parser;
use std::process::ExitCode;

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
struct Args {
    /// Objects in the array.
    #[arg(long, default_value_t = 256)]
    objects: usize,
    /// Steps.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    steps: u32,
    /// The objects' graph.
    #[arg(long, value_enum, default_value_t = Topology::Ring)]
    topology: Topology,
    /// Neighbours per object of the random graph (even).
    #[arg(long, default_value_t = 4)]
    degree: usize,
    /// The load distribution.
    #[arg(long, value_enum, default_value_t = LoadDist::Skew)]
    load: LoadDist,
    /// The lightest load, microseconds.
    #[arg(long, default_value_t = 50.0, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e7))]
    base_us: f64,
    /// The heaviest load over the lightest.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| cli::f64_in(s, 1.0, 1e4))]
    ratio: f64,
    /// Steps between changes of the loads.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    change_every: u32,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    chorus: Config,
}

fn main() -> ExitCode {
    let args: Args = cli::parse(|a: &Args| Some(a.chorus.clone()));
    let params = LbTestParams {
        objects: args.objects,
        steps: args.steps,
        topology: args.topology,
        degree: args.degree,
        load: args.load,
        base_us: args.base_us,
        ratio: args.ratio,
        change_every: args.change_every,
        seed: args.chorus.seed,
    };
    if let Err(e) = params.validate() {
        eprintln!("lb-test: {e}");
        return ExitCode::from(2);
    }
    let run = || lbtest::run(&args.chorus, params);
    main_of(
        "lb-test",
        &args.chorus,
        args.json,
        run,
        lbtest::LbTestOutcome::exact,
    )
}
