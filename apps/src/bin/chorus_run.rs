//! chorus-run: run a checkpointing program under mpirun and restart it from its
//! newest complete checkpoint when the job fails (`chorus_apps::launcher`).
#![forbid(unsafe_code)]

use chorus_apps::programs::chorus_run::RunArgs;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: RunArgs = chorus_apps::cli::parse_program();
    let outcome = chorus_apps::launcher::run(&args).map(|_| true);
    chorus_apps::cli::exit_status("chorus-run", outcome.map_err(|e| e.to_string()))
}
