//! The arrays example counts every element once after half of them moved, on
//! threads and on sim, and its elements end up where the moves put them.

use std::process::Command;

/// The example's output on `layer` with `pes` PEs.
fn run(layer: &str, pes: u32) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_arrays"))
        .args(["--layer", layer, "--pes", &pes.to_string()])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{layer} {pes}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What it prints with `per_pe` elements on each PE after the moves.
fn expected(moves: u32, per_pe: &str) -> String {
    format!(
        "6 x 4 = 24 elements, 24 counted, {moves} moves\n\
         index sum 276 (expected 276)\n\
         elements per PE after the moves: {per_pe}\n"
    )
}

#[test]
fn on_threads_4_pes() {
    // Block puts elements 0-5 (row-major) on PE 0, 6-11 on PE 1, ...; the even
    // rows (0-3, 8-11, 16-19) move one PE up, the last wrapping to PE 0.
    assert_eq!(run("threads", 4), expected(12, "[4, 6, 8, 6]"));
}

#[test]
fn on_sim_16_pes() {
    let per_pe = "[0, 2, 2, 2, 2, 0, 1, 2, 3, 1, 1, 1, 1, 3, 2, 1]";
    assert_eq!(run("sim", 16), expected(12, per_pe));
}

#[test]
fn on_one_pe_nothing_moves() {
    assert_eq!(run("sim", 1), expected(0, "[24]"));
}
