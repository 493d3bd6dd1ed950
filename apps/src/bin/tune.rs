//! chorus-tune: the performance-guideline tuner of the section collectives.

use chorus_apps::tune::{report, run, TuneArgs};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: TuneArgs = chorus_apps::cli::parse_program();
    chorus_apps::cli::exit_status("chorus-tune", tune(&args).map(|()| true))
}

fn tune(args: &TuneArgs) -> Result<(), String> {
    let job = chorus_apps::job::JobProcess::start(&args.chorus)?;
    let (speaks, pes) = (job.speaks, job.pes);
    let layer = args.chorus.layer.name();
    let progress = |what: &str| {
        if speaks && !args.json {
            eprintln!("{what} ({pes} PEs on {layer}, {} runs)...", args.runs);
        }
    };
    let outcome = run(args, pes, speaks, &progress)?;
    if speaks {
        if args.json {
            println!("{}", report::to_json(&outcome, pes, layer));
        } else {
            report::print_tables(&outcome, pes, layer, args.tune_profile.is_none());
        }
    }
    Ok(())
}
