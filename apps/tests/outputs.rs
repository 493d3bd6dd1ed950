//! Outputs appear whole or not at all, whatever stops the run: SIGINT or SIGTERM at
//! any point of a traced run leaves no partial file at the final path and no spool,
//! and a file-size limit (`ulimit -f`) is an error naming the file, not a SIGXFSZ
//! death.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn hello() -> &'static str {
    env!("CARGO_BIN_EXE_hello")
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-outputs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The names of the files in `dir`.
fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_signal_at_any_point_of_a_traced_run_leaves_no_partial_file_and_no_spool() {
    // Before, SIGINT left a truncated trace at the final name and the spool behind,
    // and printed nothing.
    for (sig, code) in [("INT", 130), ("TERM", 143)] {
        for after_ms in [300u64, 1500, 3000] {
            let dir = scratch(&format!("{sig}-{after_ms}"));
            let out = dir.join("big.json");
            let child = Command::new(hello())
                .args(["--layer", "sim", "--pes", "20000", "--trace"])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("hello starts");
            std::thread::sleep(Duration::from_millis(after_ms));
            let sent = Command::new("kill")
                .arg(format!("-{sig}"))
                .arg(child.id().to_string())
                .status()
                .expect("kill runs");
            assert!(sent.success());
            let run = child.wait_with_output().expect("hello ends");
            let err = String::from_utf8_lossy(&run.stderr);
            let left = files(&dir);
            match run.status.code() {
                // The run (about 5 s) ended before a late signal came: the trace is
                // whole. The earliest signal always finds it running.
                Some(0) if after_ms > 300 => {
                    assert_eq!(left, ["big.json"], "{sig} at {after_ms} ms: {err}")
                }
                Some(c) => {
                    assert_eq!(c, code, "SIG{sig} at {after_ms} ms: {err}");
                    // A signal between the trace's rename into place and the exit
                    // finds it committed: then it must be whole, and alone.
                    if !left.is_empty() {
                        assert_eq!(left, ["big.json"], "SIG{sig} at {after_ms} ms");
                        let text = std::fs::read(&out).expect("the trace reads");
                        assert!(
                            serde_json::from_slice::<serde_json::Value>(&text).is_ok(),
                            "SIG{sig} at {after_ms} ms left a partial trace"
                        );
                    }
                    assert!(
                        err.contains(&format!("hello: stopped by SIG{sig}")),
                        "{err}"
                    );
                    assert_eq!(err.matches("stopped by").count(), 1, "{err}");
                }
                None => panic!("SIG{sig} at {after_ms} ms killed hello unhandled: {err}"),
            }
            std::fs::remove_dir_all(&dir).expect("clean up");
        }
    }
}

/// `hello args` under `ulimit -f blocks` (1 KiB blocks): its exit code and stderr.
fn under_file_limit(blocks: u32, dir: &Path, args: &str) -> (Option<i32>, String) {
    let out = Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(format!("ulimit -f {blocks}; exec {} {args}", hello()))
        .stdout(Stdio::null())
        .output()
        .expect("bash runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_file_size_limit_is_an_error_naming_the_file_not_a_sigxfsz_death() {
    // Before, the limit killed the process with SIGXFSZ and no message.
    let cases = [
        (100, "--layer sim --pes 20000 --trace big.json", "big.json"),
        (
            1,
            "--pes 4 --debug-trace debug.json",
            "--debug-trace debug.json",
        ),
    ];
    for (blocks, args, names) in cases {
        let dir = scratch(&format!("fsize-{blocks}"));
        let (code, err) = under_file_limit(blocks, &dir, args);
        assert_eq!(code, Some(1), "{args}: {err}");
        assert!(
            err.contains(names) && err.contains("File too large"),
            "{args}: {err}"
        );
        assert!(files(&dir).is_empty(), "{args} left {:?}", files(&dir));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}

#[test]
fn the_debug_trace_is_written_whole_under_its_name() {
    let dir = scratch("debug-trace");
    let (code, err) = under_file_limit(100_000, &dir, "--pes 4 --debug-trace debug.json");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(files(&dir), ["debug.json"]);
    let text = std::fs::read_to_string(dir.join("debug.json")).expect("written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON array");
    assert!(v.as_array().is_some_and(|a| !a.is_empty()), "{text}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_run_beyond_an_address_space_limit_is_refused_with_a_message_not_sigabrt() {
    // Before, the simulator's allocations failed part way and the process aborted;
    // hello at 450,000 PEs and radix's keys still did after the first checks came
    // (the sim's 1.7 KB per PE was sim-scale's heap, not hello's 2.4 KB; radix had
    // no check). Hello's PEs now take 1.7 KB of address space, so 600,000 is the
    // size just beyond this limit.
    let bin = |name: &str| format!("{}/{name}", Path::new(hello()).parent().unwrap().display());
    let cases = [
        ("hello", "--layer sim --pes 2000000", "--pes 2000000 on sim"),
        ("hello", "--layer sim --pes 600000", "--pes 600000 on sim"),
        (
            "jquick",
            "--layer sim --pes 8 --n 100000000",
            "--n (100000000 keys)",
        ),
        (
            "radix",
            "--layer sim --pes 8 --keys-per-pe 100000000",
            "--keys-per-pe",
        ),
        (
            "chorus-tune",
            "--layer sim --pes 64 --sizes 8,4000000",
            "--sizes 4000000",
        ),
        (
            "chorus-bench",
            "sim-scale --pes 2000000",
            "--pes 2000000 on sim",
        ),
        (
            "chorus-bench",
            "replay --layer sim --pes 2000000",
            "--pes 2000000 on sim",
        ),
    ];
    let dir = scratch("vlimit");
    let mut wrong = Vec::new();
    for (name, args, says) in cases {
        let out = Command::new("sh")
            .current_dir(&dir)
            .arg("-c")
            .arg(format!("ulimit -v 1000000; exec {} {args}", bin(name)))
            .stdout(Stdio::null())
            .output()
            .expect("sh runs");
        let err = String::from_utf8_lossy(&out.stderr);
        let refused = out.status.code() == Some(2)
            && err.contains(says)
            && err.contains("needs about")
            && err.contains("is available");
        if !refused {
            wrong.push(format!("{name} {args}: {} {err}", out.status));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    std::fs::remove_dir_all(&dir).expect("clean up");
}
