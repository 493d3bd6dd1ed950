//! Bad numbers on the command line of every app binary are usage errors: exit code
//! 2 and a message that names the flag's allowed range, never a panic, a value that
//! silently wraps, or a hang.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `bin` with `args`; its exit code and stderr. A run that takes a minute is a
/// hang: it is killed and the test fails.
fn run(bin: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().expect("kill");
            panic!("{bin} {args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).expect("stderr");
    }
    (status.code(), err)
}

/// A regular file: a path below it can never be created.
fn blocked_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("a-file");
    std::fs::write(&file, b"not a directory").expect("temp file");
    file
}

#[test]
fn bad_numbers_are_usage_errors_that_name_the_range() {
    let hello = env!("CARGO_BIN_EXE_hello");
    let mcmc = env!("CARGO_BIN_EXE_mcmc");
    let jquick = env!("CARGO_BIN_EXE_jquick");
    let radix = env!("CARGO_BIN_EXE_radix");
    let bench = env!("CARGO_BIN_EXE_chorus-bench");
    let tune = env!("CARGO_BIN_EXE_chorus-tune");
    let blocked = blocked_dir().join("trace.json");
    let blocked = blocked.to_str().expect("a UTF-8 temp path");
    let sim = ["--layer", "sim"];
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            hello,
            [&sim[..], &["--sim-alpha-us", "1e30"]].concat(),
            "0..=1000000",
        ),
        (
            hello,
            [&sim[..], &["--sim-alpha-us", "inf"]].concat(),
            "0..=1000000",
        ),
        (
            hello,
            [&sim[..], &["--sim-alpha-us", "nan"]].concat(),
            "0..=1000000",
        ),
        (
            hello,
            [&sim[..], &["--sim-beta-ns-per-byte", "1e300"]].concat(),
            "0..=1000000",
        ),
        (
            hello,
            [&sim[..], &["--sim-jitter-us=-1"]].concat(),
            "0..=1000000",
        ),
        (
            mcmc,
            [&sim[..], &["--item-ms", "1e30"]].concat(),
            "above 0 and at most 3600000",
        ),
        (
            mcmc,
            [&sim[..], &["--item-ms", "inf"]].concat(),
            "above 0 and at most 3600000",
        ),
        (
            mcmc,
            [&sim[..], &["--item-ms", "nan"]].concat(),
            "above 0 and at most 3600000",
        ),
        (
            mcmc,
            [&sim[..], &["--item-ms", "0"]].concat(),
            "above 0 and at most 3600000",
        ),
        (
            jquick,
            [&sim[..], &["--n-per-pe", "1e30"]].concat(),
            "1..=1073741824",
        ),
        (
            jquick,
            [&sim[..], &["--n", "99999999999999999999"]].concat(),
            "1..=",
        ),
        (
            jquick,
            [&sim[..], &["--section-arity", "100"]].concat(),
            "2..=16",
        ),
        (
            radix,
            [&sim[..], &["--keys-per-pe", "99999999999999999999"]].concat(),
            "1..=1073741824",
        ),
        (
            radix,
            [&sim[..], &["--radix-bits", "64"]].concat(),
            "1..=16",
        ),
        (
            radix,
            [&sim[..], &["--key-ns", "inf"]].concat(),
            "0..=1000000",
        ),
        (hello, vec!["--tree-arity", "100000"], "2..=64"),
        (bench, vec!["sections", "--fractions", "0.5,1.5"], "0..=1"),
        (bench, vec!["sections", "--pes", "0"], "1..=16777216"),
        (hello, vec!["--pes", "0"], "1..=16777216"),
        (
            hello,
            [&sim[..], &["--sim-kill", "0@1us"]].concat(),
            "1..pes",
        ),
        (
            hello,
            [&sim[..], &["--pes", "4", "--sim-kill", "4@1us"]].concat(),
            "(0..4)",
        ),
        (
            hello,
            [&sim[..], &["--sim-kill", "1@1e30s"]].concat(),
            "at most 1e6 s",
        ),
        (hello, vec!["--fault-hold-long-ms", "0"], "1..=3600000"),
        (
            hello,
            vec!["--fault-hold-long-ms", "5"],
            "needs --layer mpi",
        ),
        (mcmc, vec!["--lb", "collective:0"], "1..=4294967295"),
        (
            mcmc,
            vec!["--lb", "none,collective:99999999999"],
            "1..=4294967295",
        ),
        (tune, vec!["--rse", "NaN"], "--rse"),
        (tune, vec!["--rse=-1"], "0..=1"),
        (
            tune,
            vec!["--nrep-min", "100", "--nrep-max", "5"],
            "--nrep-min 100 is above --nrep-max 5",
        ),
        // Sizes that parse but cannot fit: a panic or an abort after minutes before.
        (jquick, vec!["--n", "1099511627776"], "is available"),
        (
            tune,
            vec!["--sizes", "18446744073709551615"],
            "1..=1099511627776",
        ),
        (tune, vec!["--sizes", "8,1099511627776"], "is available"),
        (hello, vec!["--trace", blocked], "cannot be created"),
        (mcmc, vec!["--trace", blocked], "cannot be created"),
        (
            bench,
            vec!["replay", "--layer", "sim", "--trace", blocked],
            "cannot be created",
        ),
        (
            tune,
            [&sim[..], &["--pes", "4", "--trace", blocked]].concat(),
            "cannot be created",
        ),
    ];
    let mut wrong = Vec::new();
    for (bin, args, says) in &cases {
        let (code, err) = run(bin, args);
        let name = bin.rsplit('/').next().unwrap_or(bin);
        if code != Some(2) || !err.contains(says) || err.contains("panicked") {
            wrong.push(format!(
                "{name} {args:?}: exit {code:?}, wanted 2 and {says:?}: {err}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_flag_with_no_effect_in_the_mode_given_is_refused() {
    // --split-ring changes only the modelled MPI_Comm_split; with any other sections
    // mode it would be silently ignored.
    let jquick = env!("CARGO_BIN_EXE_jquick");
    for mode in [
        &["--sections", "range"][..],
        &["--compare", "create-group-model"][..],
    ] {
        let mut args = vec!["--layer", "sim", "--pes", "8", "--split-ring"];
        args.extend_from_slice(mode);
        let (code, err) = run(jquick, &args);
        // A usage error (exit 2) since the flag policy; it was 1, found by the run.
        assert_eq!(code, Some(2), "{mode:?}: {err}");
        assert!(
            err.contains("--split-ring changes the modelled MPI_Comm_split only"),
            "{err}"
        );
    }
    let (code, err) = run(
        jquick,
        &[
            "--layer",
            "sim",
            "--pes",
            "8",
            "--split-ring",
            "--sections",
            "split-model",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn the_sim_model_flags_are_refused_on_other_layers_by_every_binary() {
    // They were ignored without a word on threads, while --sim-kill was refused.
    let bins: [(&str, &[&str]); 6] = [
        (env!("CARGO_BIN_EXE_hello"), &[]),
        (env!("CARGO_BIN_EXE_mcmc"), &[]),
        (env!("CARGO_BIN_EXE_jquick"), &[]),
        (env!("CARGO_BIN_EXE_radix"), &[]),
        (env!("CARGO_BIN_EXE_chorus-tune"), &[]),
        (env!("CARGO_BIN_EXE_chorus-bench"), &["sections"]),
    ];
    let flags: [&[&str]; 5] = [
        &["--sim-alpha-us", "3"],
        &["--sim-preset", "bgp"],
        &["--sim-jitter-us", "1"],
        &["--sim-handler-us", "0.5"],
        &["--sim-contention"],
    ];
    let mut wrong = Vec::new();
    for (bin, sub) in bins {
        for flag in flags {
            let args = [sub, flag, &["--layer", "threads", "--pes", "4"]].concat();
            let (code, err) = run(bin, &args);
            let says = format!("{} needs --layer sim", flag[0]);
            if code != Some(2) || !err.contains(&says) {
                wrong.push(format!("{bin} {args:?}: exit {code:?}: {err}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn usage_errors_and_version_name_the_program_run() {
    // They said `chorus-apps`, the package the binaries share.
    for (bin, name) in [
        (env!("CARGO_BIN_EXE_hello"), "hello"),
        (env!("CARGO_BIN_EXE_jquick"), "jquick"),
        (env!("CARGO_BIN_EXE_chorus-tune"), "chorus-tune"),
        (env!("CARGO_BIN_EXE_chorus-bench"), "chorus-bench"),
    ] {
        let (code, err) = run(bin, &["--tree-arity", "1"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("Usage: {name}")) && !err.contains("chorus-apps"),
            "{name}: {err}"
        );
        let out = Command::new(bin).arg("--version").output().expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with(&format!("{name} ")), "{name}: {stdout}");
    }
}

#[test]
fn a_subcommand_with_a_layer_of_its_own_is_checked_on_that_layer() {
    // sim-scale always runs on sim: more PEs than the threads layer allows are fine
    // without --layer sim, as the README and CI run it.
    let bench = env!("CARGO_BIN_EXE_chorus-bench");
    let (code, err) = run(bench, &["sim-scale", "--pes", "5000", "--json"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn every_binary_answers_version() {
    for bin in [
        env!("CARGO_BIN_EXE_hello"),
        env!("CARGO_BIN_EXE_mcmc"),
        env!("CARGO_BIN_EXE_jquick"),
        env!("CARGO_BIN_EXE_radix"),
        env!("CARGO_BIN_EXE_jacobi2d"),
        env!("CARGO_BIN_EXE_lb-test"),
        env!("CARGO_BIN_EXE_chorus-bench"),
        env!("CARGO_BIN_EXE_chorus-tune"),
    ] {
        let out = Command::new(bin).arg("--version").output().expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(env!("CARGO_PKG_VERSION")),
            "{bin} --version: {} {stdout}",
            out.status
        );
    }
}

/// Every program lists the runtime's flags and the sim layer's under headings of
/// their own, apart from its own options, in the same words.
#[test]
fn every_binary_groups_its_help_under_the_same_headings() {
    for (bin, args) in [
        (env!("CARGO_BIN_EXE_hello"), &[][..]),
        (env!("CARGO_BIN_EXE_mcmc"), &[]),
        (env!("CARGO_BIN_EXE_jquick"), &[]),
        (env!("CARGO_BIN_EXE_radix"), &[]),
        (env!("CARGO_BIN_EXE_jacobi2d"), &[]),
        (env!("CARGO_BIN_EXE_lb-test"), &[]),
        (env!("CARGO_BIN_EXE_chorus-tune"), &[]),
        (env!("CARGO_BIN_EXE_chorus-bench"), &["sim-scale"]),
        (env!("CARGO_BIN_EXE_chorus-bench"), &["replay"]),
        (env!("CARGO_BIN_EXE_chorus-bench"), &["create-group"]),
        (env!("CARGO_BIN_EXE_chorus-bench"), &["lb"]),
    ] {
        let out = Command::new(bin)
            .args(args)
            .arg("--help")
            .output()
            .expect("runs");
        let help = String::from_utf8_lossy(&out.stdout);
        for heading in [
            "\nOptions:\n",
            "\nJob:\n",
            "\nTracing:\n",
            "\nOutput:\n",
            "\nSimulation:\n",
        ] {
            assert!(
                out.status.success() && help.contains(heading),
                "{bin} {args:?} --help lacks {heading:?}:\n{help}"
            );
        }
    }
}

#[test]
fn json_is_one_object_on_stdout() {
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-bench"))
        .args(["sections", "--pes", "64", "--fractions", "0.5", "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON value");
    assert!(v["runs"].as_array().is_some_and(|r| !r.is_empty()), "{v}");
}

#[test]
fn an_output_that_is_no_regular_file_or_is_named_twice_is_a_usage_error() {
    let hello = env!("CARGO_BIN_EXE_hello");
    let dir = std::env::temp_dir().join(format!("chorus-cli-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let same = dir.join("t.json");
    let same = same.to_str().expect("a UTF-8 temp path");
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        // One file for two outputs: once it wrote one invalid file.
        (
            vec!["--trace", same, "--debug-trace", same],
            "name the same file",
        ),
        // A device: the rename that ends a trace would replace it.
        (vec!["--trace", "/dev/full"], "not a regular file"),
        (vec!["--debug-trace", "/dev/full"], "not a regular file"),
    ];
    let fifo = dir.join("pipe.json");
    let made = Command::new("mkfifo").arg(&fifo).status();
    let fifo = fifo.to_str().expect("a UTF-8 temp path");
    if made.is_ok_and(|s| s.success()) {
        // Before the fix the probe opened the FIFO and hung until a reader came.
        cases.push((vec!["--trace", fifo], "not a regular file"));
    }
    for (args, expect) in cases {
        let (code, err) = run(hello, &args);
        assert_eq!(code, Some(2), "hello {args:?}: {err}");
        assert!(err.contains(expect), "hello {args:?}: {err}");
    }
    assert!(!Path::new(same).exists(), "nothing is written");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn hello_takes_json_as_every_binary_does() {
    let out = Command::new(env!("CARGO_BIN_EXE_hello"))
        .args(["--layer", "sim", "--pes", "6", "--json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("one JSON value and nothing else");
    assert_eq!(
        (&v["pes"], &v["sum"], &v["layer"]),
        (&6.into(), &15.into(), &"sim".into()),
        "{v}"
    );
}

#[test]
fn a_pes_the_mpi_ranks_do_not_make_is_refused_even_the_defaults_value() {
    // As `mpirun -n 2 hello --layer mpi --pes 4` starts rank 0: once the 4, the
    // default's value, passed as no claim and the job silently ran 2 PEs.
    for pes in ["4", "3"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hello"))
            .args(["--layer", "mpi", "--pes", pes])
            .env("OMPI_COMM_WORLD_SIZE", "2")
            .env("OMPI_COMM_WORLD_RANK", "0")
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--pes {pes}: {stderr}");
        assert!(
            stderr.contains(&format!("--pes {pes} under mpirun -n 2")),
            "{stderr}"
        );
    }
}
