//! `--trace` on the real programs: `hello` and `mcmc` on the threads and sim layers
//! write traces that `chorus-trace check` accepts (every arrow bound to the entries
//! that sent and handled its message, as Perfetto, catapult and DevTools bind them),
//! under the file names the README gives.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory, removed with what it holds when the test ends (pass or
/// fail): each run left about 92 MB of traces in the temporary directory before.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("chorus-apps-trace-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

fn run(bin: &str, args: &[&str]) {
    let o = Command::new(bin)
        .args(args)
        .output()
        .expect("the program runs");
    assert!(
        o.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The trace at `file` passes every check and has arrows.
fn assert_checks(file: &Path) {
    let trace = chorus_traces::read_chrome(file).expect("the trace parses");
    let report = chorus_traces::check(&trace);
    assert!(
        report.ok(),
        "{}: {:?} ({} of {} arrows misbound): {:#?}",
        file.display(),
        report.counts,
        report.misbound_flows,
        report.flows,
        report.problems
    );
    assert!(report.flows > 0, "{}: no arrows", file.display());
}

#[test]
fn hello_traces_check_on_threads_and_sim() {
    let dir = scratch("hello");
    for layer in ["threads", "sim"] {
        let file = dir.join(format!("hello-{layer}.json"));
        let f = file.to_str().unwrap();
        run(
            env!("CARGO_BIN_EXE_hello"),
            &["--layer", layer, "--pes", "6", "--trace", f],
        );
        assert_checks(&file);
    }
}

#[test]
fn mcmc_traces_check_on_threads_and_sim() {
    let dir = scratch("mcmc");
    let cases: [(&str, &[&str]); 2] = [
        ("threads", &["--pes", "8", "--item-ms", "1"]),
        ("sim", &["--pes", "64"]),
    ];
    for (layer, extra) in cases {
        let file = dir.join(format!("{layer}.json"));
        let mut args = vec!["--layer", layer, "--lb", "async", "--trace"];
        args.push(file.to_str().unwrap());
        args.extend_from_slice(extra);
        run(env!("CARGO_BIN_EXE_mcmc"), &args);
        assert_checks(&dir.join(format!("{layer}-async.json")));
    }
}

#[test]
fn mcmc_writes_one_trace_per_strategy_even_for_one() {
    let dir = scratch("names");
    let file = dir.join("x.json");
    let f = file.to_str().unwrap();
    let common = ["--layer", "sim", "--pes", "8", "--trace", f];
    run(
        env!("CARGO_BIN_EXE_mcmc"),
        &[&common[..], &["--lb", "async"]].concat(),
    );
    assert!(dir.join("x-async.json").is_file());
    assert!(!file.exists(), "no trace under the bare name");

    run(
        env!("CARGO_BIN_EXE_mcmc"),
        &[&common[..], &["--lb", "none,collective:16"]].concat(),
    );
    assert!(dir.join("x-none.json").is_file());
    assert!(dir.join("x-collective-16.json").is_file());

    let bare = dir.join("run");
    let common = ["--layer", "sim", "--pes", "8", "--lb", "async", "--trace"];
    run(
        env!("CARGO_BIN_EXE_mcmc"),
        &[&common[..], &[bare.to_str().unwrap()]].concat(),
    );
    assert!(dir.join("run-async").is_file(), "no extension: none added");
}
