//! Perfetto protobuf output: the same run written as JSON and as a `.perfetto-trace`
//! reads back to the same tracks, slices, flows and summary.

mod common;

use chorus_traces::{
    check_compact, read_chrome, summarize, summarize_file, CompactTrace, Format, SummaryOptions,
    Trace, TraceConfig,
};
use common::{record, scenario, scratch};
use serde_json::{Map, Value};

/// Per track (pid, tid, thread name): its slices and instants as comparable tuples,
/// sorted; file positions left out, as the formats order events differently.
type Shape = Vec<(
    (u32, u32, Option<String>, Option<String>),
    Vec<(u64, u64, String, String, Map<String, Value>)>,
    Vec<(u64, String, String)>,
)>;

fn shape(t: &Trace) -> Shape {
    t.tracks
        .iter()
        .map(|tr| {
            let mut slices: Vec<_> = tr
                .slices
                .iter()
                .map(|s| {
                    (
                        s.ts_ns,
                        s.dur_ns,
                        s.name.clone(),
                        s.cat.clone(),
                        s.args.clone(),
                    )
                })
                .collect();
            slices.sort_by(|a, b| (a.0, a.1, &a.2, &a.3).cmp(&(b.0, b.1, &b.2, &b.3)));
            let mut instants: Vec<_> = tr
                .instants
                .iter()
                .map(|i| (i.ts_ns, i.name.clone(), i.cat.clone()))
                .collect();
            instants.sort();
            (
                (
                    tr.pid,
                    tr.tid,
                    tr.process_name.clone(),
                    tr.thread_name.clone(),
                ),
                slices,
                instants,
            )
        })
        .collect()
}

