//! chorus-tune: the performance-guideline tuner of the section collectives.

use chorus_apps::tune::{report, run, TuneArgs};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = TuneArgs::parse();
    match tune(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chorus-tune: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tune(args: &TuneArgs) -> Result<(), String> {
    #[cfg(feature = "mpi")]
    let session = match args.chorus.layer {
        chorus_core::Layer::Mpi => {
            Some(chorus_core::MpiSession::init().map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    #[cfg(feature = "mpi")]
    let (speaks, pes) = match &session {
        Some(s) => {
            use mpi::topology::Communicator;
            (s.world().rank() == 0, s.world().size() as u32)
        }
        None => (true, args.chorus.pes),
    };
    #[cfg(not(feature = "mpi"))]
    let (speaks, pes) = (true, args.chorus.pes);
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
