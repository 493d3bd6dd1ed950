//! `chorus-bench replay` run as two separate processes gives the same digest: the
//! runtime's iteration order depends on nothing a process draws for itself (ahash's
//! per-process keys once made array broadcasts and the location table differ).

use std::process::Command;

/// Run `chorus-bench replay` with `args`; its JSON object.
fn replay(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .arg("replay")
        .args(args)
        .output()
        .expect("chorus-bench runs");
    assert!(
        out.status.success(),
        "chorus-bench replay {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

#[test]
fn two_processes_deliver_the_same_events_in_the_same_order() {
    let args = ["--layer", "sim", "--pes", "4096", "--seed", "7", "--json"];
    let a = replay(&args);
    let b = replay(&args);
    let events = a["events"].as_u64().expect("events");
    assert!(events >= 100_000, "only {events} deliveries");
    assert_eq!(a["events"], b["events"]);
    assert_eq!(a["event_log_digest"], b["event_log_digest"]);
    assert_eq!(
        a["digest"], b["digest"],
        "delivery digests differ: {a} vs {b}"
    );
}

#[test]
fn another_seed_gives_another_digest() {
    // The digest sees the workload: a change of seed must show.
    let a = replay(&["--layer", "sim", "--pes", "64", "--seed", "1", "--json"]);
    let b = replay(&["--layer", "sim", "--pes", "64", "--seed", "2", "--json"]);
    assert_ne!(a["digest"], b["digest"]);
}

#[test]
fn replay_needs_the_sim_layer() {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args(["replay", "--layer", "threads", "--pes", "4"])
        .output()
        .expect("chorus-bench runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--layer sim"));
}
