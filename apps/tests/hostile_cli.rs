//! Every flag that takes a value, of every program (each chorus-bench subcommand
//! too), walked from the program's own clap command so that a new flag is covered
//! without a word here, given hostile values; and the contradictory pairs. A value
//! is refused as a usage error (exit code 2) naming the flag, never a panic, unless
//! [`ACCEPTED`] says the flag takes it (and then it must be taken). The parsers run
//! in this process, as the binaries call them (`chorus_apps::programs`); a sample
//! of cases runs the binaries to prove their wiring.

use chorus_apps::programs::{self, Program};
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;

/// Values no flag should take blindly: zero, negative, the limits of 32 and 64
/// bits and one past each, not-a-number, infinity, nothing, a huge float and
/// Arabic-Indic digits.
const HOSTILE: [&str; 11] = [
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "NaN",
    "inf",
    "",
    "1e300",
    "١٢",
];

/// The hostile values each flag may take, and why: any other must be refused.
const ACCEPTED: &[(&str, &[&str], &str)] = &[
    (
        "tokens",
        &["0"],
        "rounds of broadcasts, migrations and reductions only",
    ),
    (
        "seed",
        &["0", "4294967295", "4294967296", "18446744073709551615"],
        "any 64-bit seed",
    ),
    // Output paths: every non-empty name is a file name (created in a scratch
    // directory and removed by the check).
    ("trace", &NAMES, "a file name"),
    ("debug-trace", &NAMES, "a file name"),
    ("output", &NAMES, "a file name"),
    // chorus-bench checkpoint's directory: any name is one (made, and emptied of
    // the bench's files after).
    ("dir", &NAMES, "a directory name"),
    // chorus-bench checkpoint's state: 1 MiB to 64 GiB, and refused naming --bytes
    // where the machine's free memory cannot hold four copies.
    (
        "bytes",
        &["4294967295", "4294967296"],
        "a size within 1 MiB..=64 GiB",
    ),
    // Costs that may be zero.
    ("sim-alpha-us", &["0"], "a cost of 0"),
    ("sim-beta-ns-per-byte", &["0"], "a cost of 0"),
    ("sim-overhead-us", &["0"], "a cost of 0"),
    ("sim-send-overhead-us", &["0"], "a cost of 0"),
    ("sim-recv-overhead-us", &["0"], "a cost of 0"),
    ("sim-gamma-ns-per-byte", &["0"], "a cost of 0"),
    ("sim-handler-us", &["0"], "a cost of 0"),
    ("sim-jitter-us", &["0"], "no jitter"),
    ("sim-ns-per-elem", &["0"], "a cost of 0"),
    ("key-ns", &["0"], "a cost of 0"),
    ("cell-ns", &["0"], "a cost of 0"),
    ("base-us", &["0"], "a load of 0"),
    ("rse", &["0"], "repeat to --nrep-max"),
    ("warmup", &["0", "4294967295"], "no warm-up, or any count"),
    ("hot-blocks", &["0"], "no hot spot"),
    ("fractions", &["0"], "a section of no member"),
    // Counts of repetitions, steps or rounds, and periods: the largest is a long
    // run (SIGINT cuts it short, tests/outputs.rs), never memory.
    ("reps", &MAX_U32, "a count"),
    ("runs", &MAX_U32, "a count"),
    ("passes", &MAX_U32, "a count"),
    ("nrep-max", &MAX_U32, "a count"),
    ("drift-every", &MAX_U32, "a period in steps"),
    ("checkpoint-every", &MAX_U32, "a period in steps"),
    (
        "die-at-step",
        &MAX_U32,
        "a test hook's step, which a run may never reach",
    ),
    ("change-every", &MAX_U32, "a period in steps"),
    ("lb-period", &MAX_U32, "a period in steps"),
    (
        "lb-period-secs",
        &["0"],
        "a period of 0 s: every step balances",
    ),
    ("ldb-period", &MAX_U64, "a period in steps"),
    (
        "first-ldb-step",
        &["0", "4294967295", "4294967296", "18446744073709551615"],
        "a step; past --steps no step balances",
    ),
    (
        "iterations",
        &MAX_U32,
        "round trips or migrations, none kept",
    ),
    ("max-iterations", &MAX_U32, "a count"),
    ("steps", &MAX_U64, "a count"),
    ("repeats", &MAX_U64, "a count"),
    (
        "msg-size",
        &["0"],
        "an empty message, as the original allows",
    ),
    (
        "data-size",
        &["0"],
        "an element carrying no data, as the original allows",
    ),
    ("messages", &MAX_U64, "messages streamed, none kept"),
    ("rounds", &MAX_U64, "round trips, none kept"),
    ("trace-flow-every", &MAX_U64, "an arrow every N messages"),
    ("fault-corrupt-every", &MAX_U64, "damage every N messages"),
];

/// The examples' command line: the runtime's flags alone (`Config::from_args`).
const EXAMPLES: &str = "examples (Config::from_args)";

