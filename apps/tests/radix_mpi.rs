//! The radix binary on the mpi layer: `mpirun -n 2` and `mpirun -n 4 --oversubscribe`
//! sort with every allgather, overlapped and blocking, and print one JSON object from
//! rank 0. Built only with the `mpi` feature; says "SKIPPED: mpirun not found" and
//! passes when MPI is not installed.
#![cfg(feature = "mpi")]

mod common;

use common::{have_mpirun, json_of};

/// Run the radix binary under mpirun and return its JSON output.
fn mpirun_radix(mpirun_args: &[&str], radix_args: &[&str]) -> serde_json::Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(radix_args);
    json_of(&common::mpirun(
        mpirun_args,
        env!("CARGO_BIN_EXE_radix"),
        &args,
    ))
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
