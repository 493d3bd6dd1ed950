//! lb-test: objects on a ring, mesh or random graph exchange tokens and compute
//! loads that change every few steps, balanced by `--array-lb`; the checksum of what
//! every object received is checked against a serial computation.
#![forbid(unsafe_code)]

use chorus_apps::balancing::main_of;
use chorus_apps::cli;
use chorus_apps::lbtest;
use chorus_apps::programs::lb_test::Args;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Args = cli::parse_program();
    let params = args.params();
    let run = || lbtest::run(&args.chorus, params);
    main_of(
        "lb-test",
        &args.chorus,
        args.json,
        run,
        lbtest::LbTestOutcome::exact,
    )
}
