//! The ports of Charm++'s benchmarks (`chorus-bench charm-*`) at small sizes: each
//! runs to the end on two threads-layer PEs, passes its own check of the result and
//! reports figures in the shape scripts/vs-charm.sh parses.

use std::process::Command;

/// Run `chorus-bench <args> --layer threads --pes 2`; its stdout (it must succeed).
fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args(args)
        .args(["--layer", "threads", "--pes", "2"])
        .output()
        .expect("chorus-bench runs");
    assert!(
        out.status.success(),
        "chorus-bench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// The same, with --json: its one object.
fn bench_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&bench(&all)).expect("one JSON object on stdout")
}

fn positive(v: &serde_json::Value, key: &str) -> f64 {
    let x = v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"));
    assert!(x > 0.0 && x.is_finite(), "{key} = {x} in {v}");
    x
}

#[test]
fn pingpong_prints_the_originals_lines() {
    let out = bench(&["charm-pingpong", "--payload", "64", "--iterations", "50"]);
    assert!(
        out.starts_with("Pingpong with payload: 64 iterations: 50\n"),
        "{out}"
    );
    assert!(out.contains("Roundtrip time for 1D Arrays is "), "{out}");
    assert!(out.contains("Roundtrip time for Groups is "), "{out}");
    let v = bench_json(&["charm-pingpong", "--payload", "8", "--iterations", "20"]);
    positive(&v, "array_us");
    positive(&v, "group_us");
}

#[test]
fn kneighbor_counts_every_request_and_reply() {
    let v = bench_json(&[
        "charm-kneighbor",
        "--elements",
        "5",
        "--steps",
        "3",
        "--msg-size",
        "64",
    ]);
    // 5 blocks x 6 neighbours x (request + reply) x 100 exchanges x 3 steps.
    assert_eq!(v["messages"], 5 * 6 * 2 * 100 * 3);
    assert!(positive(&v, "lowest_us") <= positive(&v, "highest_us"));
    positive(&v, "average_us");
}

#[test]
fn kneighbor_raises_the_elements_to_the_pes() {
    let v = bench_json(&["charm-kneighbor", "--elements", "1", "--steps", "2"]);
    assert_eq!(v["elements"], 2);
    assert_eq!(v["messages"], 2 * 6 * 2 * 100 * 2);
}

#[test]
fn xcastredn_times_both_mechanisms_at_every_size() {
    let v = bench_json(&["charm-xcastredn", "--repeats", "2", "--msg-size-max", "1"]);
    let rows = v["rows"].as_array().expect("rows");
    // 8 B to 1 KB doubling is 8 sizes, for each of the two mechanisms.
    assert_eq!(rows.len(), 16, "{v}");
    assert!(rows.iter().all(|r| r["avg_ms"].as_f64() > Some(0.0)));
    let out = bench(&["charm-xcastredn", "--repeats", "1", "--msg-size-max", "1"]);
    assert!(out.contains("Finished timing the collectives mechanism: Charm-Redn. Results:"));
}

#[test]
fn migrate_moves_the_element_with_its_data() {
    let v = bench_json(&["charm-migrate", "--iterations", "50", "--data-size", "4096"]);
    assert_eq!(v["data_size"], 4096);
    positive(&v, "per_migration_us");
}

#[test]
fn migrate_refuses_one_pe() {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args([
            "charm-migrate",
            "--layer",
            "threads",
            "--pes",
            "1",
            "--iterations",
            "10",
        ])
        .output()
        .expect("chorus-bench runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 PEs or more"));
}

#[test]
fn alltoall_delivers_every_item() {
    let v = bench_json(&["charm-alltoall", "--data-size-max", "2048"]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 7, "32 B to 2 KB doubling: {v}");
    assert_eq!(rows[6]["iterations"], 64);
}

#[test]
fn jacobi2d_matches_the_serial_stencil() {
    // The original's Makefile test (32 cells, blocks of 16), and a 4 x 4 array.
    for (size, block) in [("32", "16"), ("48", "12")] {
        let v = bench_json(&["charm-jacobi2d", "--size", size, "--block", block]);
        assert_eq!(v["converged"], true, "{v}");
        assert!(v["iterations"].as_u64() > Some(1), "{v}");
    }
    let out = bench(&["charm-jacobi2d", "--max-iterations", "5"]);
    assert!(
        out.starts_with("Finish due to max iterations 5, total time "),
        "{out}"
    );
}

#[test]
fn bad_parameters_are_usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args(["charm-jacobi2d", "--size", "30", "--block", "8"])
        .output()
        .expect("chorus-bench runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--block dividing --size"));
}

/// `chorus-bench charm-leanmd` on a 3 x 3 x 2 box for 20 steps (small enough for
/// CI), with `layer_args` for the job; its one JSON object.
fn leanmd(layer_args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args([
            "charm-leanmd",
            "--dim-x",
            "3",
            "--dim-y",
            "3",
            "--dim-z",
            "2",
        ])
        .args([
            "--steps",
            "20",
            "--first-ldb-step",
            "5",
            "--ldb-period",
            "5",
            "--json",
        ])
        .args(layer_args)
        .output()
        .expect("chorus-bench runs");
    assert!(
        out.status.success(),
        "charm-leanmd {layer_args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

#[test]
fn leanmd_conserves_energy_and_particles_alike_on_threads_and_sim() {
    // 18 cells of 100 + 150 id / 18 particles each; balancing after steps 5, 10
    // and 15, and an exchange of particles at step 20.
    let want: u64 = (0..18).map(|id| 100 + id * 150 / 18).sum();
    let threads = leanmd(&["--layer", "threads", "--pes", "2", "--array-lb", "greedy"]);
    let sim = leanmd(&["--layer", "sim", "--pes", "3", "--array-lb", "refine"]);
    for v in [&threads, &sim] {
        assert_eq!(v["particles"], want, "{v}");
        assert_eq!(v["computes"], 38 * 18, "{v}");
        let (i, f) = (positive(v, "initial_energy"), positive(v, "final_energy"));
        assert!((f - i).abs() < 1e-5 && f != i, "{v}");
    }
    // Sums in a fixed order: the same bits whatever the layer, PEs and strategy.
    for key in ["initial_energy", "final_energy"] {
        assert_eq!(threads[key], sim[key], "{key}: {threads} / {sim}");
    }
}
