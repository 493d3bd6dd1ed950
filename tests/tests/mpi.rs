//! The runtime test suite on the mpi layer: runs the `chorus-suite` binary under
//! `mpirun -n 2` and `mpirun -n 4 --oversubscribe`, and with several PEs per rank
//! (`-n 2` x 2 and `-n 3` x 3, the SMP mode), and checks that mismatched
//! registrations across ranks give the clear startup error. Built only with the `mpi`
//! feature; says "SKIPPED: mpirun not found" and passes when MPI is not installed.
#![cfg(feature = "mpi")]

use chorus_tests::suite;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long one mpirun may take before it is killed.
const LIMIT: Duration = Duration::from_secs(120);

/// What one mpirun run left behind.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// True if `mpirun` is on the PATH.
fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run `mpirun <mpirun_args> chorus-suite <suite_args>`, killing it after `LIMIT`.
fn mpirun(mpirun_args: &[&str], suite_args: &[&str]) -> Outcome {
    mpirun_smp(mpirun_args, 1, suite_args)
}

/// `mpirun` with `ppr` PEs per rank (`CHORUS_PES_PER_RANK`, passed to every rank).
fn mpirun_smp(mpirun_args: &[&str], ppr: u32, suite_args: &[&str]) -> Outcome {
    let bin = env!("CARGO_BIN_EXE_chorus-suite");
    let start = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["-x", "CHORUS_PES_PER_RANK"])
        .env("CHORUS_PES_PER_RANK", ppr.to_string())
        .args(mpirun_args)
        .arg(bin)
        .args(["--timeout", "90"])
        .args(suite_args)
        // CI runs as root, which OpenMPI refuses unless told it is intended.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Only the suite's own output: no runtime log lines from expected errors.
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mpirun");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).ok();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for mpirun") {
            break status;
        }
        if start.elapsed() > LIMIT {
            // SIGTERM first: mpirun then takes its ranks down with it.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
            let status = child.wait().expect("wait for killed mpirun");
            let stdout = reader.join().unwrap_or_default();
            let stderr = err_reader.join().unwrap_or_default();
            panic!(
                "mpirun {mpirun_args:?} chorus-suite {suite_args:?} still running after {LIMIT:?}; killed ({status})\nstdout:\n{stdout}\nstderr:\n{stderr}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Outcome {
        status,
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
        took: start.elapsed(),
    }
}

/// The whole suite passes on `ranks` ranks of `ppr` PEs each, with an `ok` line per
/// test from rank 0.
fn suite_passes_on(mpirun_args: &[&str], ranks: u32, ppr: u32) {
    let run = mpirun_smp(mpirun_args, ppr, &["all"]);
    println!(
        "mpirun {} chorus-suite all ({ppr} PEs per rank): {:.1} s\n{}",
        mpirun_args.join(" "),
        run.took.as_secs_f64(),
        run.stdout
    );
    assert!(
        run.status.success(),
        "mpirun {mpirun_args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
    let tests = suite::all();
    assert!(tests.len() >= 20, "the suite lists its tests");
    // The layer check runs first, then every suite test.
    let names = std::iter::once("mpi_layer_runs_every_pe").chain(tests.iter().map(|(n, _)| *n));
    for name in names {
        let line = format!("ok {name} (");
        assert_eq!(
            run.stdout.lines().filter(|l| l.starts_with(&line)).count(),
            1,
            "one 'ok {name}' line from rank 0\nstdout:\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains(&format!(
            "suite passed: {} tests on {ranks} ranks x {ppr} PEs",
            tests.len() + 1
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn the_suite_passes_under_mpirun_on_2_and_4_ranks() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found (scripts/install-mpi.sh installs OpenMPI)");
        return;
    }
    suite_passes_on(&["-n", "2"], 2, 1);
    suite_passes_on(&["-n", "4", "--oversubscribe"], 4, 1);
}

#[test]
fn the_suite_passes_with_several_pes_per_rank() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found (scripts/install-mpi.sh installs OpenMPI)");
        return;
    }
    suite_passes_on(&["-n", "2"], 2, 2);
    suite_passes_on(&["-n", "3", "--oversubscribe"], 3, 3);
}

#[test]
fn ranks_that_disagree_on_pes_per_rank_give_a_clear_startup_error() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found (scripts/install-mpi.sh installs OpenMPI)");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_chorus-suite");
    let rank = |ppr: &str| {
        let mut args = vec!["-n", "1", "-x", "RUST_LOG=off", "env"];
        args.push(if ppr == "1" {
            "CHORUS_PES_PER_RANK=1"
        } else {
            "CHORUS_PES_PER_RANK=2"
        });
        args.extend([
            bin,
            "--timeout",
            "60",
            "quiescence_fires_once_per_request_after_the_whole_cascade",
        ]);
        args
    };
    let mut args = rank("1");
    args.push(":");
    args.extend(rank("2"));
    let out = Command::new("mpirun")
        .args(&args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("run mpirun");
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("mpirun with 1 and 2 PEs per rank: {}\n{stderr}", out.status);
    assert!(!out.status.success(), "the job must fail");
    assert!(
        // The suite reports a test's `expect` in Debug form: the typed error.
        stderr.contains("PesPerRankDiffer { rank: 1, theirs: 2, first: 1 }"),
        "every rank names the disagreement\nstderr:\n{stderr}"
    );
}

#[test]
fn mismatched_registrations_across_ranks_give_a_clear_startup_error() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found (scripts/install-mpi.sh installs OpenMPI)");
        return;
    }
    let run = mpirun(&["-n", "2"], &["registry_mismatch"]);
    println!(
        "mpirun -n 2 chorus-suite registry_mismatch: {:.1} s, {}\n{}",
        run.took.as_secs_f64(),
        run.status,
        run.stderr
    );
    assert_eq!(
        run.status.code(),
        Some(3),
        "every rank saw the expected error\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("chorus-suite: registry_mismatch: "))
        .unwrap_or_else(|| panic!("rank 0 printed the error\nstderr:\n{}", run.stderr));
    for says in [
        "rank 1 registered different types than rank 0",
        "differs at entry 1",
        "chare EvenOnly",
        "chare OddOnly",
        "same order",
    ] {
        assert!(line.contains(says), "'{line}' should say '{says}'");
    }
}

#[test]
fn a_test_failing_on_one_rank_fails_the_run_instead_of_hanging() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found (scripts/install-mpi.sh installs OpenMPI)");
        return;
    }
    // Rank 0 passes the failing case and starts the next test's job, which needs
    // rank 1: the run must still end, as a failure, well before the limit.
    let run = mpirun(
        &["-n", "2"],
        &[
            "fails_on_rank_1",
            "quiescence_fires_once_per_request_after_the_whole_cascade",
        ],
    );
    println!(
        "mpirun -n 2 chorus-suite fails_on_rank_1 ...: {:.1} s, {}",
        run.took.as_secs_f64(),
        run.status
    );
    assert!(!run.status.success(), "stdout:\n{}", run.stdout);
    assert!(
        run.stderr.contains("FAILED fails_on_rank_1 on rank 1"),
        "stderr:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("deliberate failure on rank 1"),
        "stderr:\n{}",
        run.stderr
    );
    assert!(!run.stdout.contains("suite passed"), "{}", run.stdout);
    assert!(run.took < Duration::from_secs(60), "took {:?}", run.took);
}
