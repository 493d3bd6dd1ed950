//! The runtime's logs in a test harness go to the output of the test that logged
//! them, which the harness shows only if that test fails: a passing test that logs
//! on purpose (fault injection, late kills) prints nothing but its result line.

use chorus_core::{Config, KillSpec, Layer, Registry, Runtime};
use std::process::Command;

/// Set in the child process that runs `a_job_that_logs_a_warning` for real.
const CHILD: &str = "CHORUS_LOGS_TEST_CHILD";

/// What the job below logs at WARN.
const WARNING: &str = "--sim-kill after the job ended";

/// A job that logs a warning (a sim kill scheduled after its end); it runs only in
/// the child process of the tests below, and passes.
#[test]
fn a_job_that_logs_a_warning() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut config = Config {
        pes: 2,
        layer: Layer::Sim,
        ..Config::default()
    };
    config.sim.kill.push(KillSpec {
        pe: 1,
        at_ns: 1_000_000_000,
    });
    Runtime::new(Registry::new(), config)
        .run(|ctx| ctx.exit())
        .expect("the job exits");
}

/// Everything this test binary prints when it runs only `a_job_that_logs_a_warning`
/// for real, with the harness flags `extra`.
fn child_output(extra: &[&str]) -> String {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "a_job_that_logs_a_warning",
            "--exact",
            "--test-threads",
            "1",
        ])
        .args(extra)
        .env(CHILD, "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the test binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child test passes: {text}");
    text
}

#[test]
fn a_passing_tests_warnings_are_captured_not_printed() {
    let shown = child_output(&["--nocapture"]);
    assert!(
        shown.contains(WARNING),
        "the job logs its warning when the harness does not capture: {shown}"
    );
    let captured = child_output(&[]);
    assert!(
        !captured.contains(WARNING) && !captured.contains("WARN"),
        "a passing test's warning is captured with its output: {captured}"
    );
}
