//! `chorus-bench create-group`: the shape of the three modelled communicator
//! creations on 512 simulated Blue Gene/P PEs (Dinan et al., Figure 1), and chorus's
//! Shrink-and-Hash beside them.

use std::process::Command;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .arg("create-group")
        .args(args)
        .output()
        .expect("chorus-bench runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dinan_is_log_squared_comm_create_flat_and_create_group_between() {
    let (code, out, err) = bench(&["--pes", "512", "--sim-preset", "bgp", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    let rows = v["rows"].as_array().expect("rows");
    let col = |name: &str| -> Vec<f64> { rows.iter().map(|r| r[name].as_f64().unwrap()).collect() };
    let groups: Vec<u64> = rows.iter().map(|r| r["group"].as_u64().unwrap()).collect();
    assert_eq!(groups, vec![2, 4, 8, 16, 32, 64, 128, 256, 512]);
    let (dinan, create, group) = (
        col("dinan_us"),
        col("comm_create_us"),
        col("create_group_us"),
    );
    // MPI_Comm_create runs the same allreduce over all 512 PEs whatever the group.
    let (lo, hi) = create
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(
        lo > 0.0 && hi / lo < 1.05,
        "comm_create not flat: {create:?}"
    );
    // Dinan et al.: faster for the smallest groups, far slower for the whole machine,
    // and each round dearer than the last (its collectives span 2^r members): log^2 g.
    assert!(dinan[0] < create[0], "{dinan:?} vs {create:?}");
    assert!(dinan[8] > 10.0 * create[8], "{dinan:?} vs {create:?}");
    let rounds: Vec<f64> = dinan.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        rounds.windows(2).all(|w| w[1] > w[0]),
        "round costs {rounds:?}"
    );
    // MPICH's native MPI_Comm_create_group: an allreduce over the members only, so
    // growing with g and never above the allreduce over everyone.
    assert!(group.windows(2).all(|w| w[1] > w[0]), "{group:?}");
    assert!(
        group.iter().zip(&create).all(|(g, c)| g <= c),
        "{group:?} vs {create:?}"
    );
    assert!(
        (group[8] - create[8]).abs() < 1e-9,
        "{group:?} vs {create:?}"
    );
    // chorus's Shrink-and-Hash from the world: collective over every PE, as
    // MPI_Comm_create is, but it builds a spanning tree of the members and discovers
    // their neighbours, so it grows with g; within 2x of MPI_Comm_create throughout.
    let built = col("shrink_and_hash_us");
    assert!(built.windows(2).all(|w| w[1] > w[0]), "{built:?}");
    assert!(
        built
            .iter()
            .zip(&create)
            .all(|(b, c)| *b > 0.5 * c && *b < 2.0 * c),
        "{built:?} vs {create:?}"
    );
}

#[test]
fn a_group_larger_than_the_machine_is_a_usage_error() {
    let (code, _, err) = bench(&["--pes", "8", "--group-sizes", "4,9"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--group-sizes 9 is more than --pes 8"),
        "{err}"
    );
    let (code, _, err) = bench(&["--pes", "8", "--group-sizes", "0"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn groups_of_any_size_are_made_under_jitter() {
    // A tail block without a partner finishes its rounds early; its leader's
    // exchanges then reach the other leader while that one still runs a collective.
    for jitter in ["0", "3"] {
        let args = [
            "--pes",
            "64",
            "--group-sizes",
            "3,5,7,13,33,64",
            "--sim-jitter-us",
            jitter,
            "--json",
        ];
        let (code, out, err) = bench(&args);
        assert_eq!(code, Some(0), "jitter {jitter}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
        let dinan: Vec<f64> = v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["dinan_us"].as_f64().unwrap())
            .collect();
        assert_eq!(dinan.len(), 6);
        // Sizes with as many rounds may swap under jitter; the whole machine costs most.
        assert!(dinan[0] > 0.0, "jitter {jitter}: {dinan:?}");
        assert!(
            dinan[..5].iter().all(|&d| d < dinan[5]),
            "jitter {jitter}: {dinan:?}"
        );
    }
}
