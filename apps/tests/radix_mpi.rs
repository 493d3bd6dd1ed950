//! The radix binary on the mpi layer: `mpirun -n 2` and `mpirun -n 4 --oversubscribe`
//! sort with every allgather, overlapped and blocking, and print one JSON object from
//! rank 0. Built only with the `mpi` feature; says "SKIPPED: mpirun not found" and
//! passes when MPI is not installed.
#![cfg(feature = "mpi")]

use std::process::{Command, Stdio};

/// True if `mpirun` is on the PATH.
fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run the radix binary under mpirun and return its JSON output.
fn mpirun_radix(mpirun_args: &[&str], radix_args: &[&str]) -> serde_json::Value {
    let out = Command::new("timeout")
        .arg("120")
        .arg("mpirun")
        .args(mpirun_args)
        .arg(env!("CARGO_BIN_EXE_radix"))
        .args(["--layer", "mpi", "--json"])
        .args(radix_args)
        // CI runs as root, which OpenMPI refuses unless told it is intended.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_LOG", "off")
        .output()
        .expect("start mpirun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mpirun {mpirun_args:?} radix {radix_args:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), 1, "one JSON object, from rank 0\n{stdout}");
    serde_json::from_str(lines[0]).expect("valid JSON")
}

#[test]
fn radix_sorts_under_mpirun() {
    if !have_mpirun() {
        println!("SKIPPED: mpirun not found");
        return;
    }
    for (mpirun_args, pes) in [
        (&["-n", "2"][..], 2),
        (&["-n", "4", "--oversubscribe"][..], 4),
    ] {
        for key in ["u32", "u64"] {
            let v = mpirun_radix(
                mpirun_args,
                &[
                    "--key",
                    key,
                    "--keys-per-pe",
                    "3000",
                    "--allgather",
                    "all",
                    "--ports",
                    "2",
                ],
            );
            assert_eq!(v["sorted"], true, "{v}");
            assert_eq!(v["pes"], pes, "{v}");
            assert_eq!(v["keys"], 3000 * pes, "{v}");
            let algorithms = v["algorithms"].as_array().expect("one entry per algorithm");
            assert_eq!(algorithms.len(), 3, "{v}");
            for a in algorithms {
                assert_eq!(a["sorted"], true, "{a}");
                assert!(
                    a["blocking_time_s"].as_f64().is_some_and(|t| t > 0.0),
                    "{a}"
                );
                assert!(a.get("overlap").is_some(), "{a}");
            }
        }
    }
}
