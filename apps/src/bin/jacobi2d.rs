//! jacobi2d: a 5-point stencil over a 2-D chare array of blocks with a moving hot
//! spot, balanced by `--array-lb`, checked exactly against a serial run.
#![forbid(unsafe_code)]

use chorus_apps::balancing::main_of;
use chorus_apps::cli;
use chorus_apps::jacobi2d;
use chorus_apps::programs::jacobi2d::Args;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Args = cli::parse_program();
    let params = args.jacobi.params();
    let plan = args.checkpoint.plan(args.chorus.restart.is_some());
    let run = || jacobi2d::run_checkpointed(&args.chorus, params, plan);
    main_of(
        "jacobi2d",
        &args.chorus,
        args.json,
        run,
        jacobi2d::JacobiOutcome::exact,
    )
}