/// What the examples' parser may take that the apps' refuse: a program registers
/// its own array strategies (`Registry::balancer`), so an unknown name is refused
/// when the job starts (`RuntimeError::UnknownBalancer`), and so is a `--restart`
/// directory without a checkpoint (`CheckpointError`).
const EXAMPLES_ACCEPT: &[(&str, &[&str], &str)] = &[
    ("array-lb", &HOSTILE, "resolved by the job's registry"),
    ("restart", &NAMES, "read when the job starts"),
];

/// The largest 32-bit count.
const MAX_U32: [&str; 1] = ["4294967295"];

/// Counts of 64 bits: every large one.
const MAX_U64: [&str; 3] = ["4294967295", "4294967296", "18446744073709551615"];

/// Hostile values that are plain file names.
const NAMES: [&str; 10] = [
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "NaN",
    "inf",
    "1e300",
    "١٢",
];

/// One case: the program, its arguments after its path, and the flag whose value
/// is hostile (its name is what the refusal must say).
struct Case {
    program: &'static str,
    args: Vec<String>,
    flag: String,
    accepted: bool,
}

/// Every (flag, hostile value) of `cmd` and its subcommands, `path` the subcommand
/// names before it.
fn cases_of(program: &'static str, cmd: &clap::Command, path: &[String], out: &mut Vec<Case>) {
    let has_layer = cmd.get_arguments().any(|a| a.get_long() == Some("layer"));
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if !arg.get_action().takes_values() {
            continue;
        }
        // The sim's flags are checked on sim (elsewhere they are refused for the
        // layer, which says nothing of their values).
        let on_sim = path.iter().any(|p| p == "replay") || long.starts_with("sim-");
        let context: Vec<String> = if has_layer && on_sim && long != "sim-kill" {
            vec!["--layer".into(), "sim".into()]
        } else {
            Vec::new()
        };
        let takes = ACCEPTED
            .iter()
            .chain(if program == EXAMPLES {
                EXAMPLES_ACCEPT
            } else {
                &[]
            })
            .find(|(f, _, _)| *f == long)
            .map_or(&[][..], |(_, v, _)| *v);
        for value in HOSTILE {
            let mut args = path.to_vec();
            args.extend(context.iter().cloned());
            args.push(format!("--{long}={value}"));
            out.push(Case {
                program,
                args,
                flag: format!("--{long}"),
                accepted: takes.contains(&value),
            });
        }
    }
    for sub in cmd.get_subcommands() {
        let mut p = path.to_vec();
        p.push(sub.get_name().to_string());
        cases_of(program, sub, &p, out);
    }
}

/// Pairs of flags that contradict each other, with what the refusal names.
fn pairs() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    vec![
        (
            "chorus-tune",
            vec!["--nrep-min", "100", "--nrep-max", "5"],
            "--nrep-min",
        ),
        (
            "radix",
            vec!["--blocking", "--no-baseline"],
            "--no-baseline",
        ),
        (
            "hello",
            vec!["--trace", "t.json", "--debug-trace", "t.json"],
            "--debug-trace",
        ),
        (
            "jquick",
            vec!["--split-ring", "--sections", "range"],
            "--split-ring",
        ),
        (
            "jquick",
            vec!["--split-ring", "--compare", "create-group-model"],
            "--split-ring",
        ),
        (
            "hello",
            vec!["--layer", "threads", "--sim-kill", "1@1us"],
            "--sim-kill",
        ),
        (
            "hello",
            vec!["--layer", "threads", "--sim-alpha-us", "3"],
            "--sim-alpha-us",
        ),
        (
            "mcmc",
            vec!["--layer", "threads", "--sim-preset", "bgp"],
            "--sim-preset",
        ),
        (
            "hello",
            vec!["--fault-hold-long-ms", "5"],
            "--fault-hold-long-ms",
        ),
        ("hello", vec!["--pes-per-rank", "2"], "--pes-per-rank"),
        (
            "hello",
            vec!["--layer", "sim", "--pes", "4", "--sim-kill", "4@1us"],
            "--sim-kill",
        ),
        (
            "hello",
            vec!["--layer", "sim", "--sim-kill", "0@1us"],
            "--sim-kill",
        ),
        (
            "jacobi2d",
            vec!["--grid", "100", "--block", "32"],
            "--block",
        ),
    ]
}

/// Whether `args` name a chorus-bench subcommand that runs only on the mpi layer.
fn mpi_only(args: &[String]) -> bool {
    args.first()
        .is_some_and(|s| s == "mpi-pingpong" || s == "sections-vs-mpi")
}

