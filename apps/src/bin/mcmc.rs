//! mcmc: the MCMC walker benchmark kernel of the noncollective-communicator paper,
//! run under each load-balancing strategy and compared.

use chorus_apps::balancing::main_of;
use chorus_apps::chains::{self, ChainParams, ChainsOutcome};
use chorus_apps::cli::tagged_path;
use chorus_apps::programs::mcmc::Args;
use chorus_core::Layer;
use chorus_lb::{McmcParams, McmcReport, StrategySpec, Workload};
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Args = chorus_apps::cli::parse_program();
    if args.checkpointed() {
        return run_chains(&args);
    }
    chorus_apps::cli::exit_status("mcmc", run(&args).map(|()| true))
}

/// The chains kernel, checkpointed or restarted.
fn run_chains(args: &Args) -> ExitCode {
    let workload = match workload(args) {
        Ok(w) => w,
        Err(e) => return chorus_apps::cli::exit_status("mcmc", Err(e)),
    };
    let params = ChainParams {
        item: Duration::from_secs_f64(item_ms(args) / 1e3),
        group_size: args.group_size,
        workload,
    };
    let plan = args.checkpoint.plan(args.chorus.restart.is_some());
    let run = || chains::run(&args.chorus, params, plan);
    main_of("mcmc", &args.chorus, args.json, run, ChainsOutcome::exact)
}

/// `--workload`, parsed when the flags were; plain `random` draws from --seed.
fn workload(args: &Args) -> Result<Workload, String> {
    match args.workload.parse::<Workload>() {
        Ok(Workload::Random { .. }) if args.workload == "random" => Ok(Workload::Random {
            seed: args.chorus.seed,
        }),
        w => w.map_err(|e| e.to_string()),
    }
}

/// `--item-ms`, or its layer's default.
fn item_ms(args: &Args) -> f64 {
    args.item_ms.unwrap_or(match args.chorus.layer {
        Layer::Sim => 100.0,
        Layer::Threads | Layer::Mpi => 40.0,
    })
}

fn run(args: &Args) -> Result<(), String> {
    let strategies = StrategySpec::parse_list(args.strategies()).map_err(|e| e.to_string())?;
    let workload = workload(args)?;
    let item_ms = item_ms(args);
    let params = McmcParams {
        group_size: args.group_size,
        item: Duration::from_secs_f64(item_ms / 1e3),
        workload,
    };
    let job = chorus_apps::job::JobProcess::start(&args.chorus)?;
    let speaks = job.speaks;
    let mut reports = Vec::new();
    for spec in strategies {
        let mut config = args.chorus.clone();
        // Under mpirun the job has as many PEs as ranks x --pes-per-rank, whatever
        // --pes defaulted to: the walker groups are laid out on those.
        config.pes = job.pes;
        // One trace per strategy, named after it even when it runs alone, so the
        // file name never depends on how many strategies ran.
        if let Some(t) = &args.chorus.trace {
            config.trace = Some(tagged_path(t, &spec.name().replace(':', "-")));
        }
        if speaks && !args.json {
            eprintln!(
                "running {} on {} PEs ({})...",
                spec.name(),
                config.pes,
                config.layer.name()
            );
        }
        let r = chorus_lb::run_spec(&config, params, spec)
            .map_err(|e| format!("{}: {e}", spec.name()))?;
        reports.push((spec, r));
    }
    if speaks {
        if args.json {
            let reports: Vec<McmcReport> = reports.into_iter().map(|(_, r)| r).collect();
            println!("{}", to_json(&reports, job.pes));
        } else {
            print_table(&reports, args, item_ms, job.pes);
        }
    }
    Ok(())
}

fn to_json(reports: &[McmcReport], pes: u32) -> serde_json::Value {
    json!({
        "pes": pes,
        "ideal_s": reports.first().map_or(0.0, |r| r.ideal_s),
        "strategies": reports.iter().map(|r| json!({
            "name": r.name,
            "makespan_s": r.makespan_s,
            "regroups_avg": r.regroups.avg,
            "regroups_avg_with_initial": r.regroups.avg_with_initial(),
            "regroups_stdev": r.regroups.stdev,
            "regroups_min": r.regroups.min,
            "regroups_max": r.regroups.max,
            "chains": r.ledger.chains,
            "chains_finished": r.ledger.finished,
            "items": r.ledger.items,
            "pes_failed": r.ledger.pes_failed,
            "recoveries": r.ledger.recoveries,
            "sim": r.sim,
        })).collect::<Vec<_>>(),
    })
}

/// The table of every strategy's run, each against none and the best collective.
fn print_table(runs: &[(StrategySpec, McmcReport)], args: &Args, item_ms: f64, pes: u32) {
    let none = (runs.iter())
        .find(|(s, _)| *s == StrategySpec::None)
        .map(|(_, r)| r.makespan_s);
    let best_collective = (runs.iter())
        .filter(|(s, _)| matches!(s, StrategySpec::Collective(_)))
        .map(|(_, r)| r.makespan_s)
        .reduce(f64::min);
    let reports: Vec<&McmcReport> = runs.iter().map(|(_, r)| r).collect();
    let ideal = reports.first().map_or(0.0, |r| r.ideal_s);
    println!(
        "MCMC kernel: {} PEs on {}, G = {}, T = {item_ms} ms, workload {}; ideal {ideal:.3} s",
        pes,
        args.chorus.layer.name(),
        args.group_size,
        args.workload
    );
    println!(
        "{:<16} {:>11} {:>10} {:>14} {:>10} {:>8} {:>8} {:>5} {:>5}",
        "strategy",
        "makespan s",
        "vs none",
        "vs best coll.",
        "vs ideal",
        "regr.avg",
        "stdev",
        "min",
        "max"
    );
    // With no work at all (e.g. one group whose chain is empty) only messaging
    // time is left, and ratios of it say nothing about balancing.
    let gain = |base: Option<f64>, x: f64| match base {
        Some(b) if b > 0.0 && ideal > 0.0 => format!("{:+.1}%", (b - x) / b * 100.0),
        _ => "-".into(),
    };
    for r in &reports {
        let gap = if ideal > 0.0 {
            format!("{:+.1}%", (r.makespan_s - ideal) / ideal * 100.0)
        } else {
            "-".into()
        };
        println!(
            "{:<16} {:>11.3} {:>10} {:>14} {:>10} {:>8.2} {:>8.2} {:>5} {:>5}",
            r.name,
            r.makespan_s,
            gain(none, r.makespan_s),
            gain(best_collective, r.makespan_s),
            gap,
            r.regroups.avg,
            r.regroups.stdev,
            r.regroups.min,
            r.regroups.max
        );
    }
    println!("(vs none / vs best coll.: time saved; vs ideal: time above total work / PEs;");
    println!(
        " regr.: changes of group per PE; the paper's Table 1 also counts the initial group, +1)"
    );
    if ideal == 0.0 {
        println!(
            "(the chains hold no work: with the cyclic workload the group led by PE 0 has none; \
             use more PEs or a smaller --group-size)"
        );
    }
    for r in &reports {
        if let Some(t) = &r.trace {
            println!("trace of {}: {}", r.name, t.display());
        }
    }
}
