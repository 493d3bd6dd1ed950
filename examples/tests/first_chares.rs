//! The first_chares example prints its one line, with the right sum, on threads and
//! on sim.

use std::process::Command;

/// The example's output on `layer` with `pes` PEs.
fn run(layer: &str, pes: u32) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_first_chares"))
        .args(["--layer", layer, "--pes", &pes.to_string()])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{layer} {pes}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn on_threads_4_pes() {
    assert_eq!(
        run("threads", 4),
        "4 members answered; their PE numbers add up to 6 (expected 6)\n"
    );
}

#[test]
fn on_sim_1000_pes() {
    assert_eq!(
        run("sim", 1000),
        "1000 members answered; their PE numbers add up to 499500 (expected 499500)\n"
    );
}

#[test]
fn a_bad_flag_is_a_usage_error_naming_the_program() {
    let out = Command::new(env!("CARGO_BIN_EXE_first_chares"))
        .args(["--pess", "4"])
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("Usage: first_chares"), "{stderr}");
}

#[test]
fn the_standard_variables_configure_the_job() {
    let out = Command::new(env!("CARGO_BIN_EXE_first_chares"))
        .env("CHORUS_LAYER", "sim")
        .env("CHORUS_PES", "10")
        .output()
        .expect("the example runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "10 members answered; their PE numbers add up to 45 (expected 45)\n"
    );
}
