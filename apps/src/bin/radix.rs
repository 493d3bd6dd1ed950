//! radix: parallel LSD radix sort with the histogram allgather overlapped with the
//! local key movement, against the blocking baseline, per allgather algorithm.
#![forbid(unsafe_code)]

use chorus_apps::bench::report::print;
use chorus_apps::cli;
use chorus_apps::programs::radix::{parse_algorithms, Args, KeyType};
use chorus_apps::radix::summary::compare_reps;
use chorus_apps::radix::{self, Outcome, RadixParams, Summary};
use chorus_core::{Config, Layer, SimPreset};
use chorus_sections::collectives::Allgather;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Args = cli::parse_program();
    cli::exit_status("radix", run(&args))
}

fn default_key_ns(config: &Config) -> f64 {
    match (config.layer, config.sim.chosen_preset()) {
        (Layer::Sim, SimPreset::Bgp) => 10.0,
        (Layer::Sim, _) => 2.0,
        (Layer::Threads | Layer::Mpi, _) => 0.0,
    }
}

fn run(args: &Args) -> Result<bool, String> {
    let algorithms = parse_algorithms(&args.allgather, args.ports)?;
    let key_ns = args.key_ns.unwrap_or_else(|| default_key_ns(&args.chorus));
    let base = RadixParams {
        radix_bits: args.radix_bits,
        keys_per_pe: args.keys_per_pe,
        chunk_keys: args.chunk_keys,
        key_ns,
        allgather: Allgather::Auto,
        blocking: args.blocking,
    };
    base.validate()?;
    let job = chorus_apps::job::JobProcess::start(&args.chorus)?;
    let speaks = job.speaks;
    let mut outcomes = Vec::new();
    for &allgather in &algorithms {
        let params = RadixParams { allgather, ..base };
        let config = match algorithms.len() {
            1 => args.chorus.clone(),
            _ => radix::measure::tagged(&args.chorus, &allgather.name().replace('/', "")),
        };
        if speaks && !args.json {
            let pes = match args.chorus.layer {
                Layer::Mpi => "one PE per rank".to_string(),
                _ => format!("{} PEs", args.chorus.pes),
            };
            eprintln!(
                "sorting with allgather {} on {pes} ({})...",
                allgather.name(),
                args.chorus.layer.name()
            );
        }
        let outcome = match (args.key, args.blocking || args.no_baseline) {
            (KeyType::U32, false) => compare_reps::<u32>(&config, params, args.reps),
            (KeyType::U64, false) => compare_reps::<u64>(&config, params, args.reps),
            (KeyType::U32, true) => radix::run::<u32>(&config, params).map(Outcome::One),
            (KeyType::U64, true) => radix::run::<u64>(&config, params).map(Outcome::One),
        }
        .map_err(|e| format!("allgather {}: {e}", allgather.name()))?;
        outcomes.push((allgather, outcome));
    }
    let summary = Summary {
        outcomes,
        keys_per_pe: args.keys_per_pe,
        radix_bits: args.radix_bits,
        chunk_keys: args.chunk_keys,
        key_ns,
        layer: args.chorus.layer,
    };
    if speaks {
        print(&summary, args.json);
    }
    if !summary.sorted() {
        eprintln!("radix: the keys did NOT come out sorted");
    }
    Ok(summary.sorted())
}
