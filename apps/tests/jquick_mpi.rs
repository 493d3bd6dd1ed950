//! jquick under mpirun: range sections on the mpi layer and the MPI_Comm_split
//! baseline sort correctly. Built only with the `mpi` feature; says "SKIPPED: mpirun
//! not found" and passes when MPI is not installed.
#![cfg(feature = "mpi")]

mod common;

use common::{have_mpirun, json_of};
use std::process::{Command, Output};

/// `mpirun -n ranks --oversubscribe jquick --layer mpi args`.
fn mpirun(ranks: u32, args: &[&str]) -> Output {
    let n = ranks.to_string();
    common::mpirun(
        &["-n", &n, "--oversubscribe"],
        env!("CARGO_BIN_EXE_jquick"),
        args,
    )
}

#[test]
fn range_and_mpi_split_sort_under_mpirun() {
    if !have_mpirun() {
        eprintln!("SKIPPED: mpirun not found");
        return;
    }
    let v = json_of(&mpirun(
        3,
        &["--n", "1001", "--input", "duplicates", "--json", "--verify"],
    ));
    assert_eq!(
        (v["sorted"].as_bool(), v["balanced"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!((v["n"].as_u64(), v["pes"].as_u64()), (Some(1001), Some(3)));
    let args = [
        "--compare",
        "--reps",
        "1",
        "--n-per-pe",
        "200",
        "--input",
        "equal",
        "--key",
        "f64",
        "--json",
        "--verify",
    ];
    let v = json_of(&mpirun(5, &args));
    assert_eq!(v["sorted"].as_bool(), Some(true), "{v}");
    assert_eq!(v["balanced"].as_bool(), Some(true), "{v}");
    assert!(
        v["mpi_split_time_s"].as_f64().is_some_and(|t| t > 0.0),
        "{v}"
    );
    // Taking the splits out leaves a positive time, shorter than the whole sort.
    let (whole, rest) = (
        v["mpi_split_time_s"].as_f64().unwrap_or(0.0),
        v["mpi_split_without_split_s"].as_f64().unwrap_or(0.0),
    );
    assert!(rest > 0.0 && rest < whole, "{v}");
    assert!(
        v["mpi_split_communicators"]
            .as_u64()
            .is_some_and(|c| c >= 1),
        "{v}"
    );
}

#[test]
fn mpi_split_off_the_mpi_layer_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_jquick"))
        .args(["--layer", "threads", "--sections", "mpi-split"])
        .output()
        .expect("run jquick");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs --layer mpi"), "{err}");
}