/// What is wrong with `case`'s outcome, if anything.
fn judge(p: &Program, args: &[String], flag: &str, accepted: bool) -> Option<String> {
    let mut argv: Vec<OsString> = vec![p.name.into()];
    argv.extend(args.iter().map(OsString::from));
    let outcome = catch_unwind(AssertUnwindSafe(|| (p.try_parse)(argv)));
    match outcome {
        Err(_) => Some("panicked".into()),
        Ok(Ok(())) if accepted => None,
        Ok(Ok(())) => Some("accepted (ACCEPTED does not list it)".into()),
        // A value ACCEPTED lists may still be refused where a program's range or
        // layer is narrower, as long as the refusal is a usage error naming the flag.
        Ok(Err(e)) => {
            let text = e.render().to_string();
            if mpi_only(args) && !cfg!(feature = "mpi") && text.contains("built without MPI") {
                // The subcommand runs only on mpi, which this build lacks: refused
                // as a usage error before any value is looked at.
                (e.exit_code() != 2).then(|| format!("exit {}: {text}", e.exit_code()))
            } else if e.exit_code() != 2 {
                Some(format!("exit {}: {text}", e.exit_code()))
            } else if !text.contains(flag) {
                Some(format!("the message does not name {flag}: {text}"))
            } else if text.contains("panicked") || text.contains("RUST_BACKTRACE") {
                Some(format!("panic text: {text}"))
            } else {
                None
            }
        }
    }
}

#[test]
fn every_flag_of_every_program_refuses_hostile_values_naming_the_flag() {
    // Output paths are probed (created and removed) relative to here.
    let scratch = std::env::temp_dir().join(format!("chorus-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    std::env::set_current_dir(&scratch).expect("into the scratch directory");
    let all = programs::all();
    let mut cases = Vec::new();
    for p in &all {
        cases_of(p.name, &(p.command)(), &[], &mut cases);
    }
    for (program, args, flag) in pairs() {
        cases.push(Case {
            program,
            args: args.into_iter().map(String::from).collect(),
            flag: flag.into(),
            accepted: false,
        });
    }
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut wrong = Vec::new();
    for c in &cases {
        let p = all.iter().find(|p| p.name == c.program).expect("a program");
        if let Some(why) = judge(p, &c.args, &c.flag, c.accepted) {
            wrong.push(format!("{} {:?}: {why}", c.program, c.args));
        }
    }
    std::panic::set_hook(quiet);
    let left: Vec<_> = std::fs::read_dir(&scratch).expect("scratch").collect();
    std::fs::remove_dir_all(&scratch).expect("clean up");
    assert!(left.is_empty(), "the checks left files: {left:?}");
    assert!(
        cases.len() > 3000,
        "{} cases: the walk lost flags",
        cases.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {} cases wrong:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    eprintln!("{} cases", cases.len());
}

/// The binaries' wiring: a sample of refusals, one or more per binary and
/// chorus-bench subcommand, each run as a process.
#[test]
fn each_binary_refuses_hostile_values_with_exit_2_naming_the_flag() {
    let bench = env!("CARGO_BIN_EXE_chorus-bench");
    let sample: Vec<(&str, Vec<&str>, &str)> = vec![
        (env!("CARGO_BIN_EXE_hello"), vec!["--pes=-1"], "--pes"),
        (
            env!("CARGO_BIN_EXE_hello"),
            vec!["--restart=١٢"],
            "--restart",
        ),
        (
            env!("CARGO_BIN_EXE_mcmc"),
            vec!["--workload=NaN"],
            "--workload",
        ),
        (
            env!("CARGO_BIN_EXE_mcmc"),
            vec!["--group-size=4294967295"],
            "--group-size",
        ),
        (
            env!("CARGO_BIN_EXE_jquick"),
            vec!["--n-per-pe=1e300"],
            "--n-per-pe",
        ),
        (
            env!("CARGO_BIN_EXE_jquick"),
            vec!["--split-ring"],
            "--split-ring",
        ),
        (
            env!("CARGO_BIN_EXE_radix"),
            vec!["--allgather=inf"],
            "--allgather",
        ),
        (env!("CARGO_BIN_EXE_jacobi2d"), vec!["--grid=0"], "--grid"),
        (
            env!("CARGO_BIN_EXE_lb-test"),
            vec!["--degree=0"],
            "--degree",
        ),
        (
            env!("CARGO_BIN_EXE_chorus-tune"),
            vec!["--tune-profile=0"],
            "--tune-profile",
        ),
        (
            env!("CARGO_BIN_EXE_chorus-tune"),
            vec!["--array-lb=١٢"],
            "--array-lb",
        ),
        (bench, vec!["sections", "--algorithms=0"], "--algorithms"),
        (
            bench,
            vec!["sections", "--sim-alpha-us=inf"],
            "--sim-alpha-us",
        ),
        (bench, vec!["messaging", "--messages=-1"], "--messages"),
        (
            bench,
            vec!["sim-scale", "--pes=18446744073709551616"],
            "--pes",
        ),
        (
            bench,
            vec!["create-group", "--section-arity="],
            "--section-arity",
        ),
        (
            bench,
            vec!["replay", "--layer=sim", "--rounds=0"],
            "--rounds",
        ),
        (bench, vec!["lb", "--lb-period=0"], "--lb-period"),
    ];
    let mut wrong = Vec::new();
    for (bin, args, flag) in &sample {
        let out = Command::new(bin)
            .args(args)
            .output()
            .expect("the binary starts");
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = out.status.code() == Some(2)
            && err.contains(flag)
            && !err.contains("panicked")
            && !err.contains("RUST_BACKTRACE");
        if !ok {
            wrong.push(format!("{bin} {args:?}: {} {err}", out.status));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
