//! The custom_lb example compares its strategy with none and collective: exactly
//! (virtual times) on sim, and on threads everything but the measured times.

use std::process::Command;

/// The example's output lines on `layer` with `pes` PEs and the default seed.
fn run(layer: &str, pes: u32) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_custom_lb"))
        .args(["--layer", layer, "--pes", &pes.to_string()])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{layer} {pes}: {stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn on_sim_16_pes_the_comparison_is_exact() {
    assert_eq!(
        run("sim", 16),
        [
            "16 PEs in groups of 2, T = 4 ms, random workload (seed 1): ideal 0.336 s",
            "none           makespan 0.515 s, speed-up over none 1.00x, regroups per PE 0.00",
            "collective:8   makespan 0.383 s, speed-up over none 1.35x, regroups per PE 3.25",
            "even:8         makespan 0.370 s, speed-up over none 1.39x, regroups per PE 4.75",
        ]
    );
}

/// A strategy line with its measured makespan and speed-up replaced by `_`, after
/// checking that they are numbers.
fn without_times(line: &str) -> String {
    let (name, rest) = line.split_once("makespan ").expect("a makespan");
    let (times, regroups) = rest.split_once(", regroups").expect("regroups");
    let (makespan, speedup) = times.split_once(" s, speed-up over none ").expect("times");
    let makespan: f64 = makespan.parse().expect("a makespan in s");
    let speedup: f64 = speedup.trim_end_matches('x').parse().expect("a speed-up");
    assert!(makespan > 0.0 && speedup > 0.0, "{line}");
    format!("{name}makespan _ s, speed-up over none _x, regroups{regroups}")
}

#[test]
fn on_threads_8_pes_all_but_the_times_are_exact() {
    // Times are measured on threads; the regroups are not: exchanges happen every
    // 8 steps of every chain, whatever the timing, so every PE sees the same loads.
    let lines = run("threads", 8);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[0],
        "8 PEs in groups of 2, T = 4 ms, random workload (seed 1): ideal 0.357 s"
    );
    let rest: Vec<String> = lines[1..].iter().map(|l| without_times(l)).collect();
    assert_eq!(
        rest,
        [
            "none           makespan _ s, speed-up over none _x, regroups per PE 0.00",
            "collective:8   makespan _ s, speed-up over none _x, regroups per PE 2.00",
            "even:8         makespan _ s, speed-up over none _x, regroups per PE 2.75",
        ]
    );
}
