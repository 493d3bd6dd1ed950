//! jacobi2d: a 5-point stencil over a 2-D chare array of blocks with a moving hot
//! spot, balanced by `--array-lb`, checked exactly against a serial run.
#![forbid(unsafe_code)]

use chorus_apps::balancing::main_of;
use chorus_apps::cli;
use chorus_apps::jacobi2d::{self, JacobiArgs};
use chorus_core::Config;
use clap::Parser;
use std::process::ExitCode;

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
struct Args {
    #[command(flatten)]
    jacobi: JacobiArgs,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    chorus: Config,
}

fn main() -> ExitCode {
    let args: Args = cli::parse(|a: &Args| Some(a.chorus.clone()));
    let params = args.jacobi.params();
    if let Err(e) = params.validate() {
        eprintln!("jacobi2d: {e}");
        return ExitCode::from(2);
    }
    let run = || jacobi2d::run(&args.chorus, params);
    main_of(
        "jacobi2d",
        &args.chorus,
        args.json,
        run,
        jacobi2d::JacobiOutcome::exact,
    )
}
