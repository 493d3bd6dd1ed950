//! chorus-bench: performance measurements of chorus against baselines, run side by side.

use chorus_apps::bench::{create_group, messaging, replay, sections, sim_scale};
use chorus_apps::cli;
use chorus_core::{Config, Layer, SimArgs, TraceReport};
use clap::{Parser, Subcommand};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// PEs allocate messages on one thread and free them on another; mimalloc handles
// that pattern far better than glibc's arenas (chorus and the baselines alike).
// `Cap` counts live heap bytes for the memory figures.
#[global_allocator]
static ALLOC: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

#[derive(Parser)]
#[command(
    version,
    about = "chorus performance measurements, each against a baseline in the same run"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Section creation: every algorithm and filler over --pes and --fractions, the
    /// same members for every algorithm (drawn per PE from --seed).
    Sections {
        /// Machine layer (sim for scale; threads for at most 4096 PEs).
        #[arg(long, value_enum, default_value_t = Layer::Sim)]
        layer: Layer,
        /// PE counts, one job each (each 1..=16777216).
        #[arg(long, value_delimiter = ',', default_value = "2048,8192", value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
        pes: Vec<u32>,
        /// Membership fractions (each 0..=1).
        #[arg(long, value_delimiter = ',', default_value = "0.01,0.1,0.5", value_parser = |s: &str| cli::f64_in(s, 0.0, 1.0))]
        fractions: Vec<f64>,
        /// Branching factor of the section trees, 2..=16.
        #[arg(long = "section-arity", alias = "k", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=16))]
        k: u32,
        /// `all` or a comma list of names (centralized, shrink-and-hash/leaf, ...).
        #[arg(long, default_value = "all")]
        algorithms: String,
        /// Seed of the membership draw.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The sim layer's model.
        #[command(flatten)]
        sim: SimArgs,
        /// Print one JSON object (the rows under "runs") instead of a table.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
    /// Message throughput and latency against crossbeam and actix.
    Messaging {
        /// Messages per throughput measurement.
        #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1000..))]
        messages: u64,
        /// Round trips per ping-pong measurement.
        #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(10..))]
        rounds: u64,
        /// Repetitions of each measurement; the best is reported.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        reps: u32,
        /// Print one JSON object instead of a table.
        #[arg(long, help_heading = "Output")]
        json: bool,
        /// Also run every measurement traced to this file, interleaved with the
        /// untraced runs, and report the cost of tracing.
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// Chare latency and bandwidth on the mpi layer against raw MPI, between ranks 0
    /// and 1 (run under mpirun -n 2; needs a build with --features mpi).
    MpiPingpong {
        #[command(flatten)]
        config: Config,
        /// Message sizes in bytes.
        #[arg(long, value_delimiter = ',', default_value = "8,1024,65536,1048576")]
        sizes: Vec<usize>,
        /// Print one JSON object instead of a table.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
    /// Section creation on the mpi layer against MPI_Comm_split and
    /// MPI_Comm_create_group, each alone and followed by an 8-byte broadcast to half
    /// the ranks (run under mpirun -n 8 --oversubscribe; needs --features mpi).
    SectionsVsMpi {
        #[command(flatten)]
        config: Config,
        /// Repetitions of each measurement (medians are reported).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        reps: u32,
        /// Branching factor of the section trees, 2..=16.
        #[arg(long = "section-arity", alias = "k", default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=16))]
        k: u32,
        /// Print one JSON object instead of lines.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
    /// A broadcast and a sum reduction over a group on --pes simulated PEs (always the
    /// sim layer; every --sim-* flag applies).
    SimScale {
        #[command(flatten)]
        config: Config,
        /// Print one JSON object instead of lines.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
    /// Communicator creation modelled as MPI does it, on the simulator: Dinan et
    /// al.'s noncollective algorithm against MPI_Comm_create over every PE and MPICH's
    /// MPI_Comm_create_group, with chorus's Shrink-and-Hash beside them, for groups of
    /// the first N PEs (always the sim layer).
    CreateGroup {
        #[command(flatten)]
        config: Config,
        /// Group sizes (each 1..=--pes); default: the powers of two up to --pes.
        #[arg(long = "group-sizes", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
        group_sizes: Vec<u32>,
        /// Branching factor of the collectives' trees, 2..=16 (2: the binomial depth of
        /// MPICH's short broadcasts and allreduces).
        #[arg(long = "section-arity", alias = "k", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=16))]
        k: u32,
        /// Print one JSON object instead of a table.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
    /// A reproducible sim job (array broadcasts, random messages, migrations, sum
    /// reductions) and the digest of every delivery: two runs with the same flags
    /// print the same digest, in any process (needs --layer sim).
    Replay {
        #[command(flatten)]
        config: Config,
        /// Array elements per PE.
        #[arg(long = "per-pe", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
        per_pe: u32,
        /// Messages each element sends to drawn elements per round.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=64))]
        tokens: u32,
        /// Broadcast rounds.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
        rounds: u32,
        /// Print one JSON object instead of lines.
        #[arg(long, help_heading = "Output")]
        json: bool,
    },
}

#[cfg(feature = "mpi")]
fn mpi_pingpong_cmd(config: Config, sizes: &[usize], as_json: bool) -> Result<(), String> {
    use chorus_apps::bench::mpi_pingpong;
    let session = chorus_core::MpiSession::init().map_err(|e| e.to_string())?;
    let Some(rows) = mpi_pingpong::run(&session, &config, sizes).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let col = |f: fn(&mpi_pingpong::SizeResult) -> f64| rows.iter().map(f).collect::<Vec<_>>();
    let out = json!({
        "sizes": rows.iter().map(|r| r.bytes).collect::<Vec<_>>(),
        "chorus_latency_us": col(|r| r.chorus_latency_us),
        "raw_latency_us": col(|r| r.raw_latency_us),
        "chorus_bandwidth_mb_s": col(|r| r.chorus_bandwidth_mb_s),
        "raw_bandwidth_mb_s": col(|r| r.raw_bandwidth_mb_s),
        "latency_ratio": col(|r| r.chorus_latency_us / r.raw_latency_us),
        "bandwidth_ratio": col(|r| r.chorus_bandwidth_mb_s / r.raw_bandwidth_mb_s),
    });
    if as_json {
        println!("{out}");
    } else {
        println!(
            "{:>9} {:>12} {:>12} {:>7} {:>14} {:>14} {:>7}",
            "bytes", "chorus us", "raw us", "ratio", "chorus MB/s", "raw MB/s", "ratio"
        );
        for r in &rows {
            println!(
                "{:>9} {:>12.2} {:>12.2} {:>7.2} {:>14.1} {:>14.1} {:>7.2}",
                r.bytes,
                r.chorus_latency_us,
                r.raw_latency_us,
                r.chorus_latency_us / r.raw_latency_us,
                r.chorus_bandwidth_mb_s,
                r.raw_bandwidth_mb_s,
                r.chorus_bandwidth_mb_s / r.raw_bandwidth_mb_s
            );
        }
        println!("targets: latency ratio at 8 B <= 2, bandwidth ratio at 1 MiB >= 0.8");
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn mpi_pingpong_cmd(_: Config, _: &[usize], _: bool) -> Result<(), String> {
    Err("mpi-pingpong needs MPI: rebuild with `cargo build --release --features mpi` and run it under `mpirun -n 2`".into())
}

#[cfg(feature = "mpi")]
fn sections_vs_mpi_cmd(config: Config, reps: u32, k: u32, as_json: bool) -> Result<(), String> {
    use chorus_apps::bench::sections_vs_mpi;
    let session = chorus_core::MpiSession::init().map_err(|e| e.to_string())?;
    let Some(r) = sections_vs_mpi::run(&session, &config, reps, k).map_err(|e| e.to_string())?
    else {
        return Ok(());
    };
    if as_json {
        println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "{} ranks, new group of {}, median of {} reps (us):",
        r.ranks, r.members, r.reps
    );
    let rows = [
        (
            "MPI_Comm_split",
            r.mpi_comm_split_us,
            r.mpi_comm_split_plus_bcast_us,
        ),
        (
            "MPI_Comm_create_group",
            r.mpi_comm_create_group_us,
            r.mpi_comm_create_group_plus_bcast_us,
        ),
        (
            "shrink-and-hash",
            r.shrink_and_hash_us,
            r.shrink_and_hash_plus_bcast_us,
        ),
        ("range", r.range_us, r.range_plus_bcast_us),
    ];
    println!("{:<24} {:>12} {:>14}", "creation", "alone", "plus bcast");
    for (name, alone, plus) in rows {
        println!("{name:<24} {alone:>12.2} {plus:>14.2}");
    }
    println!(
        "targets: range+bcast >= 20x faster than split+bcast (got {:.1}x); shrink-and-hash no slower than split (got {:.2}x)",
        r.mpi_comm_split_plus_bcast_us / r.range_plus_bcast_us,
        r.shrink_and_hash_us / r.mpi_comm_split_us
    );
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn sections_vs_mpi_cmd(_: Config, _: u32, _: u32, _: bool) -> Result<(), String> {
    Err("sections-vs-mpi needs MPI: rebuild with `cargo build --release --features mpi` and run it under `mpirun -n 8 --oversubscribe`".into())
}

/// Peak resident set size of this process in MiB, from /proc (Linux only).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn create_group_cmd(config: Config, sizes: Vec<u32>, k: u32, as_json: bool) -> Result<(), String> {
    let sizes = if sizes.is_empty() {
        std::iter::successors(Some(2u32), |g| g.checked_mul(2))
            .take_while(|&g| g <= config.pes)
            .collect()
    } else {
        sizes
    };
    let preset = config.sim.preset;
    let r = create_group::run(config, &sizes, k).map_err(|e| e.to_string())?;
    let out = json!({
        "pes": r.pes,
        "preset": format!("{preset:?}").to_lowercase(),
        "section_arity": r.k,
        "rows": r.rows,
        "events": r.stats.events,
        "events_per_s": r.stats.events_per_s,
        "wall_s": r.stats.wall_s,
        "messages": r.stats.messages,
        "peak_rss_mib": peak_rss_mib(),
    });
    if as_json {
        println!("{out}");
        return Ok(());
    }
    println!(
        "{} PEs ({preset:?}), trees of arity {}: time to create the communicator of PEs 0..g (us, virtual)",
        r.pes, r.k
    );
    println!("| g | rounds | Dinan et al. | MPI_Comm_create | MPI_Comm_create_group (MPICH) | chorus Shrink-and-Hash |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in &r.rows {
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            row.group,
            row.rounds,
            row.dinan_us,
            row.comm_create_us,
            row.create_group_us,
            row.shrink_and_hash_us
        );
    }
    println!("{}", r.stats.to_text());
    Ok(())
}

fn sim_scale_cmd(config: Config, as_json: bool) -> Result<(), String> {
    let _ = sim_scale::HEAP_BYTES.set(|| ALLOC.allocated());
    let preset = config.sim.preset;
    let r = sim_scale::run(config).map_err(|e| e.to_string())?;
    if r.sum != r.pes {
        return Err(format!(
            "the reduction over {} PEs summed to {}: a contribution was lost or counted twice",
            r.pes, r.sum
        ));
    }
    let out = json!({
        "pes": r.pes,
        "preset": format!("{preset:?}").to_lowercase(),
        "events": r.stats.events,
        "events_per_s": r.stats.events_per_s,
        "wall_s": r.stats.wall_s,
        "event_loop_s": r.stats.events_s,
        "virtual_time_us": r.virtual_time_us,
        "makespan_us": r.stats.makespan_us,
        "messages": r.stats.messages,
        "bytes": r.stats.bytes,
        "bytes_per_pe": r.bytes_per_pe,
        "peak_rss_mib": peak_rss_mib(),
        "sum": r.sum,
        "digest": format!("{:016x}", r.stats.digest),
        "trace": r.trace,
    });
    if as_json {
        println!("{out}");
    } else {
        println!(
            "{} PEs ({preset:?}): broadcast + sum reduction in {:.3} us virtual",
            r.pes, r.virtual_time_us
        );
        println!("{}", r.stats.to_text());
        println!(
            "heap per PE at the reduction: {:.0} B; peak RSS {:.1} MiB",
            r.bytes_per_pe,
            peak_rss_mib().unwrap_or(f64::NAN)
        );
        if let Some(t) = &r.trace {
            println!("{t}");
        }
    }
    Ok(())
}

fn replay_cmd(config: Config, spec: replay::ReplaySpec, as_json: bool) -> Result<(), String> {
    let seed = config.seed;
    let r = replay::run(config, spec).map_err(|e| e.to_string())?;
    let out = json!({
        "digest": format!("{:016x}", r.digest),
        "events": r.events,
        "pes": r.pes,
        "seed": seed,
        "per_pe": spec.per_pe,
        "tokens": spec.tokens,
        "rounds": spec.rounds,
        "tokens_received": r.tokens_received,
        "sim_events": r.stats.events,
        "event_log_digest": format!("{:016x}", r.stats.digest),
        "messages": r.stats.messages,
        "makespan_us": r.stats.makespan_us,
        "wall_s": r.stats.wall_s,
    });
    if as_json {
        println!("{out}");
    } else {
        println!(
            "{} PEs, seed {seed}: {} deliveries, delivery digest {:016x}",
            r.pes, r.events, r.digest
        );
        println!("{}", r.stats.to_text());
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn sections_cmd(
    layer: Layer,
    pes: Vec<u32>,
    fractions: Vec<f64>,
    k: u32,
    algorithms: &str,
    seed: u64,
    sim: SimArgs,
    as_json: bool,
) -> Result<(), String> {
    let plan = sections::Plan {
        layer,
        pes,
        fractions,
        k,
        algorithms: sections::parse_algorithms(algorithms)?,
        seed,
        sim,
    };
    let rows = sections::run(&plan).map_err(|e| e.to_string())?;
    if as_json {
        // One object, as every --json prints; the rows under "runs".
        println!("{}", json!({ "runs": rows }));
        return Ok(());
    }
    println!(
        "{:<20} {:<6} {:>7} {:>6} {:>7} {:>9} {:>11} {:>12} {:>9}",
        "algorithm", "filler", "pes", "frac", "members", "messages", "bytes", "time us", "state B"
    );
    for r in &rows {
        println!(
            "{:<20} {:<6} {:>7} {:>6} {:>7} {:>9} {:>11} {:>12.1} {:>9}",
            r.algorithm,
            r.filler,
            r.pes,
            r.fraction,
            r.members,
            r.messages,
            r.bytes,
            r.time_us,
            r.max_pe_state_bytes
        );
        let phases: Vec<String> = (r.phases.iter())
            .map(|p| {
                format!(
                    "{} {:.1} us/{}+{} msgs",
                    p.name, p.time_us, p.messages, p.local
                )
            })
            .collect();
        println!(
            "    phases (time, messages between PEs + to itself): {}",
            phases.join(", ")
        );
    }
    for (pes, fraction, name, time, messages) in sections::speedups(&rows) {
        println!(
            "{pes} PEs, fraction {fraction}: centralized time / {name} time = {time:.2}x, \
             {name} messages / centralized messages = {messages:.2}"
        );
    }
    Ok(())
}

fn best(
    reps: u32,
    higher_is_better: bool,
    mut f: impl FnMut() -> Result<f64, String>,
) -> Result<f64, String> {
    let mut out: Option<f64> = None;
    for _ in 0..reps {
        let v = f()?;
        out = Some(match out {
            None => v,
            Some(o) if higher_is_better => o.max(v),
            Some(o) => o.min(v),
        });
    }
    out.ok_or_else(|| "no repetitions".into())
}

/// Best of `reps` runs of one measurement, untraced and (if `trace`) traced,
/// alternating so both see the same machine noise; the traced run's trace report last.
fn best_pair(
    reps: u32,
    higher_is_better: bool,
    trace: Option<&Path>,
    f: impl Fn(Option<&Path>) -> Result<messaging::Measured, chorus_core::RuntimeError>,
) -> Result<(f64, Option<f64>, Option<TraceReport>), String> {
    let pick = |o: Option<f64>, v: f64| match o {
        None => v,
        Some(o) if higher_is_better => o.max(v),
        Some(o) => o.min(v),
    };
    let (mut plain, mut traced, mut last) = (None, None, None);
    for _ in 0..reps.max(1) {
        plain = Some(pick(plain, f(None).map_err(|e| e.to_string())?.value));
        if let Some(path) = trace {
            let m = f(Some(path)).map_err(|e| e.to_string())?;
            traced = Some(pick(traced, m.value));
            last = m.trace;
        }
    }
    Ok((plain.unwrap_or(0.0), traced, last))
}

fn messaging(
    messages: u64,
    rounds: u64,
    reps: u32,
    as_json: bool,
    trace: Option<&Path>,
) -> Result<(), String> {
    let (same, same_t, _) = best_pair(reps, true, trace, |t| {
        messaging::same_pe_msgs_per_s(messages, t)
    })?;
    let (cross, cross_t, cross_trace) = best_pair(reps, true, trace, |t| {
        messaging::cross_pe_msgs_per_s(messages, t)
    })?;
    let (rtt, rtt_t, _) = best_pair(reps, false, trace, |t| {
        messaging::pingpong_rtt_ns(rounds, t)
    })?;
    let (cb_rtt, cb_env_rtt, actix) = baselines(messages, rounds, reps)?;
    let mut out = json!({
        "same_pe_msgs_per_s": same,
        "cross_pe_msgs_per_s": cross,
        "pingpong_rtt_ns": rtt,
        "crossbeam_pingpong_rtt_ns": cb_rtt,
        "crossbeam_envelope_pingpong_rtt_ns": cb_env_rtt,
        "actix_msgs_per_s": actix,
        "same_pe_vs_actix": same / actix,
        "cross_pe_vs_actix": cross / actix,
        "pingpong_vs_crossbeam": rtt / cb_rtt,
        "pingpong_vs_crossbeam_envelope": rtt / cb_env_rtt,
        "messages": messages,
        "rounds": rounds,
        "reps": reps,
    });
    if let (Some(st), Some(ct), Some(rt)) = (same_t, cross_t, rtt_t) {
        out["traced"] = json!({
            "same_pe_msgs_per_s": st,
            "cross_pe_msgs_per_s": ct,
            "pingpong_rtt_ns": rt,
            "same_pe_throughput_ratio": st / same,
            "cross_pe_throughput_ratio": ct / cross,
            "pingpong_rtt_ratio": rt / rtt,
            "cross_pe_trace": cross_trace,
        });
    }
    if as_json {
        println!("{out}");
        return Ok(());
    }
    println!("{:<34} {:>16} {:>16}", "measurement", "value", "traced");
    let row = |name: &str, v: f64, t: Option<f64>| {
        let t = t.map_or_else(|| "-".to_owned(), |t| format!("{t:.0}"));
        println!("{name:<34} {v:>16.0} {t:>16}");
    };
    row("chorus same-PE msgs/s", same, same_t);
    row("chorus cross-PE msgs/s", cross, cross_t);
    row("actix msgs/s (100 actors)", actix, None);
    row("chorus ping-pong RTT ns", rtt, rtt_t);
    row("crossbeam ping-pong RTT ns", cb_rtt, None);
    row("  with envelope-sized messages", cb_env_rtt, None);
    println!("same-PE / actix = {:.2}x (target >= 5x)", same / actix);
    println!("cross-PE / actix = {:.2}x (target >= 1x)", cross / actix);
    println!(
        "ping-pong / crossbeam = {:.2}x (target <= 1.5x); / envelope-sized crossbeam = {:.2}x",
        rtt / cb_rtt,
        rtt / cb_env_rtt
    );
    if let (Some(st), Some(ct)) = (same_t, cross_t) {
        println!(
            "traced / untraced throughput: same-PE {:.3}, cross-PE {:.3} (target >= 0.9)",
            st / same,
            ct / cross
        );
    }
    if let Some(t) = cross_trace {
        println!("cross-PE {t}");
    }
    Ok(())
}

#[cfg(feature = "baselines")]
fn baselines(messages: u64, rounds: u64, reps: u32) -> Result<(f64, f64, f64), String> {
    use chorus_apps::bench::baselines as b;
    let cb = best(reps, false, || Ok(b::crossbeam_pingpong_rtt_ns(rounds)))?;
    let cb_env = best(reps, false, || {
        Ok(b::crossbeam_envelope_pingpong_rtt_ns(rounds))
    })?;
    let actix = best(reps, true, || Ok(b::actix_msgs_per_s(messages)))?;
    Ok((cb, cb_env, actix))
}

#[cfg(not(feature = "baselines"))]
fn baselines(_: u64, _: u64, _: u32) -> Result<(f64, f64, f64), String> {
    Err(
        "this chorus-bench was built without the baselines feature; rebuild with default features"
            .into(),
    )
}

fn main() -> ExitCode {
    let cli: Cli = cli::parse(|c: &Cli| match &c.command {
        // These run on the mpi layer whatever --layer says.
        Command::MpiPingpong { config, .. } | Command::SectionsVsMpi { config, .. } => {
            Some(Config {
                layer: Layer::Mpi,
                ..config.clone()
            })
        }
        // sim-scale and create-group run on the sim layer whatever --layer says.
        Command::SimScale { config, .. } | Command::CreateGroup { config, .. } => Some(Config {
            layer: Layer::Sim,
            ..config.clone()
        }),
        Command::Replay { config, .. } => Some(config.clone()),
        Command::Sections { .. } | Command::Messaging { .. } => None,
    });
    let result = match cli.command {
        Command::Messaging {
            messages,
            rounds,
            reps,
            json,
            trace,
        } => messaging(messages, rounds, reps, json, trace.as_deref()),
        Command::SimScale { config, json } => sim_scale_cmd(config, json),
        Command::CreateGroup {
            config,
            group_sizes,
            k,
            json,
        } => {
            if let Some(bad) = group_sizes.iter().find(|&&g| g > config.pes) {
                eprintln!(
                    "chorus-bench: --group-sizes {bad} is more than --pes {}; give sizes from 1 to {}",
                    config.pes, config.pes
                );
                return ExitCode::from(2);
            }
            create_group_cmd(config, group_sizes, k, json)
        }
        Command::Replay {
            config,
            per_pe,
            tokens,
            rounds,
            json,
        } => {
            if config.layer != Layer::Sim {
                // The digest is the sim layer's: other layers' timing is real.
                eprintln!(
                    "chorus-bench: replay runs on the sim layer only; add --layer sim (got --layer {})",
                    config.layer.name()
                );
                return ExitCode::from(2);
            }
            let spec = replay::ReplaySpec {
                per_pe,
                tokens,
                rounds,
            };
            replay_cmd(config, spec, json)
        }
        Command::SectionsVsMpi {
            config,
            reps,
            k,
            json,
        } => sections_vs_mpi_cmd(config, reps, k, json),
        Command::Sections {
            layer,
            pes,
            fractions,
            k,
            algorithms,
            seed,
            sim,
            json,
        } => sections_cmd(layer, pes, fractions, k, &algorithms, seed, sim, json),
        Command::MpiPingpong {
            config,
            sizes,
            json,
        } => mpi_pingpong_cmd(config, &sizes, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chorus-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
