//! jquick: Janus Quicksort on range sections, checked globally, with the paper's
//! MPI_Comm_split baseline under MPI.

use chorus_apps::bench::report::print;
use chorus_apps::cli;
use chorus_apps::jquick::summary::{Baseline, Compared, Labels, Single};
use chorus_apps::jquick::{self, InputKind, KeyType, SectionMode, SortSpec};
use chorus_core::{Config, Layer};
use clap::Parser;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    version,
    about = "Janus Quicksort: perfectly balanced distributed quicksort on range sections"
)]
struct Args {
    /// Elements per PE (n = pes * this, unless --n is given), 1..=2^30.
    #[arg(long, default_value_t = 1024, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30))]
    n_per_pe: u64,
    /// Elements in all (overrides --n-per-pe; need not be a multiple of the PEs), 1..=2^40.
    #[arg(long, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 40))]
    n: Option<u64>,
    /// Input: uniform, sorted, reverse, duplicates (16 values), equal (one value) or zipf.
    #[arg(long, default_value = "uniform")]
    input: InputKind,
    /// Key type: u64 or f64.
    #[arg(long, default_value = "u64")]
    key: KeyType,
    /// How each level's sections are made: range (O(1), no message), shrink-and-hash
    /// (the section builder, from the world), mpi-split (MPI_Comm_split per level;
    /// --layer mpi with the mpi feature), split-model (range sections behind a
    /// modelled MPICH MPI_Comm_split per level; any layer), create-group-model
    /// (behind a modelled MPI_Comm_create_group per child, Dinan et al.'s algorithm)
    /// or native-create-group-model (MPICH's MPI_Comm_create_group: one allreduce).
    #[arg(long, default_value = "range")]
    sections: SectionMode,
    /// Samples per pivot (the median is the pivot; 1 = one random element).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    samples: u32,
    /// Branching factor of the section trees, 2..=16.
    #[arg(long = "section-arity", alias = "k", default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=16))]
    k: u32,
    /// Simulated cost of one element step of local work, ns (sim layer).
    #[arg(long, default_value_t = 2.0, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e6))]
    sim_ns_per_elem: f64,
    /// With split-model: run MPICH's ring allgather where MPICH picks it (groups of
    /// 10,240 members and more that are not a power of two), p − 1 rounds; without
    /// it Bruck stands in (fewer latencies, so MPI's side is faster).
    #[arg(long)]
    split_ring: bool,
    /// Fail (exit status 1) unless the output is sorted, balanced and a permutation.
    #[arg(long)]
    verify: bool,
    /// Print one JSON object.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Sort --reps times with range sections and with this baseline, alternately, and
    /// report both medians and their ratio: mpi-split (the default; --layer mpi under
    /// mpirun), split-model, create-group-model or native-create-group-model (any
    /// layer).
    #[arg(long, num_args = 0..=1, default_missing_value = "mpi-split", value_parser = compare_mode)]
    compare: Option<SectionMode>,
    /// Repetitions of each variant with --compare.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    #[command(flatten)]
    chorus: Config,
}

fn main() -> ExitCode {
    let args: Args = cli::parse_and(|a: &Args| Some(a.chorus.clone()), check_memory);
    cli::exit_status("jquick", run(&args))
}

/// Bytes a sort holds per key: the key, its copy in the output and the runtime's
/// buffers (`jquick --layer sim --pes 8192 --n-per-pe 1000` peaked at 322 MiB for
/// 8.2 M keys, about 41 bytes each with the PEs' own memory; README).
const BYTES_PER_KEY: u64 = 40;

/// The keys to sort fit in the memory available.
fn check_memory(a: &Args) -> Result<(), String> {
    let n =
        a.n.unwrap_or(a.n_per_pe.saturating_mul(u64::from(a.chorus.pes)));
    let flag = if a.n.is_some() { "--n" } else { "--n-per-pe" };
    chorus_apps::memory::check(
        &format!("{flag} ({n} keys)"),
        n.saturating_mul(BYTES_PER_KEY),
    )
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
    let splits = [Some(args.sections), args.compare].contains(&Some(SectionMode::SplitModel));
    if args.split_ring && !splits {
        return Err(
            "--split-ring changes the modelled MPI_Comm_split only: give it with --sections split-model or --compare split-model"
                .into(),
        );
    }
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

/// The baselines `--compare` takes.
fn compare_mode(s: &str) -> Result<SectionMode, String> {
    match s.parse()? {
        SectionMode::Range | SectionMode::ShrinkAndHash => Err(format!(
            "--compare takes mpi-split, split-model, create-group-model or native-create-group-model, not {s:?}"
        )),
        m => Ok(m),
    }
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
