//! chorus-suite: the layer-parameterized runtime test suite (`chorus_tests::suite`) on
//! the mpi layer. Run it under mpirun; every rank runs every test (each gets the whole
//! job's report and checks it), and all jobs share one MPI session.
//!
//! ```text
//! mpirun -n 2 chorus-suite all                 # every suite test; rank 0 prints "ok <name>"
//! mpirun -n 4 --oversubscribe chorus-suite quiescence_fires_once_per_request_after_the_whole_cascade
//! mpirun -n 2 chorus-suite registry_mismatch   # odd ranks register other types: exit 3
//! chorus-suite --list                          # the test names (no MPI needed)
//! ```
//!
//! Exit codes: 0 all passed; 1 a test failed (its panic message is on stderr, and the
//! failing rank's exit ends the MPI job); 2 bad arguments or MPI could not start;
//! 3 `registry_mismatch` saw the expected startup error (printed on stderr by rank 0);
//! 124 a test ran longer than `--timeout` seconds (default 100).
//!
//! `fails_on_rank_1` (not part of `all`) checks this harness: it fails on rank 1 only,
//! which must end the whole run with a failure, not a hang.

use chorus_core::{mpi_launch_rank, mpi_launch_size};
use chorus_core::{Chare, Ctx, ErrorPolicy, Layer, MpiSession, Registry, Runtime, RuntimeError};
use chorus_tests::{config, pes, suite};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The name of the case that checks mismatched registrations across ranks.
const REGISTRY_MISMATCH: &str = "registry_mismatch";
/// Exit code of `registry_mismatch` when it saw the expected error.
const MISMATCH_EXIT: u8 = 3;
/// A case that fails on rank 1 only, to check that one failing rank fails the whole
/// mpirun run instead of leaving the others waiting.
const FAILS_ON_RANK_1: &str = "fails_on_rank_1";
/// The check, run before the tests, that jobs really run on the mpi layer.
const LAYER_CHECK: &str = "mpi_layer_runs_every_pe";
/// Exit code when a test outlives the timeout.
const TIMEOUT_EXIT: i32 = 124;

fn usage() -> String {
    let mut s = String::from(
        "usage: chorus-suite [--timeout SECS] (all | registry_mismatch | TEST...)\n       chorus-suite --list\ntests:\n",
    );
    for (name, _) in suite::all() {
        s.push_str("  ");
        s.push_str(name);
        s.push('\n');
    }
    s
}

fn main() -> ExitCode {
    let mut names: Vec<String> = Vec::new();
    let mut timeout = Duration::from_secs(100);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => {
                for (name, _) in suite::all() {
                    println!("{name}");
                }
                println!("{REGISTRY_MISMATCH}");
                println!("{FAILS_ON_RANK_1}");
                return ExitCode::SUCCESS;
            }
            "--timeout" => match args.next().and_then(|s| s.parse::<f64>().ok()) {
                Some(s) if s > 0.0 => timeout = Duration::from_secs_f64(s),
                _ => {
                    eprintln!("chorus-suite: --timeout needs a positive number of seconds");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                print!("{}", usage());
                return ExitCode::SUCCESS;
            }
            _ => names.push(a),
        }
    }
    if names.is_empty() {
        eprint!("chorus-suite: name the tests to run\n{}", usage());
        return ExitCode::from(2);
    }
    if names.iter().any(|n| n == REGISTRY_MISMATCH) {
        if names.len() != 1 {
            eprintln!("chorus-suite: {REGISTRY_MISMATCH} ends the job, so it runs alone");
            return ExitCode::from(2);
        }
        return with_session(registry_mismatch);
    }
    let mut tests = Vec::new();
    for n in &names {
        if n == "all" {
            tests.extend(suite::all());
        } else if n == FAILS_ON_RANK_1 {
            tests.push((FAILS_ON_RANK_1, fails_on_rank_1));
        } else if let Some(t) = suite::find(n) {
            tests.push(t);
        } else {
            eprint!("chorus-suite: no test called '{n}'\n{}", usage());
            return ExitCode::from(2);
        }
    }
    with_session(move || {
        let mut all: Vec<suite::Test> = vec![(LAYER_CHECK, layer_check)];
        all.extend(tests);
        run_tests(&all, timeout)
    })
}

/// Run `f` with MPI initialised once for the whole process, finalised afterwards.
fn with_session(f: impl FnOnce() -> ExitCode) -> ExitCode {
    let session = match MpiSession::init() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("chorus-suite: {e}");
            return ExitCode::from(2);
        }
    };
    let code = f();
    drop(session);
    code
}

