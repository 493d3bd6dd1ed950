//! Output files appear whole or not at all: a write that fails (a file-size limit, a
//! destination that is not a regular file, a directory that cannot be written) is an
//! error naming the file, leaves no partial file at the final path (an older file
//! there stays as it was), and leaves no spool or temporary file behind.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use chorus_traces::TraceConfig;
use common::{record, scenario, scratch};

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_trace_to_a_fifo_is_refused_without_blocking() {
    let dir = scratch("outputs_fifo");
    let fifo = dir.join("t.json");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let (tx, rx) = mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let s = scenario(2, 50, 3);
        let sink = record(&s, TraceConfig::new(&path));
        let outcome = sink.write(&s.names, &path).map_err(|e| e.to_string());
        // The spool goes with the collector: drop it before the test looks.
        drop(sink);
        let _ = tx.send(outcome);
    });
    // Before the fix, opening the FIFO for writing blocked forever.
    let outcome = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("writing a trace to a FIFO returns instead of blocking");
    let e = outcome.expect_err("a FIFO is not a trace file");
    assert!(
        e.contains("t.json") && e.contains("not a regular file"),
        "{e}"
    );
    assert_eq!(
        entries(&dir),
        ["t.json"],
        "no spool or temporary file is left"
    );
}

#[test]
fn a_failed_trace_write_leaves_no_file_and_no_spool() {
    let dir = scratch("outputs_failed");
    // A directory where the trace should go: the write fails after the spool exists.
    let out = dir.join("t.json");
    std::fs::create_dir(&out).unwrap();
    let s = scenario(3, 100, 5);
    let sink = record(&s, TraceConfig::new(&out));
    let e = sink
        .write(&s.names, &out)
        .expect_err("a directory is refused");
    assert!(e.to_string().contains("t.json"), "{e}");
    drop(sink);
    assert_eq!(
        entries(&dir),
        ["t.json"],
        "spool and temporary file are removed"
    );

    // A trace that fails mid-way keeps the old file whole: write a good trace, then
    // fail a second one (its spool gone) and find the first unchanged.
    let out = dir.join("u.perfetto-trace");
    let sink = record(&s, TraceConfig::new(&out));
    sink.write(&s.names, &out).unwrap();
    let first = std::fs::read(&out).unwrap();
    std::fs::remove_file(sink.spool_path()).unwrap();
    assert!(sink.write(&s.names, &out).is_err());
    assert_eq!(std::fs::read(&out).unwrap(), first);
    drop(sink);
    assert_eq!(entries(&dir), ["t.json", "u.perfetto-trace"]);
}

#[test]
fn a_report_over_the_file_size_limit_fails_naming_it_and_leaves_the_old_one() {
    let dir = scratch("outputs_efbig");
    let trace = dir.join("t.json");
    let s = scenario(4, 300, 11);
    record(&s, TraceConfig::new(&trace))
        .write_chrome(&s.names, &trace)
        .unwrap();
    let html = dir.join("r.html");
    std::fs::write(&html, "old report").unwrap();
    // SIGXFSZ ignored (as the shell passes it on), so the write fails with EFBIG; the
    // limit (64 blocks) is far below the report's size.
    let script = format!(
        "trap '' XFSZ; ulimit -f 64 && exec '{}' report '{}' -o '{}'",
        env!("CARGO_BIN_EXE_chorus-trace"),
        trace.display(),
        html.display()
    );
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("r.html") && !err.contains("panicked"), "{err}");
    // Before the fix the report was written in place: a truncated r.html.
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "old report");
    assert_eq!(entries(&dir), ["r.html", "t.json"]);
}

#[test]
fn a_trace_in_a_read_only_directory_is_an_error_naming_it() {
    let dir = scratch("outputs_readonly");
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mode = |m| std::fs::Permissions::from_mode(m);
    std::fs::set_permissions(&ro, mode(0o555)).unwrap();
    if std::fs::write(ro.join("probe"), "x").is_ok() {
        // Root writes anyway; nothing to test.
        eprintln!("skipped: read-only directories are writable for this user");
    } else {
        let out = ro.join("t.json");
        // The spool goes next to the output, so the run is refused at its start.
        let e = chorus_traces::Collector::new(TraceConfig::new(&out)).expect_err("read-only");
        assert!(e.to_string().contains("ro/t.json"), "{e}");
    }
    std::fs::set_permissions(&ro, mode(0o755)).unwrap();
}
