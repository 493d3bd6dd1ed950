//! `mcmc` and `jacobi2d` with `--checkpoint-every`, on threads and sim: a run that
//! dies on purpose after a checkpoint (`--die-at-step`, the process aborts),
//! restarted from it with `--restart` on 8, 5 and 16 PEs, ends with the uninterrupted
//! run's answer: jacobi2d's grid checksum, mcmc's step ledger with every item
//! committed exactly once.

// Only its JSON reader is used here, not its mpirun.
#[allow(dead_code)]
mod common;

use common::json_of;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `bin` with `args`, its runtime log off.
fn run(bin: &str, args: &[String]) -> Output {
    Command::new(bin)
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("start the program")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A fresh scratch directory for one case.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-ckapps-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The steps the checkpoints of a run were taken at, from its standard error.
fn saved_steps(out: &Output) -> Vec<u32> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(chorus_apps::checkpointing::Progress::parse)
        .filter_map(|p| match p {
            chorus_apps::checkpointing::Progress::Saved(s) => Some(s),
            chorus_apps::checkpointing::Progress::Step(_) => None,
        })
        .collect()
}

/// How a case runs: the program, its flags, the checkpoint interval, the step the
/// first run dies at, and whether its uninterrupted run checkpoints too (mcmc's
/// checkpointed kernel is another program than its walker groups).
struct Case<'a> {
    bin: &'a str,
    args: &'a [&'a str],
    every: u32,
    die: u32,
    whole_checkpoints: bool,
}

/// Run the case uninterrupted, then checkpointing and dying, then restarted from
/// its checkpoint on each of `restarts` PEs; returns the uninterrupted JSON and each
/// restart's.
fn die_and_restart(case: &Case, layer: &str, restarts: &[u32]) -> (Value, Vec<Value>) {
    let Case {
        bin,
        args,
        every,
        die,
        whole_checkpoints,
    } = *case;
    let name = Path::new(bin)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let dir = scratch(&format!("{name}-{layer}"));
    let mut base = strings(&["--json", "--layer", layer]);
    base.extend(strings(args));
    let with_pes = |pes: u32, more: &[String]| {
        let mut a = base.clone();
        a.extend(strings(&["--pes", &pes.to_string()]));
        a.extend_from_slice(more);
        a
    };
    let ckpt = strings(&[
        "--checkpoint-every",
        &every.to_string(),
        "--checkpoint-dir",
        &dir.to_string_lossy(),
    ]);
    let whole = json_of(&run(
        bin,
        &with_pes(8, if whole_checkpoints { &ckpt } else { &[] }),
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut dying = ckpt.clone();
    dying.extend(strings(&["--die-at-step", &die.to_string()]));
    let died = run(bin, &with_pes(8, &dying));
    assert!(!died.status.success(), "the run was to die: {died:?}");
    let want: Vec<u32> = (1..).map(|k| k * every).take_while(|&s| s < die).collect();
    assert_eq!(
        saved_steps(&died),
        want,
        "{}",
        String::from_utf8_lossy(&died.stderr)
    );
    let mut after = Vec::new();
    for &pes in restarts {
        let mut more = ckpt.clone();
        more.extend(strings(&["--restart", &dir.to_string_lossy()]));
        // Each restart goes on from the same checkpoint: its own next ones go to a
        // directory of their own.
        let own = scratch(&format!("{name}-{layer}-own-{pes}"));
        more[3] = own.to_string_lossy().into_owned();
        after.push(json_of(&run(bin, &with_pes(pes, &more))));
        let _ = std::fs::remove_dir_all(own);
    }
    let _ = std::fs::remove_dir_all(&dir);
    (whole, after)
}

#[test]
fn jacobi2d_restarted_on_8_5_and_16_pes_ends_with_the_uninterrupted_checksum() {
    let args = [
        "--grid",
        "48",
        "--block",
        "8",
        "--steps",
        "14",
        "--hot-blocks",
        "2",
    ];
    for layer in ["threads", "sim"] {
        let case = Case {
            bin: env!("CARGO_BIN_EXE_jacobi2d"),
            args: &args,
            every: 4,
            die: 10,
            whole_checkpoints: false,
        };
        let (whole, after) = die_and_restart(&case, layer, &[8, 5, 16]);
        assert_eq!(whole["exact"], true, "{whole}");
        for (v, pes) in after.iter().zip([8, 5, 16]) {
            assert_eq!(v["checksum"], whole["checksum"], "{layer}, {pes} PEs: {v}");
            assert_eq!(v["exact"], true, "{v}");
            assert_eq!(v["pes"], pes, "{v}");
        }
    }
}

#[test]
fn mcmc_restarted_on_8_5_and_16_pes_commits_every_item_once() {
    let args = ["--group-size", "2", "--item-ms", "0.2"];
    for layer in ["threads", "sim"] {
        let case = Case {
            bin: env!("CARGO_BIN_EXE_mcmc"),
            args: &args,
            every: 10,
            die: 35,
            whole_checkpoints: true,
        };
        let (whole, after) = die_and_restart(&case, layer, &[8, 5, 16]);
        assert_eq!(whole["ledger_exactly_once"], true, "{whole}");
        for (v, pes) in after.iter().zip([8, 5, 16]) {
            assert_eq!(v["ledger_exactly_once"], true, "{layer}, {pes} PEs: {v}");
            assert_eq!(v["checksum"], "0000000000000000", "{v}");
            assert_eq!(v["pes"], pes, "{v}");
        }
    }
}

#[test]
fn a_restart_with_other_parameters_is_refused() {
    let dir = scratch("other-params");
    let d = dir.to_string_lossy().into_owned();
    let bin = env!("CARGO_BIN_EXE_jacobi2d");
    let base = [
        "--layer", "sim", "--pes", "4", "--grid", "32", "--block", "8",
    ];
    let mut first = strings(&base);
    first.extend(strings(&["--steps", "8", "--checkpoint-every", "3"]));
    first.extend(strings(&["--checkpoint-dir", &d, "--die-at-step", "5"]));
    assert!(!run(bin, &first).status.success());
    let mut other = strings(&base);
    other.extend(strings(&["--steps", "9", "--restart", &d]));
    let out = run(bin, &other);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("restart with the flags of the run that wrote it"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
