//! The `chorus-trace` binary: working commands and clear failures on bad input.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use chorus_traces::TraceConfig;
use common::{record, scenario, scratch};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chorus-trace"))
        .args(args)
        .output()
        .expect("run chorus-trace")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sample(dir: &Path) -> String {
    let out = dir.join("t.json");
    let s = scenario(4, 300, 11);
    record(&s, TraceConfig::new(&out))
        .write_chrome(&s.names, &out)
        .unwrap();
    out.to_str().unwrap().to_owned()
}

#[test]
fn commands_work() {
    let dir = scratch("cli_ok");
    let file = sample(&dir);

    let o = run(&["summary", &file, "--bins", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for heading in [
        "Utilisation per PE",
        "Time profile",
        "Entry methods",
        "Messages PE to PE",
    ] {
        assert!(text.contains(heading), "missing {heading}:\n{text}");
    }

    let o = run(&["summary", &file, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["pe_count"], 4);
    assert_eq!(v["time_profile"]["busy"].as_array().unwrap().len(), 20);

    let html = dir.join("r.html");
    let o = run(&["report", &file, "-o", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));

    let o = run(&["check", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn bad_input_fails_clearly() {
    let dir = scratch("cli_bad");
    let missing = dir.join("missing.json");
    let o = run(&["summary", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("chorus-trace: error:"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("missing.json"));

    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\":[{\"ph\":").unwrap();
    let o = run(&["report", bad.to_str().unwrap(), "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a Chrome trace JSON"),
        "{}",
        stderr(&o)
    );

    std::fs::write(
        &bad,
        "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":\"x\",\"ts\":1}]}",
    )
    .unwrap();
    let o = run(&["summary", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("pid"), "{}", stderr(&o));

    let o = run(&["summary", bad.to_str().unwrap(), "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--frobnicate"));
    let o = run(&["summary", bad.to_str().unwrap(), "--bins", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["report", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "report needs -o");
    assert!(stderr(&o).contains("--output"));
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));

    let good = sample(&dir);
    let o = run(&[
        "report",
        &good,
        "-o",
        dir.join("no/such/dir/r.html").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("r.html"));
}

#[test]
fn check_fails_on_an_arrow_viewers_misbind() {
    let dir = scratch("cli_check");
    // The arrow ends where the entry starts and idle ends, with no slice of its own.
    let bad = dir.join("misbound.json");
    std::fs::write(
        &bad,
        r#"{"traceEvents":[
{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"PE 0"}},
{"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"PE 1"}},
{"ph":"X","cat":"entry","name":"A::go","pid":0,"tid":0,"ts":1,"dur":1},
{"ph":"s","cat":"msg","name":"msg","id":"0x7","pid":0,"tid":0,"ts":1.5},
{"ph":"X","cat":"idle","name":"idle","pid":0,"tid":1,"ts":0,"dur":3},
{"ph":"X","cat":"entry","name":"B::got","pid":0,"tid":1,"ts":3,"dur":1},
{"ph":"f","cat":"msg","name":"msg","id":"0x7","pid":0,"tid":1,"ts":3,"bp":"e"}
],"displayTimeUnit":"ns"}"#,
    )
    .unwrap();
    let o = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("FlowAtBoundary"), "{err}");
    assert!(err.contains("'idle' (idle) [0, 3000] ns"), "{err}");
    assert!(err.contains("1 of 1 arrows misbound"), "{err}");

    let o = run(&["check", bad.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["misbound_flows"], 1);
}

#[test]
fn out_of_range_timestamps_are_refused_by_every_command() {
    let dir = scratch("cli_times");
    let bad = dir.join("t.json");
    let cases = [
        ("\"ts\":-5,\"dur\":1", "ts -5"),
        ("\"ts\":1e300,\"dur\":1", "ts 1e300"),
        ("\"ts\":1,\"dur\":-2", "dur -2"),
        ("\"ts\":1,\"dur\":1e20", "dur 1e20"),
    ];
    for (times, expect) in cases {
        let text = format!(
            "{{\"traceEvents\":[{{\"ph\":\"X\",\"cat\":\"entry\",\"name\":\"a\",\"pid\":1,\"tid\":1,{times}}}]}}"
        );
        std::fs::write(&bad, text).unwrap();
        // Before the fix each was clamped to 0 (or wrapped) and `check` said ok.
        for cmd in ["check", "summary"] {
            let o = run(&[cmd, bad.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(1), "{cmd} {times}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(expect) && stderr(&o).contains("t.json"),
                "{cmd} {times}: {}",
                stderr(&o)
            );
        }
    }
}

#[test]
fn check_names_each_broken_rule_once_with_its_count() {
    let dir = scratch("cli_check_once");
    let bad = dir.join("many.json");
    // Thirty arrows, each bound to the boundary where idle ends and an entry starts.
    let mut events = vec![
        r#"{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"PE 0"}}"#.to_owned(),
        r#"{"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"PE 1"}}"#.to_owned(),
    ];
    for k in 0..30u64 {
        let t = k * 10;
        events.push(format!(
            r#"{{"ph":"X","cat":"entry","name":"A::go","pid":0,"tid":0,"ts":{},"dur":1}},
{{"ph":"s","cat":"msg","name":"msg","id":"{k:#x}","pid":0,"tid":0,"ts":{}.5}},
{{"ph":"X","cat":"idle","name":"idle","pid":0,"tid":1,"ts":{t},"dur":3}},
{{"ph":"X","cat":"entry","name":"B::got","pid":0,"tid":1,"ts":{},"dur":1}},
{{"ph":"f","cat":"msg","name":"msg","id":"{k:#x}","pid":0,"tid":1,"ts":{},"bp":"e"}}"#,
            t + 1,
            t + 1,
            t + 3,
            t + 3
        ));
    }
    let text = format!("{{\"traceEvents\":[{}]}}", events.join(",\n"));
    std::fs::write(&bad, text).unwrap();
    let o = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    // Before, the rule's message was printed twenty times.
    assert_eq!(err.matches("FlowAtBoundary").count(), 2, "{err}");
    assert!(
        err.contains("FlowAtBoundary: 30 problems; first: "),
        "{err}"
    );
    assert!(err.contains("30 of 30 arrows misbound"), "{err}");
}

#[test]
fn unbalanced_slices_are_refused_by_every_command() {
    let dir = scratch("cli_unbalanced");
    let bad = dir.join("t.json");
    let ev = |ph: &str, ts: u64| {
        format!(r#"{{"ph":"{ph}","cat":"entry","name":"a","pid":1,"tid":1,"ts":{ts}}}"#)
    };
    let cases = [
        (vec![ev("E", 5)], "with no slice begun there"),
        (
            vec![ev("B", 1), ev("E", 2), ev("E", 3)],
            "with no slice begun there",
        ),
        (vec![ev("B", 1)], "1 slice(s) begun and never ended"),
        (
            vec![ev("B", 1), ev("B", 2), ev("E", 3)],
            "begun and never ended",
        ),
        (vec![ev("B", 9), ev("E", 4)], "before it begins"),
    ];
    for (events, expect) in cases {
        let text = format!("{{\"traceEvents\":[{}]}}", events.join(","));
        std::fs::write(&bad, &text).unwrap();
        // Before the fix a stray end was skipped, an open begin dropped, and a
        // backwards end made a zero-length slice: `check` said ok on each.
        for cmd in ["check", "summary"] {
            let o = run(&[cmd, bad.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(1), "{cmd} {text}: {}", stderr(&o));
            assert!(stderr(&o).contains(expect), "{cmd} {text}: {}", stderr(&o));
        }
    }
}
