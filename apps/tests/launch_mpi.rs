//! Programs under mpirun: one that would run a job per rank on another layer is
//! refused with a clear error, and the benchmarks that always run on the mpi layer
//! start without `--layer mpi`, as the README shows them. Built only with the `mpi`
//! feature; says "SKIPPED: mpirun not found" and passes when MPI is not installed.
#![cfg(feature = "mpi")]

// This test uses only some of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{have_mpirun, json_of};
use std::process::Output;

/// `mpirun -n 2 bin args`, exactly as a user types it.
fn mpirun_2(bin: &str, args: &[&str]) -> Output {
    common::mpirun_as_typed(&["-n", "2"], bin, args)
}

#[test]
fn a_threads_job_under_mpirun_is_refused_with_the_flag_to_pass() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    let out = mpirun_2(env!("CARGO_BIN_EXE_hello"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused\n{stderr}");
    assert!(
        stderr.contains("one of 2 MPI ranks") && stderr.contains("pass --layer mpi"),
        "{stderr}"
    );
}

#[test]
fn a_pes_the_ranks_do_not_make_is_refused_even_the_defaults_value() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    // 4 is --pes's default; given, it is a claim the 2 ranks do not make.
    let out = mpirun_2(
        env!("CARGO_BIN_EXE_hello"),
        &["--layer", "mpi", "--pes", "4"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused\n{stderr}");
    assert!(stderr.contains("--pes 4 under mpirun -n 2"), "{stderr}");
}

#[test]
fn mpi_pingpong_runs_under_mpirun_without_a_layer_flag() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    let out = mpirun_2(
        env!("CARGO_BIN_EXE_chorus-bench"),
        &["mpi-pingpong", "--sizes", "8,1024", "--json"],
    );
    let v = json_of(&out);
    assert_eq!(v["sizes"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(
        v["latency_ratio"][0].as_f64().is_some_and(|r| r > 0.0),
        "{v}"
    );
}

#[test]
fn a_job_under_mpirun_prints_its_result_once() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    let out = mpirun_2(env!("CARGO_BIN_EXE_hello"), &["--layer", "mpi"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let lines = stdout
        .lines()
        .filter(|l| l.contains("PEs on the mpi layer"))
        .count();
    assert_eq!(
        lines, 1,
        "printed by rank 0 only (is_root_process):\n{stdout}"
    );
}

#[test]
fn mcmc_runs_on_as_many_pes_as_mpirun_starts_ranks() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    // Three ranks, where --pes defaults to 4: the walker groups must be laid out on
    // the job's 3 PEs, or the group on a fourth PE never exists and the job stalls.
    let out = common::mpirun_as_typed(
        &["-n", "3", "--oversubscribe"],
        env!("CARGO_BIN_EXE_mcmc"),
        &[
            "--layer",
            "mpi",
            "--group-size",
            "1",
            "--lb",
            "none",
            "--item-ms",
            "5",
            "--json",
        ],
    );
    let v = json_of(&out);
    assert_eq!(v["pes"], 3, "{v}");
    assert!(v["strategies"][0]["makespan_s"].as_f64().is_some(), "{v}");
}
