//! The sections example prints one line per colour, with the right counts and sums,
//! on threads and on sim.

use std::process::Command;

/// The example's output lines, sorted, on `layer` with `pes` PEs.
fn run(layer: &str, pes: u32) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_sections"))
        .args(["--layer", layer, "--pes", &pes.to_string()])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{layer} {pes}: {stderr}");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// What the example must print for `pes` PEs: colour c holds the PEs c, c+2, ...
fn expected(pes: u64) -> Vec<String> {
    (0..2u64)
        .map(|c| {
            let members: Vec<u64> = (c..pes).step_by(2).collect();
            let sum: u64 = members.iter().sum();
            format!("colour {c}: {} members, sum {sum}", members.len())
        })
        .collect()
}

#[test]
fn on_threads_8_pes() {
    assert_eq!(run("threads", 8), expected(8));
}

#[test]
fn on_sim_1000_pes() {
    assert_eq!(run("sim", 1000), expected(1000));
}

#[test]
fn the_expectation_matches_the_issue_at_100000_pes() {
    assert_eq!(
        expected(100_000),
        [
            "colour 0: 50000 members, sum 2499950000",
            "colour 1: 50000 members, sum 2500000000"
        ]
    );
}

#[test]
fn an_error_is_reported_once_in_words_and_without_colour_on_a_pipe() {
    // Every user message to another PE arrives damaged: the job ends with an error.
    let out = Command::new(env!("CARGO_BIN_EXE_sections"))
        .args(["--pes", "4", "--fault-corrupt-every", "1"])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the job fails: {stderr}");
    assert!(!stderr.contains('\x1b'), "no colour on a pipe: {stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one report: {stderr}");
    assert!(
        lines[0].starts_with("sections: ") && lines[0].contains("could not decode"),
        "the program's name, then the error's words: {stderr}"
    );
}
