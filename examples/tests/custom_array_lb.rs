//! The custom_array_lb example: with `--array-lb none` nothing moves and the result
//! is exact on threads and sim; its own strategy is accepted by `--array-lb`. Its
//! decisions are checked with `check_decision` by the example's unit tests.

use std::process::Command;

/// The example's output lines with `args`, after checking it succeeded.
fn run(args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_custom_array_lb"))
        .args(args)
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The lines every run prints up to the moves, whatever the strategy.
fn exact_result(lines: &[String]) {
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0], "32 elements, 6 steps");
    let (got, expected) = lines[1]
        .strip_prefix("checksum ")
        .and_then(|l| l.split_once(" (expected "))
        .expect("a checksum line");
    assert_eq!(format!("{got})"), expected, "{lines:?}");
}

#[test]
fn without_balancing_nothing_moves_and_the_result_is_exact() {
    for layer in ["threads", "sim"] {
        let lines = run(&["--layer", layer, "--pes", "4", "--array-lb", "none"]);
        exact_result(&lines);
        assert_eq!(lines[2], "moves 0", "{layer}");
        // PE 0 holds the 8 heavy elements: 64 of the 88 units, over a mean of 22.
        assert_eq!(lines[3], "max/avg PE load in the last step 2.91", "{layer}");
    }
}

#[test]
fn an_unknown_strategy_is_refused_and_names_the_registered_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_custom_array_lb"))
        .args(["--layer", "sim", "--array-lb", "heaviest"])
        .output()
        .expect("the example runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("heaviest-rr"), "{stderr}");
}

/// The strategy moves the heavy elements off PE 0 and the result stays exact.
#[test]
fn heaviest_round_robin_moves_elements_and_keeps_the_result_exact() {
    for layer in ["threads", "sim"] {
        let lines = run(&["--layer", layer, "--pes", "4", "--array-lb", "heaviest-rr"]);
        exact_result(&lines);
        let moves: u64 = lines[2]
            .strip_prefix("moves ")
            .and_then(|m| m.parse().ok())
            .expect("a move count");
        assert!(moves > 0, "{layer}: {lines:?}");
        assert_eq!(lines[3], "max/avg PE load in the last step 1.00", "{layer}");
    }
}
