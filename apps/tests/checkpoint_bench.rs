//! `chorus-bench checkpoint` at a small size: it writes, restarts from and checks a
//! disk checkpoint, takes an in-memory one, runs dd beside them, reports every
//! figure as the median of its repetitions, and leaves its directory empty; a size
//! or a repetition count out of range is a usage error.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .arg("checkpoint")
        .args(args)
        .output()
        .expect("chorus-bench runs")
}

#[test]
fn a_small_checkpoint_bench_reports_every_figure_and_cleans_up() {
    let dir = std::env::temp_dir().join(format!("chorus-ckpt-bench-{}", std::process::id()));
    let d = dir.to_string_lossy().into_owned();
    let out = bench(&[
        "--pes",
        "2",
        "--bytes",
        "4194304",
        "--dir",
        &d,
        "--reps",
        "3",
        "--no-cold",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        v["verified"], true,
        "the restart's checksum is the state's: {v}"
    );
    assert!(v["bytes"].as_u64().is_some_and(|b| b >= 4 << 20), "{v}");
    assert!(
        v["file_bytes"].as_u64() >= v["bytes"].as_u64(),
        "the files hold the state: {v}"
    );
    for key in [
        "disk_write_gbps",
        "restart_gbps",
        "memory_gbps",
        "dd_write_gbps",
        "dd_read_gbps",
        "write_vs_dd",
        "restart_vs_dd_read",
    ] {
        let x = v[key].as_f64().unwrap_or(0.0);
        assert!(x.is_finite() && x > 0.0, "{key}: {v}");
    }
    let runs = v["runs"].as_array().expect("every repetition");
    assert_eq!(runs.len(), 3, "{v}");
    for key in ["disk_write_s", "restart_s", "dd_write_s", "dd_read_s"] {
        let mut xs: Vec<f64> = runs
            .iter()
            .map(|r| r[key].as_f64().unwrap_or(-1.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        assert_eq!(v[key].as_f64(), Some(xs[1]), "{key} is the median: {v}");
    }
    assert!(
        v["restart_cold_s"].is_null() && v["restart_cold_vs_dd_read_cold"].is_null(),
        "no cold pair under --no-cold: {v}"
    );
    assert!(
        v["cold_skipped"]
            .as_str()
            .is_some_and(|w| w.contains("--no-cold")),
        "says why the cold pair was skipped: {v}"
    );
    assert!(!dir.exists(), "the bench removed its files and directory");
}

#[test]
fn a_size_out_of_range_is_a_usage_error() {
    for bytes in ["68719476737", "1000", "-1"] {
        let out = bench(&["--bytes", bytes]);
        assert_eq!(out.status.code(), Some(2), "--bytes {bytes}");
    }
    let out = bench(&["--reps", "0"]);
    assert_eq!(out.status.code(), Some(2), "--reps 0");
}
