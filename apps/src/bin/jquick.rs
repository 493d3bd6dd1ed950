//! jquick: Janus Quicksort on range sections, checked globally, with the paper's
//! MPI_Comm_split baseline under MPI.

use chorus_apps::bench::report::print;
use chorus_apps::cli;
use chorus_apps::jquick::summary::{Baseline, Compared, Labels, Single};
use chorus_apps::jquick::{self, SectionMode, SortSpec};
use chorus_apps::programs::jquick::Args;
use chorus_core::Layer;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Args = cli::parse_program();
    cli::exit_status("jquick", run(&args))
}

/// Sort, print, and say whether the check passed (or was not asked for).
fn run(args: &Args) -> Result<bool, String> {
    let job = chorus_apps::job::JobProcess::start(&args.chorus)?;
    let (speaks, pes) = (job.speaks, job.pes);
    let spec = SortSpec {
        n: args
            .n
            .unwrap_or(args.n_per_pe.saturating_mul(u64::from(pes))),
        input: args.input,
        keys: args.key,
        seed: args.chorus.seed,
        samples: args.samples,
        k: args.k,
        sections: args.sections,
        sim_ns_per_elem: (args.chorus.layer == Layer::Sim).then_some(args.sim_ns_per_elem),
        keep_output: false,
        split_ring: args.split_ring,
    };
    match args.compare {
        Some(m) if m.is_model() => return compare_model(args, &spec, m, speaks),
        Some(_) => {
            #[cfg(feature = "mpi")]
            return compare(args, &spec, job.session.as_ref(), speaks);
            #[cfg(not(feature = "mpi"))]
            return Err(NO_MPI.into());
        }
        None => {}
    }
    let outcome = match args.sections {
        SectionMode::Range
        | SectionMode::ShrinkAndHash
        | SectionMode::SplitModel
        | SectionMode::CreateGroupModel
        | SectionMode::NativeCreateGroupModel => match jquick::run(&args.chorus, &spec) {
            Ok(r) => Some((r.outcome, r.sim)),
            Err(jquick::JquickError::Missing) if !speaks => None,
            Err(e) => return Err(e.to_string()),
        },
        #[cfg(feature = "mpi")]
        SectionMode::MpiSplit => mpi_split(args, &spec, job.session.as_ref())?.map(|o| (o, None)),
        #[cfg(not(feature = "mpi"))]
        SectionMode::MpiSplit => return Err(NO_MPI.into()),
    };
    let Some((o, sim)) = outcome else {
        return Ok(true);
    };
    let passed = o.passed();
    if speaks {
        let single = Single {
            outcome: o,
            sim,
            labels: labels(args),
        };
        print(&single, args.json);
    }
    Ok(!args.verify || passed)
}

/// What the run was asked for, as the output names it.
fn labels(args: &Args) -> Labels {
    Labels {
        input: args.input,
        key: args.key,
        layer: args.chorus.layer,
        sections: args.sections,
    }
}

/// Print a comparison and say whether it passed the check (or none was asked for).
fn report(args: &Args, compared: Compared) -> bool {
    print(&compared, args.json);
    !args.verify || compared.passed()
}

#[cfg(feature = "mpi")]
fn compare(
    args: &Args,
    spec: &SortSpec,
    session: Option<&chorus_core::MpiSession>,
    speaks: bool,
) -> Result<bool, String> {
    let Some(session) = session.filter(|_| args.chorus.layer == Layer::Mpi) else {
        return Err("--compare needs --layer mpi (run under mpirun)".into());
    };
    let world = session.world();
    let (mut range, mut split) = (Vec::new(), Vec::new());
    let mut split_failed: Option<String> = None;
    for _ in 0..args.reps {
        match jquick::run(&args.chorus, spec) {
            Ok(r) => range.push(r.outcome),
            Err(jquick::JquickError::Missing) if !speaks => {}
            Err(e) => return Err(e.to_string()),
        }
        // Only rank 0 checks the baseline's records: it keeps going on a failed check
        // so that every rank runs the same repetitions (leaving early would leave the
        // others waiting in the next one), and reports the failure at the end.
        match jquick::mpi_split::run(spec, &world) {
            Ok(Some(o)) => split.push(o),
            Ok(None) => {}
            Err(e) => {
                split_failed.get_or_insert(e.to_string());
            }
        }
    }
    if let Some(e) = split_failed {
        return Err(e);
    }
    if !speaks {
        return Ok(true);
    }
    let without_split: Vec<f64> = split.iter().map(|s| s.without_split_s).collect();
    let compared = Compared {
        range,
        baseline: split.into_iter().map(|s| s.outcome).collect(),
        kind: Baseline::MpiSplit {
            without_split_s: chorus_apps::bench::median(&without_split),
        },
        reps: args.reps,
        labels: labels(args),
    };
    Ok(report(args, compared))
}

/// Range sections against a modelled MPI call, --reps times each, alternately.
fn compare_model(
    args: &Args,
    spec: &SortSpec,
    model: SectionMode,
    speaks: bool,
) -> Result<bool, String> {
    let modelled = SortSpec {
        sections: model,
        ..spec.clone()
    };
    let (mut range, mut split) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        for (s, out) in [(spec, &mut range), (&modelled, &mut split)] {
            match jquick::run(&args.chorus, s) {
                Ok(r) => out.push(r.outcome),
                Err(jquick::JquickError::Missing) if !speaks => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    if !speaks {
        return Ok(true);
    }
    let compared = Compared {
        range,
        baseline: split,
        kind: Baseline::Model(model),
        reps: args.reps,
        labels: labels(args),
    };
    Ok(report(args, compared))
}

#[cfg(not(feature = "mpi"))]
const NO_MPI: &str = "--sections mpi-split needs MPI: rebuild with `--features mpi` and run with --layer mpi under mpirun";

#[cfg(feature = "mpi")]
fn mpi_split(
    args: &Args,
    spec: &SortSpec,
    session: Option<&chorus_core::MpiSession>,
) -> Result<Option<jquick::Outcome>, String> {
    match (args.chorus.layer, session) {
        (Layer::Mpi, Some(s)) => {
            let run = jquick::mpi_split::run(spec, &s.world()).map_err(|e| e.to_string())?;
            Ok(run.map(|r| r.outcome))
        }
        _ => Err("--sections mpi-split needs --layer mpi (run under mpirun)".into()),
    }
}
