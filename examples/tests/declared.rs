//! The three programs written with `#[chare]` (issue 34's newcomer programs): each
//! prints the right result on threads and on sim, and stays within its line budget.

use std::process::Command;

/// The output of example `bin` on `layer` with `pes` PEs.
fn run(bin: &str, layer: &str, pes: u32) -> String {
    let exe = match bin {
        "array_sum" => env!("CARGO_BIN_EXE_array_sum"),
        "split_sum" => env!("CARGO_BIN_EXE_split_sum"),
        _ => env!("CARGO_BIN_EXE_ping_pong"),
    };
    let out = Command::new(exe)
        .args(["--layer", layer, "--pes", &pes.to_string()])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{bin} {layer} {pes}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What split_sum prints for `pes` PEs: colour c holds the PEs c, c+3, ...
fn split_expected(pes: u64) -> String {
    (0..3.min(pes))
        .map(|c| {
            let members: Vec<u64> = (c..pes).step_by(3).collect();
            let sum: u64 = members.iter().sum();
            format!("colour {c}: {} members, sum {sum}\n", members.len())
        })
        .collect()
}

#[test]
fn array_sum_adds_the_indices_of_1000_elements() {
    for (layer, pes) in [("threads", 4), ("sim", 64), ("sim", 1)] {
        assert_eq!(run("array_sum", layer, pes), "sum of indices: 499500\n");
    }
}

#[test]
fn split_sum_reduces_each_of_three_colours() {
    for (layer, pes) in [("threads", 8), ("sim", 1000), ("sim", 2)] {
        let expected = split_expected(u64::from(pes));
        assert_eq!(run("split_sum", layer, pes), expected, "{layer} {pes}");
    }
}

#[test]
fn split_expectation_by_hand() {
    assert_eq!(
        split_expected(8),
        "colour 0: 3 members, sum 9\ncolour 1: 3 members, sum 12\ncolour 2: 2 members, sum 7\n"
    );
}

#[test]
fn ping_pong_makes_100000_round_trips() {
    for (layer, pes) in [("threads", 2), ("sim", 2), ("sim", 1)] {
        assert_eq!(run("ping_pong", layer, pes), "100000 round trips\n");
    }
}

/// The line budgets of issue 34 (`wc -l` of the rustfmt'd file): array_sum 20,
/// split_sum 25 and ping_pong 25.
#[test]
fn the_programs_stay_within_their_line_budgets() {
    let lines = |text: &str| text.lines().count();
    assert!(lines(include_str!("../src/bin/array_sum.rs")) <= 20);
    assert!(lines(include_str!("../src/bin/split_sum.rs")) <= 25);
    assert!(lines(include_str!("../src/bin/ping_pong.rs")) <= 25);
}