/// Run `tests` in order on the mpi layer, stopping at the first failure.
fn run_tests(tests: &[suite::Test], timeout: Duration) -> ExitCode {
    let rank = mpi_launch_rank().unwrap_or(0);
    let current = Arc::new(AtomicUsize::new(0));
    watchdog(
        tests.iter().map(|(n, _)| *n).collect(),
        Arc::clone(&current),
        timeout,
    );
    let all = Instant::now();
    for (i, (name, test)) in tests.iter().enumerate() {
        current.store(i, Ordering::SeqCst);
        let start = Instant::now();
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| test(Layer::Mpi))) {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "(non-string panic)".into());
            eprintln!("FAILED {name} on rank {rank}: {msg}");
            leave_job(1);
        }
        if rank == 0 {
            println!("ok {name} ({:.3} s)", start.elapsed().as_secs_f64());
        }
    }
    if rank == 0 {
        println!(
            "suite passed: {} tests on {} ranks x {} PEs in {:.2} s",
            tests.len(),
            mpi_launch_size().unwrap_or(1),
            chorus_tests::pes_per_rank(Layer::Mpi),
            all.elapsed().as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}

extern "C" {
    /// POSIX `_exit`: ends the process at once, running no exit handlers.
    fn _exit(code: i32) -> !;
}

/// End this rank at once with `code`, without finalising MPI, so that mpirun ends the
/// other ranks too. `std::process::exit` would not do: it runs the main thread's
/// thread-local destructors, which finalise MPI, and `MPI_Finalize` waits for the
/// other ranks, which may be waiting for this one in their next job.
fn leave_job(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` takes any int and never returns; nothing of ours needs to run.
    unsafe { _exit(code) }
}

/// A thread that ends the process (and so the MPI job) if one test runs past `timeout`,
/// naming it, so a hang shows up as a clear failure rather than a stuck mpirun.
fn watchdog(names: Vec<&'static str>, current: Arc<AtomicUsize>, timeout: Duration) {
    std::thread::spawn(move || {
        let mut seen = usize::MAX;
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = current.load(Ordering::SeqCst);
            if now != seen {
                seen = now;
                since = Instant::now();
            } else if since.elapsed() > timeout {
                eprintln!(
                    "TIMEOUT {} on rank {}: still running after {:.1} s",
                    names[now],
                    mpi_launch_rank().unwrap_or(0),
                    timeout.as_secs_f64()
                );
                leave_job(TIMEOUT_EXIT);
            }
        }
    });
}

/// Publishes its PE; the members of a group say which PEs the job ran on.
struct Member;

impl Chare for Member {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Member
    }
    fn handle(&mut self, _: (), ctx: &mut Ctx) {
        ctx.publish("pe", &ctx.my_pe());
    }
}

/// The suite's jobs run on the mpi layer with `CHORUS_PES_PER_RANK` PEs (default 1)
/// per rank of the MPI job: a group broadcast reaches a member on every PE, and every
/// PE processed messages.
fn layer_check(layer: Layer) {
    assert_eq!(layer, Layer::Mpi);
    let npes = mpi_launch_size().expect("chorus-suite runs under mpirun")
        * chorus_tests::pes_per_rank(layer);
    let mut reg = Registry::new();
    reg.chare::<Member>("Member");
    let report = Runtime::new(reg, config(layer, pes(layer, 3), ErrorPolicy::Abort))
        .run(|ctx| {
            ctx.create_group::<Member>(()).broadcast(ctx, ());
            ctx.exit_on_quiescence();
        })
        .expect("run");
    assert_eq!(report.layer, "mpi");
    assert_eq!(report.pes, npes as usize);
    let mut seen: Vec<u32> = report
        .outputs::<u32>("pe")
        .into_iter()
        .map(|(_, pe)| pe)
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..npes).collect::<Vec<u32>>());
    assert_eq!(report.per_pe.len(), npes as usize);
    assert!(
        report.per_pe.iter().all(|pe| pe.processed > 0),
        "{report:?}"
    );
}

/// Fails on rank 1 after a job that every rank takes part in; the other ranks go on
/// to the next test, whose job then cannot complete without rank 1.
fn fails_on_rank_1(layer: Layer) {
    layer_check(layer);
    assert_ne!(mpi_launch_rank(), Some(1), "deliberate failure on rank 1");
}

/// A chare registered by every rank.
struct Common;

impl Chare for Common {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Common
    }
    fn handle(&mut self, _: (), ctx: &mut Ctx) {
        ctx.exit();
    }
}

/// Registered second by even ranks.
struct EvenOnly;

impl Chare for EvenOnly {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        EvenOnly
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// Registered second by odd ranks.
struct OddOnly;

impl Chare for OddOnly {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        OddOnly
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// Odd ranks register `OddOnly` where even ranks register `EvenOnly`: every rank must
/// get the startup error naming rank 1 and both types at entry 1. Rank 0 prints it;
/// the exit code is 3 if it was that error, 1 otherwise.
fn registry_mismatch() -> ExitCode {
    let rank = mpi_launch_rank().unwrap_or(0);
    let mut reg = Registry::new();
    reg.chare::<Common>("Common");
    if rank % 2 == 1 {
        reg.chare::<OddOnly>("OddOnly");
    } else {
        reg.chare::<EvenOnly>("EvenOnly");
    }
    let p = pes(Layer::Mpi, 2);
    let result = Runtime::new(reg, config(Layer::Mpi, p, ErrorPolicy::Abort)).run(|ctx| {
        let c = ctx.create_chare::<Common>((), 0);
        c.send(ctx, ());
    });
    match result {
        Err(RuntimeError::RegistryAcrossRanks {
            rank: odd,
            mismatch,
        }) if odd == 1
            && mismatch.index == 1
            && mismatch.local.contains("EvenOnly")
            && mismatch.remote.contains("OddOnly") =>
        {
            let err = RuntimeError::RegistryAcrossRanks {
                rank: odd,
                mismatch,
            };
            if rank == 0 {
                eprintln!("chorus-suite: {REGISTRY_MISMATCH}: {err}");
            }
            ExitCode::from(MISMATCH_EXIT)
        }
        Err(e) => {
            eprintln!("chorus-suite: {REGISTRY_MISMATCH} on rank {rank}: unexpected error: {e}");
            ExitCode::FAILURE
        }
        Ok(_) => {
            eprintln!("chorus-suite: {REGISTRY_MISMATCH} on rank {rank}: the job ran although the registrations differ");
            ExitCode::FAILURE
        }
    }
}
