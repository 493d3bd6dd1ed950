//! Projections' extra views on a hand-made trace with known answers: the message-size
//! histogram, the utilisation heat map and the critical path.

mod common;

use std::process::Command;

use chorus_traces::{
    critical_path, summarize_compact, summarize_file, CompactTrace, SummaryOptions,
};
use common::scratch;

/// Written as chorus writes it (PE n is tid n + 1, rank r pid r + 1).
/// PE 0 runs A [0, 10) us, which sends to PE 1 at 5 us; PE 1 runs B [6, 12), which
/// sends back at 9 us, and D [14, 16); PE 0 then runs C [13, 20), started by B's
/// message. Received sizes: A 0 B, B 64 B, C 100 B, D 3 B.
const TRACE: &str = r#"{"traceEvents":[
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"PE 0"}},
{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"PE 1"}},
{"ph":"X","cat":"entry","name":"A","pid":1,"tid":1,"ts":0,"dur":10,"args":{"src_pe":1,"bytes":0}},
{"ph":"X","cat":"entry","name":"C","pid":1,"tid":1,"ts":13,"dur":7,"args":{"src_pe":1,"bytes":100}},
{"ph":"X","cat":"entry","name":"B","pid":1,"tid":2,"ts":6,"dur":6,"args":{"src_pe":0,"bytes":64}},
{"ph":"X","cat":"entry","name":"D","pid":1,"tid":2,"ts":14,"dur":2,"args":{"src_pe":0,"bytes":3}},
{"ph":"s","cat":"msg","name":"msg","id":"0x1","pid":1,"tid":1,"ts":5},
{"ph":"f","cat":"msg","name":"msg","id":"0x1","pid":1,"tid":2,"ts":7,"bp":"e"},
{"ph":"s","cat":"msg","name":"msg","id":"0x2","pid":1,"tid":2,"ts":9},
{"ph":"f","cat":"msg","name":"msg","id":"0x2","pid":1,"tid":1,"ts":14,"bp":"e"}
]}"#;

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

#[test]
fn hand_made_trace_gives_the_known_views() {
    let file = scratch("views_known").join("t.json");
    std::fs::write(&file, TRACE).unwrap();
    let per_pe = SummaryOptions {
        bins: 2,
        heat_rows: 8,
    };
    let s = summarize_file(&file, &per_pe).unwrap();

    let sizes: Vec<(u64, u64, u64, u64)> = s
        .message_sizes
        .iter()
        .map(|b| (b.min_bytes, b.max_bytes, b.messages, b.bytes))
        .collect();
    assert_eq!(sizes, [(0, 0, 1, 0), (2, 3, 1, 3), (64, 127, 2, 164)]);

    // Bins of 10 us: PE 0 is busy 10 then 7 us, PE 1 4 then 2 + 2 us.
    let rows = &s.heat_map.rows;
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].first_pe, rows[0].last_pe, rows[0].pes), (0, 0, 1));
    assert!(close(&rows[0].busy, &[1.0, 0.7]), "{:?}", rows[0].busy);
    assert!(close(&rows[1].busy, &[0.4, 0.4]), "{:?}", rows[1].busy);
    assert_eq!(s.heat_map.bin_ns, 10_000.0);

    let one_row = SummaryOptions {
        heat_rows: 1,
        ..per_pe
    };
    let trace = CompactTrace::read(&file).unwrap();
    let s1 = summarize_compact(&trace, &one_row);
    let rows = &s1.heat_map.rows;
    assert_eq!((rows.len(), rows[0].first_pe, rows[0].last_pe), (1, 0, 1));
    assert!(close(&rows[0].busy, &[0.7, 0.55]), "{:?}", rows[0].busy);

    let path = critical_path(&trace).expect("entries");
    let steps: Vec<(&str, u32)> = path
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.pe))
        .collect();
    assert_eq!(steps, [("A", 0), ("B", 1), ("C", 0)]);
    assert_eq!(path.span_ns, 20_000);
}

#[test]
fn the_cli_prints_the_views() {
    let file = scratch("views_cli").join("t.json");
    std::fs::write(&file, TRACE).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-trace"))
        .args(["summary", "--critical-path", "--bins", "2"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for heading in [
        "Message sizes",
        "Utilisation heat map",
        "Critical path: 3 entries",
    ] {
        assert!(text.contains(heading), "missing {heading}:\n{text}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_chorus-trace"))
        .args(["summary", "--json", "--critical-path"])
        .arg(&file)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["critical_path"]["entries"].as_array().unwrap().len(), 3);
    assert_eq!(v["message_sizes"].as_array().unwrap().len(), 3);
    assert_eq!(v["heat_map"]["rows"].as_array().unwrap().len(), 2);
}

#[test]
fn the_critical_path_is_the_longest_chain_not_the_last_entry() {
    // E ends last but starts a chain of its own (no arrow leads to it): 3 us against
    // the 20 us of A -> B -> C.
    let late = r#"{"ph":"X","cat":"entry","name":"E","pid":1,"tid":2,"ts":18,"dur":3},"#;
    let text = TRACE.replacen("\n{\"ph\":\"s\"", &format!("\n{late}\n{{\"ph\":\"s\""), 1);
    assert!(text.contains("\"E\""));
    let file = scratch("views_longest").join("t.json");
    std::fs::write(&file, text).unwrap();
    let path = critical_path(&CompactTrace::read(&file).unwrap()).unwrap();
    let names: Vec<&str> = path.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(path.span_ns, 20_000);
}
