//! jquick under mpirun: range sections on the mpi layer and the MPI_Comm_split
//! baseline sort correctly. Built only with the `mpi` feature; says "SKIPPED: mpirun
//! not found" and passes when MPI is not installed.
#![cfg(feature = "mpi")]

use serde_json::Value;
use std::process::{Command, Output, Stdio};

/// True if `mpirun` is on the PATH.
fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `mpirun -n ranks --oversubscribe jquick --layer mpi args`, killed after two minutes.
fn mpirun(ranks: u32, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["120", "mpirun", "-n", &ranks.to_string(), "--oversubscribe"])
        .arg(env!("CARGO_BIN_EXE_jquick"))
        .args(["--layer", "mpi"])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_LOG", "off")
        .output()
        .expect("start mpirun")
}

/// The one JSON object rank 0 printed.
fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(
        lines.len(),
        1,
        "one JSON object, from rank 0 only:\n{stdout}"
    );
    serde_json::from_str(lines[0]).expect("valid JSON")
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