/// Flows as (id, from pid/tid/ts, to pid/tid/ts), sorted.
fn arrows(t: &Trace) -> Vec<(String, [u64; 3], [u64; 3])> {
    let mut v: Vec<_> = t
        .flows
        .iter()
        .map(|f| {
            let end = |e: &chorus_traces::FlowEnd| [u64::from(e.pid), u64::from(e.tid), e.ts_ns];
            (f.id.clone(), end(&f.from), end(&f.to))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn json_and_perfetto_read_back_the_same() {
    let dir = scratch("perfetto_same");
    for (pes, budget, seed) in [(4, 300, 11), (8, 2_000, 3)] {
        let s = scenario(pes, budget, seed);
        let json = dir.join(format!("t{pes}.json"));
        let pf = dir.join(format!("t{pes}.perfetto-trace"));
        let sink = record(&s, TraceConfig::new(&json));
        let js = sink.write(&s.names, &json).unwrap();
        let ps = sink.write(&s.names, &pf).unwrap();
        assert_eq!(
            (js.slices, js.instants, js.flows),
            (ps.slices, ps.instants, ps.flows)
        );
        assert!(ps.bytes < js.bytes, "{} vs {} bytes", ps.bytes, js.bytes);

        let (a, b) = (read_chrome(&json).unwrap(), read_chrome(&pf).unwrap());
        assert_eq!(shape(&a), shape(&b));
        assert_eq!(arrows(&a), arrows(&b));
        assert!(!a.flows.is_empty());
        assert_eq!(b.dangling_flow_events, 0);

        let sum_json = summarize_file(&json, &SummaryOptions::bins(13)).unwrap();
        let sum_pf = summarize_file(&pf, &SummaryOptions::bins(13)).unwrap();
        assert_eq!(
            serde_json::to_value(&sum_json).unwrap(),
            serde_json::to_value(&sum_pf).unwrap()
        );
        assert_eq!(summarize(&b, 13), sum_pf);
        let compact = CompactTrace::read(&pf).unwrap();
        assert_eq!(compact.flows.len(), a.flows.len());
        assert_eq!(compact.format, Format::Perfetto);
        let r = check_compact(&compact);
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.flows, a.flows.len());
    }
}

#[test]
fn no_pe_or_rank_is_written_as_id_0_and_the_summary_still_says_pe_0() {
    // Perfetto takes pid 0 for the kernel's swapper and renames its threads; PE 0 of
    // rank 0 was written as pid 0, tid 0 in both formats.
    let dir = scratch("perfetto_ids");
    let s = scenario(4, 300, 11);
    for name in ["t.json", "t.perfetto-trace"] {
        let out = dir.join(name);
        record(&s, TraceConfig::new(&out))
            .write(&s.names, &out)
            .unwrap();
        let trace = read_chrome(&out).unwrap();
        assert!(!trace.tracks.is_empty());
        for t in &trace.tracks {
            assert!(
                t.pid != 0 && t.tid != 0,
                "{name}: pid {} tid {}",
                t.pid,
                t.tid
            );
            let pe = t.thread_name.as_deref().unwrap_or_default();
            assert_eq!(pe, format!("PE {}", t.tid - 1), "{name}");
        }
        let sum = summarize(&trace, 4);
        let pes: Vec<u32> = sum.pes.iter().map(|p| p.pe).collect();
        assert_eq!(pes, [0, 1, 2, 3], "{name}: the PEs shown are the run's");
        assert!(
            sum.pes.iter().all(|p| p.pid == 0),
            "{name}: one rank, rank 0"
        );
    }
}

#[test]
fn a_damaged_perfetto_trace_is_a_clear_error() {
    let dir = scratch("perfetto_bad");
    let s = scenario(2, 100, 1);
    let pf = dir.join("t.pftrace");
    record(&s, TraceConfig::new(&pf))
        .write(&s.names, &pf)
        .unwrap();
    let bytes = std::fs::read(&pf).unwrap();
    let cut = dir.join("cut.pftrace");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let e = summarize_file(&cut, &SummaryOptions::bins(4))
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated Perfetto trace"), "{e}");
    // After the first packet, one whose field claims more bytes than the packet has.
    let first = 2 + usize::from(bytes[1]);
    assert!(bytes[1] < 0x80);
    let mut bad = bytes[..first].to_vec();
    bad.extend_from_slice(&[0x0a, 0x03, 0x5a, 0x7f, 0x00]);
    bad.extend_from_slice(&bytes[first..]);
    let bad_path = dir.join("bad.pftrace");
    std::fs::write(&bad_path, &bad).unwrap();
    let e = read_chrome(&bad_path).unwrap_err().to_string();
    assert!(e.contains("malformed TracePacket"), "{e}");
}

/// Offsets just past each top-level field (each packet) of a protobuf trace.
fn packet_ends(bytes: &[u8]) -> Vec<usize> {
    let varint = |pos: &mut usize| {
        let mut v = 0u64;
        for shift in (0..).step_by(7) {
            let b = bytes[*pos];
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    };
    let (mut pos, mut ends) = (0, Vec::new());
    while pos < bytes.len() {
        varint(&mut pos);
        let len = varint(&mut pos) as usize;
        pos += len;
        ends.push(pos);
    }
    ends
}

#[test]
fn a_cut_perfetto_trace_is_refused_not_summarised() {
    let dir = scratch("perfetto_cut");
    let out = dir.join("t.perfetto-trace");
    let s = scenario(4, 200, 9);
    record(&s, TraceConfig::new(&out))
        .write(&s.names, &out)
        .unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let ends = packet_ends(&bytes);
    let cut = dir.join("cut.perfetto-trace");
    let opts = SummaryOptions::default();
    let (mut boundary, mut refused) = (0, 0);
    // Every cut inside the events: mid-packet (always refused, as before) and at a
    // packet boundary, refused when a slice is left open (before the fix, never).
    let events = &ends[ends.len() / 4..ends.len() - 1];
    let step = (events.len() / 200).max(1);
    for w in events.windows(2).step_by(step) {
        std::fs::write(&cut, &bytes[..w[0] + 1]).unwrap();
        let e = summarize_file(&cut, &opts).expect_err("a cut packet");
        assert!(e.to_string().contains("truncated"), "{e}");
        std::fs::write(&cut, &bytes[..w[0]]).unwrap();
        boundary += 1;
        if let Err(e) = summarize_file(&cut, &opts) {
            assert!(e.to_string().contains("never ended"), "{e}");
            refused += 1;
        }
    }
    assert!(boundary >= 100, "{boundary} cuts");
    assert!(
        refused * 2 > boundary,
        "only {refused} of {boundary} cuts at a packet boundary refused"
    );
}
