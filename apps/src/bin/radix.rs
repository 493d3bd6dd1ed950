//! radix: parallel LSD radix sort with the histogram allgather overlapped with the
//! local key movement, against the blocking baseline, per allgather algorithm.
#![forbid(unsafe_code)]

use chorus_apps::bench::report::print;
use chorus_apps::cli;
use chorus_apps::radix::summary::compare_reps;
use chorus_apps::radix::{self, Outcome, RadixParams, Summary};
use chorus_core::{Config, Layer, SimPreset};
use chorus_sections::collectives::Allgather;
use clap::{Parser, ValueEnum};
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KeyType {
    U32,
    U64,
}

#[derive(Parser)]
#[command(
    version,
    about = "Parallel LSD radix sort (Zagha-Blelloch) whose histogram allgather overlaps the local key movement",
    after_help = "By default every algorithm runs twice on the same input: the blocking baseline \
(allgather, then local key movement) and the overlapped sort (allgather started, keys moved \
locally in --chunk-keys chunks while it progresses, then waited for). From the two, overlap is \
computed the NBCBench way, from per-PE times summed over the rounds and averaged over PEs:\n  \
overlap = 1 - (t_comp+comm - t_comp) / t_comm\nwith t_comm the allgather alone and t_comp the \
local movement alone (both from the baseline) and t_comp+comm the overlapped phase. 1 = the \
allgather is hidden completely; it cannot exceed about t_comp / t_comm, so compare those two \
(printed) too. --blocking or --no-baseline run one of the two only (then there is no overlap); \
--reps N repeats the pair and reports the median of every figure.\n\n\
On --layer sim, local work costs only what is charged with ctx.work: --key-ns per key per pass \
(counting, moving, placing received keys) and per histogram entry summed. Its default, 10 ns on \
--sim-preset bgp (an 850 MHz core: ~8 cycles to load a key, extract its digit, bump a cursor and \
store it) and 2 ns otherwise, is what a key costs; on threads and mpi it defaults to 0 (the real \
work is the cost)."
)]
struct Args {
    /// Key type.
    #[arg(long, value_enum, default_value_t = KeyType::U32)]
    key: KeyType,
    /// Allgather algorithms, comma separated: bruck, standard-exchange, ring, auto, or all (the first three).
    #[arg(long, default_value = "auto")]
    allgather: String,
    /// Ports of the k-port algorithms (Bruck, standard exchange).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    ports: u32,
    /// Bits per digit (2^bits buckets per histogram; one round per digit).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=i64::from(radix::params::MAX_RADIX_BITS)))]
    radix_bits: u32,
    /// Keys each PE starts with (uniform random from --seed), 1..=2^30.
    #[arg(long, default_value_t = 10_000, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30).map(|v| v as usize))]
    keys_per_pe: usize,
    /// Keys moved per handler of the local movement (the allgather progresses between
    /// chunks: smaller chunks progress it sooner but pay a handler each).
    #[arg(long, default_value_t = 256, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30).map(|v| v as usize))]
    chunk_keys: usize,
    /// Compute charged per key per pass, ns [default: sim 10 (bgp) or 2; threads/mpi 0].
    #[arg(long, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e6))]
    key_ns: Option<f64>,
    /// Run each comparison this many times and report medians (noisy real layers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Run only the blocking baseline.
    #[arg(long, conflicts_with = "no_baseline")]
    blocking: bool,
    /// Run only the overlapped sort.
    #[arg(long)]
    no_baseline: bool,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    chorus: Config,
}

fn main() -> ExitCode {
    let args: Args = cli::parse(|a: &Args| Some(a.chorus.clone()));
    cli::exit_status("radix", run(&args))
}

fn parse_algorithms(list: &str, ports: u32) -> Result<Vec<Allgather>, String> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        match name {
            "bruck" => out.push(Allgather::Bruck(ports)),
            "standard-exchange" => out.push(Allgather::StandardExchange(ports)),
            "ring" => out.push(Allgather::Ring),
            "auto" => out.push(Allgather::Auto),
            "all" => out.extend([
                Allgather::Bruck(ports),
                Allgather::StandardExchange(ports),
                Allgather::Ring,
            ]),
            other => {
                return Err(format!(
                    "--allgather {other:?}: expected bruck, standard-exchange, ring, auto or all"
                ))
            }
        }
    }
    Ok(out)
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
