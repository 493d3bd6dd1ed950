//! The array load-balancing mini-apps on the mpi layer: `jacobi2d` and `lb-test`
//! under `mpirun -n 2` and `mpirun -n 4 --oversubscribe`, their results exact and
//! printed once, by rank 0. Built only with the `mpi` feature; says "SKIPPED:
//! mpirun not found" and passes when MPI is not installed.
#![cfg(feature = "mpi")]

mod common;

use common::{have_mpirun, json_of};

const RANKS: [(&[&str], u64); 2] = [(&["-n", "2"], 2), (&["-n", "4", "--oversubscribe"], 4)];

/// Run `bin` with `args` under mpirun, check it was exact, and return its JSON.
fn exact_under_mpirun(mpirun_args: &[&str], pes: u64, bin: &str, args: &[&str]) {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let v = json_of(&common::mpirun(mpirun_args, bin, &with_json));
    assert_eq!(v["exact"], true, "{v}");
    assert_eq!(v["pes"], pes, "{v}");
    assert_eq!(v["layer"], "mpi", "{v}");
    assert!(v["step_s"].as_f64().is_some_and(|t| t > 0.0), "{v}");
}

#[test]
fn jacobi2d_is_exact_under_mpirun() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    for (mpirun_args, pes) in RANKS {
        let args = [
            "--grid",
            "24",
            "--block",
            "6",
            "--steps",
            "6",
            "--hot-blocks",
            "1",
        ];
        exact_under_mpirun(mpirun_args, pes, env!("CARGO_BIN_EXE_jacobi2d"), &args);
    }
}

#[test]
fn lb_test_is_exact_under_mpirun() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    for (mpirun_args, pes) in RANKS {
        for topology in ["ring", "mesh", "random"] {
            let args = [
                "--objects",
                "36",
                "--steps",
                "6",
                "--topology",
                topology,
                "--base-us",
                "5",
            ];
            exact_under_mpirun(mpirun_args, pes, env!("CARGO_BIN_EXE_lb-test"), &args);
        }
    }
}
