//! Checkpoint and restart on the mpi layer, and `chorus-run`: a `jacobi2d` or
//! `mcmc` job under `mpirun -n 4 --oversubscribe` whose last rank aborts after a
//! checkpoint (`--die-at-step`), restarted with `--restart` under `mpirun -n 2`,
//! ends with the uninterrupted run's answer; `chorus-run` does the same by itself,
//! printing what it did, and gives up with a non-zero status when its restarts are
//! spent. Built only with the `mpi` feature; says "SKIPPED: mpirun not found" and
//! passes when MPI is not installed.
#![cfg(feature = "mpi")]

// This test uses only some of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{have_mpirun, json_of, mpirun};
use std::path::PathBuf;
use std::process::{Command, Output};

const FOUR: [&str; 3] = ["-n", "4", "--oversubscribe"];

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-ckmpi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `args` with the checkpoint flags for `dir` (every 3 steps) added.
fn with_checkpoints(args: &[&str], dir: &std::path::Path) -> Vec<String> {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["--checkpoint-every", "3", "--checkpoint-dir"].map(String::from));
    a.push(dir.to_string_lossy().into_owned());
    a
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

const JACOBI: [&str; 9] = [
    "--json",
    "--grid",
    "24",
    "--block",
    "6",
    "--steps",
    "12",
    "--hot-blocks",
    "1",
];

/// Dies on 4 ranks at step 7, restarted on 2: the uninterrupted 4-rank answer.
fn dies_on_4_restarts_on_2(bin: &str, args: &[&str], name: &str, whole_checkpoints: bool) {
    let dir = scratch(name);
    let plain: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let whole_args = if whole_checkpoints {
        with_checkpoints(args, &scratch(&format!("{name}-whole")))
    } else {
        plain
    };
    let whole = json_of(&mpirun(&FOUR, bin, &refs(&whole_args)));
    let mut dying = with_checkpoints(args, &dir);
    dying.extend(["--die-at-step", "7"].map(String::from));
    let died = mpirun(&FOUR, bin, &refs(&dying));
    assert!(!died.status.success(), "{died:?}");
    let mut again = with_checkpoints(args, &dir);
    again.extend(["--restart".to_string(), dir.to_string_lossy().into_owned()]);
    let after = json_of(&mpirun(&["-n", "2"], bin, &refs(&again)));
    assert_eq!(after["pes"], 2, "{after}");
    assert_eq!(after["checksum"], whole["checksum"], "{after} vs {whole}");
    assert_eq!(after["exact"], true, "{after}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(scratch(&format!("{name}-whole")));
}

#[test]
fn an_mpi_job_killed_on_4_ranks_restarts_on_2_with_the_same_answer() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    let jacobi = env!("CARGO_BIN_EXE_jacobi2d");
    dies_on_4_restarts_on_2(jacobi, &JACOBI, "jacobi", false);
    let mcmc = ["--json", "--group-size", "1", "--item-ms", "0.5"];
    dies_on_4_restarts_on_2(env!("CARGO_BIN_EXE_mcmc"), &mcmc, "mcmc", true);
}

/// `chorus-run <flags> -- jacobi2d --layer mpi <JACOBI> <checkpoints> <more>`.
fn chorus_run(flags: &[&str], dir: &std::path::Path, more: &[&str]) -> Output {
    let mut program = vec![env!("CARGO_BIN_EXE_jacobi2d").to_string(), "--layer".into()];
    program.push("mpi".into());
    program.extend(with_checkpoints(&JACOBI, dir));
    program.extend(more.iter().map(|s| s.to_string()));
    Command::new("timeout")
        .args(["200", env!("CARGO_BIN_EXE_chorus-run")])
        .args(flags)
        .arg("--")
        .args(&program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_LOG", "off")
        .output()
        .expect("start chorus-run")
}

#[test]
fn chorus_run_restarts_a_failed_job_on_fewer_ranks_from_its_checkpoint() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    let whole = json_of(&mpirun(&FOUR, env!("CARGO_BIN_EXE_jacobi2d"), &JACOBI));
    let dir = scratch("launcher");
    let flags = [
        "-n",
        "4",
        "--ranks-after-failure",
        "2",
        "--mpirun-arg=--oversubscribe",
    ];
    let out = chorus_run(&flags, &dir, &["--die-at-step", "7"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let v = json_of(&out);
    assert_eq!(v["checksum"], whole["checksum"], "{said}");
    assert_eq!(v["pes"], 2, "{said}");
    for line in [
        "chorus-run: attempt 1: mpirun -n 4, from the beginning",
        "chorus-run: attempt 1 failed: it exited with status",
        "(epoch 2, 4 PEs,",
        "chorus-run: attempt 2: mpirun -n 2, from the checkpoint at step 6 in",
        "chorus-run: attempt 2 completed",
    ] {
        assert!(said.contains(line), "no {line:?} in:\n{said}");
    }
    // Element 0 may be a step or two ahead of the last one when it dies: at most
    // one interval is lost.
    let lost = said
        .lines()
        .find_map(|l| l.strip_prefix("chorus-run: work lost: "))
        .and_then(|l| l.split(' ').next()?.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("no work-lost line in:\n{said}"));
    assert!((1..=3).contains(&lost), "{lost} steps lost:\n{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chorus_run_gives_up_when_its_restarts_are_spent() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    let dir = scratch("give-up");
    let out = chorus_run(
        &["-n", "2", "--max-restarts", "0"],
        &dir,
        &["--die-at-step", "4"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("chorus-run: gave up after 1 attempts (0 restarts"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chorus_run_refuses_a_program_that_does_not_checkpoint() {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-run"))
        .args(["-n", "2", "--", "hello", "--layer", "mpi"])
        .output()
        .expect("start chorus-run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no --checkpoint-dir DIR"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-run"))
        .args(["-n", "2", "--ranks-after-failure", "3", "--", "x"])
        .output()
        .expect("start chorus-run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
