//! The streaming readers: the same results as the in-memory model, on traces the
//! recorder writes and on hand-made foreign ones, and big traces held in little memory.

mod common;

use std::io::{BufWriter, Write};
use std::path::Path;

use chorus_traces::{
    check, check_compact, parse_chrome, read_chrome, render_report, render_report_compact,
    summarize, summarize_compact, summarize_file, CompactTrace, ReportOptions, Summary,
    SummaryOptions, TraceConfig,
};
use common::{record, scenario, scratch};
use serde_json::Value;

/// Equal, floats within a relative 1e-9 (the time profile's bins are added up in
/// another order when streamed).
fn assert_close(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{at}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                assert_close(u, v, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (k, u) in x {
                assert_close(u, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

fn same_summary(a: &Summary, b: &Summary) {
    let (a, b) = (
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap(),
    );
    assert_close(&a, &b, "summary");
}

#[test]
fn streamed_results_equal_the_in_memory_ones() {
    let dir = scratch("streaming_same");
    for (pes, budget, seed, flow_every) in [(4, 300, 11, 1), (8, 2_000, 3, 4), (16, 1_000, 5, 1)] {
        let s = scenario(pes, budget, seed);
        let out = dir.join(format!("t{pes}.json"));
        let mut config = TraceConfig::new(&out);
        config.flow_every = flow_every;
        record(&s, config).write_chrome(&s.names, &out).unwrap();

        let trace = read_chrome(&out).unwrap();
        let in_memory = summarize(&trace, 17);
        same_summary(
            &summarize_file(&out, &SummaryOptions::bins(17)).unwrap(),
            &in_memory,
        );
        let compact = CompactTrace::read(&out).unwrap();
        same_summary(
            &summarize_compact(&compact, &SummaryOptions::bins(17)),
            &in_memory,
        );
        assert_eq!(check_compact(&compact), check(&trace));
        assert_eq!(compact.flows.len(), trace.flows.len());
        for exact in [0, usize::MAX] {
            let opts = ReportOptions {
                max_exact_slices: exact,
                ..ReportOptions::default()
            };
            assert_eq!(
                render_report_compact(&compact, &in_memory, &opts),
                render_report(&trace, &in_memory, &opts)
            );
        }
    }
}

#[test]
fn foreign_traces_out_of_order_stream_the_same() {
    // `B`/`E` pairs (the outer one ends last, so it arrives after the inner one), `X`
    // slices out of start order, an instant setting the span's end, and no metadata.
    let text = r#"[
{"ph":"B","cat":"entry","name":"outer","pid":1,"tid":2,"ts":10},
{"ph":"B","cat":"entry","name":"inner","pid":1,"tid":2,"ts":12},
{"ph":"E","pid":1,"tid":2,"ts":15},
{"ph":"E","pid":1,"tid":2,"ts":30},
{"ph":"X","cat":"entry","name":"late","pid":1,"tid":3,"ts":40,"dur":5,"args":{"src_pe":2,"bytes":8}},
{"ph":"X","cat":"entry","name":"early","pid":1,"tid":3,"ts":1,"dur":9,"args":{"src_pe":2,"bytes":4}},
{"ph":"X","cat":"idle","name":"idle","pid":1,"tid":3,"ts":10,"dur":30},
{"ph":"i","cat":"user","name":"mark","pid":1,"tid":2,"ts":50}
]"#;
    let dir = scratch("streaming_foreign");
    let out = dir.join("foreign.json");
    std::fs::write(&out, text).unwrap();
    let trace = parse_chrome(text, Path::new("foreign.json")).unwrap();
    let in_memory = summarize(&trace, 5);
    assert_eq!(in_memory.span_ns, 49_000);
    assert_eq!(
        in_memory.pes[0].busy_ns, 20_000,
        "only the outer slice counts"
    );
    assert_eq!(in_memory.pes[1].busy_ns, 14_000);
    assert_eq!(in_memory.message_bytes, 12);
    same_summary(
        &summarize_file(&out, &SummaryOptions::bins(5)).unwrap(),
        &in_memory,
    );
    let compact = CompactTrace::read(&out).unwrap();
    same_summary(
        &summarize_compact(&compact, &SummaryOptions::bins(5)),
        &in_memory,
    );
    assert_eq!(check_compact(&compact), check(&trace));
}

/// Writes `pes` tracks of `per_pe` (idle, entry) pairs, each entry receiving a
/// 64-byte message from the PE before, with an arrow; returns the file size.
fn write_big(path: &Path, pes: u32, per_pe: u64) -> u64 {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(w, "{{\"traceEvents\":[").unwrap();
    for pe in 0..pes {
        writeln!(
            w,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":{pe},\"args\":{{\"name\":\"PE {pe}\"}}}},"
        )
        .unwrap();
    }
    let src = |pe: u32| (pe + pes - 1) % pes;
    for pe in 0..pes {
        for k in 0..per_pe {
            let m = u64::from(pe) << 32 | k;
            writeln!(
                w,
                "{{\"ph\":\"X\",\"cat\":\"idle\",\"name\":\"idle\",\"pid\":0,\"tid\":{pe},\"ts\":{}.000,\"dur\":0.400}},\n\
                 {{\"ph\":\"X\",\"cat\":\"entry\",\"name\":\"Worker::step\",\"pid\":0,\"tid\":{pe},\"ts\":{}.400,\"dur\":0.500,\"args\":{{\"src_pe\":{},\"bytes\":64,\"msg_id\":{m}}}}},\n\
                 {{\"ph\":\"X\",\"cat\":\"msg\",\"name\":\"recv\",\"pid\":0,\"tid\":{pe},\"ts\":{}.401,\"dur\":0.001}},\n\
                 {{\"ph\":\"f\",\"cat\":\"msg\",\"name\":\"msg\",\"id\":\"{m:#x}\",\"pid\":0,\"tid\":{pe},\"ts\":{}.401,\"bp\":\"e\"}},\n\
                 {{\"ph\":\"s\",\"cat\":\"msg\",\"name\":\"msg\",\"id\":\"{m:#x}\",\"pid\":0,\"tid\":{},\"ts\":{}.300}},",
                k,
                k,
                src(pe),
                k,
                k,
                src(pe),
                k
            )
            .unwrap();
        }
    }
    writeln!(w, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"user\",\"name\":\"end\",\"pid\":0,\"tid\":0,\"ts\":{}.000}}\n],\"displayTimeUnit\":\"ns\"}}", per_pe).unwrap();
    w.flush().unwrap();
    drop(w);
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn a_big_trace_is_held_in_a_fraction_of_its_size() {
    let dir = scratch("streaming_big");
    let out = dir.join("big.json");
    let (pes, per_pe) = (32u32, 3_000u64);
    let size = write_big(&out, pes, per_pe);
    assert!(size > 40_000_000, "{size} bytes");

    let s = summarize_file(&out, &SummaryOptions::bins(10)).unwrap();
    let n = u64::from(pes) * per_pe;
    assert_eq!(s.pe_count, pes as usize);
    assert_eq!((s.entry_count, s.message_count), (n, n));
    assert_eq!(s.message_bytes, 64 * n);
    assert_eq!(s.span_ns, per_pe * 1_000);
    assert!(s.pes.iter().all(|p| p.busy_ns == per_pe * 500));
    assert_eq!(s.messages.len(), pes as usize);

    let compact = CompactTrace::read(&out).unwrap();
    assert_eq!(compact.flows.len() as u64, n);
    assert_eq!(compact.display_time_unit.as_deref(), Some("ns"));
    let held = compact.packed_bytes() as u64;
    assert!(held * 5 < size, "{held} bytes held for a {size}-byte file");
    same_summary(&summarize_compact(&compact, &SummaryOptions::bins(10)), &s);
    let r = check_compact(&compact);
    assert_eq!(r.flows as u64, n);
}
