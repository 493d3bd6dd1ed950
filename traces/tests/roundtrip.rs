//! Record a simulated run, write Chrome JSON, read it back and compare every figure
//! with what the simulation says it must be.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chorus_traces::{
    flow_kept, read_chrome, summarize, validate, Collector, Names, Recorder, TraceConfig,
};
use common::{record, scenario, scratch};
use serde_json::Value;

/// Checks the raw JSON without the crate's reader: per-track time order in file order
/// (then the arrows' holders and flow events, in time order across tracks),
/// proper nesting of X slices, paired flows inside slices, named tracks.
fn check_raw(text: &str) {
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    let events = v["traceEvents"].as_array().unwrap();
    let mut last_ts: HashMap<(u64, u64), f64> = HashMap::new();
    let mut last_arrow_ts = 0.0f64;
    let mut named: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut used: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut slices: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    let mut starts: HashMap<String, ((u64, u64), u64)> = HashMap::new();
    let mut ends: HashMap<String, ((u64, u64), u64)> = HashMap::new();
    for e in events {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ph = e["ph"].as_str().unwrap();
        if ph == "M" {
            if e["name"] == "thread_name" {
                // PE n is thread n + 1: Perfetto takes thread 0 for the swapper.
                assert_eq!(e["args"]["name"], format!("PE {}", key.1 - 1));
                assert_ne!(key.0, 0, "no process is pid 0");
                named.insert(key);
            }
            continue;
        }
        used.insert(key);
        let ts = e["ts"].as_f64().unwrap();
        // Tracks are in time order, then the arrows' holders and flow events, all
        // tracks together in time order.
        let arrow = e["cat"] == "msg";
        let prev = if arrow {
            &mut last_arrow_ts
        } else {
            assert_eq!(last_arrow_ts, 0.0, "a track's event after the arrows");
            last_ts.entry(key).or_insert(0.0)
        };
        assert!(ts >= *prev, "track {key:?}: ts {ts} after {prev}");
        *prev = ts;
        let ns = (ts * 1000.0).round() as u64;
        match ph {
            "X" => {
                let dur = (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
                slices.entry(key).or_default().push((ns, ns + dur));
            }
            "s" => {
                assert_eq!(e["cat"], "msg");
                let id = e["id"].as_str().unwrap().to_owned();
                assert!(
                    starts.insert(id, (key, ns)).is_none(),
                    "duplicate flow start"
                );
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                let id = e["id"].as_str().unwrap().to_owned();
                assert!(ends.insert(id, (key, ns)).is_none(), "duplicate flow end");
            }
            "i" => assert_eq!(e["s"], "t"),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(used.is_subset(&named), "tracks without names");
    for (key, list) in &slices {
        let mut open: Vec<(u64, u64)> = Vec::new();
        for &(a, b) in list {
            while open.last().is_some_and(|&(_, e)| e <= a) {
                open.pop();
            }
            if let Some(&(pa, pb)) = open.last() {
                assert!(b <= pb, "track {key:?}: [{a},{b}] overlaps [{pa},{pb}]");
            }
            open.push((a, b));
        }
    }
    assert_eq!(
        starts.keys().collect::<BTreeSet<_>>(),
        ends.keys().collect::<BTreeSet<_>>(),
        "every flow has both ends"
    );
    for (id, (key, ts)) in starts.iter().chain(ends.iter()) {
        let inside = slices[key].iter().any(|&(a, b)| a <= *ts && *ts <= b);
        assert!(
            inside,
            "flow {id} end at {ts} on {key:?} is not inside a slice"
        );
    }
}

#[test]
fn round_trip_matches_the_simulation() {
    let s = scenario(6, 3_000, 42);
    let dir = scratch("round_trip");
    let out = dir.join("trace.json");
    let mut config = TraceConfig::new(&out);
    config.flow_every = 3;
    config.buffer_events = 64;
    let sink = record(&s, config);
    let stats = sink.write_chrome(&s.names, &out).unwrap();
    let spool = sink.spool_path().to_path_buf();
    assert!(spool.exists());
    drop(sink);
    assert!(!spool.exists(), "spool file is removed with the collector");

    let text = std::fs::read_to_string(&out).unwrap();
    check_raw(&text);
    let trace = read_chrome(&out).unwrap();
    assert_eq!(validate(&trace), Vec::<String>::new());
    let exp = &s.expected;

    // Flows: exactly the sampled messages that were delivered, sender to receiver.
    let want: BTreeSet<u64> = exp
        .delivered
        .iter()
        .copied()
        .filter(|&m| flow_kept(m, 3))
        .collect();
    let got: BTreeSet<u64> = trace.flows.iter().map(|f| f.id_u64().unwrap()).collect();
    assert_eq!(got, want);
    assert!(
        want.len() > 100 && want.len() < exp.delivered.len() / 2,
        "{} of {} kept",
        want.len(),
        exp.delivered.len()
    );
    assert_eq!(stats.flows as usize, want.len());
    assert_eq!(trace.dangling_flow_events, 0);
    // Main's sends on PE 0 happen outside any entry, so they needed holder slices.
    assert!(stats.send_slices > 0);
    assert_eq!(stats.clipped, 0);
    assert_eq!(stats.stray_ends + stats.auto_closed, 0);

    // Tracks: one per PE, named, in processes of 4 PEs.
    assert_eq!(trace.tracks.len(), 6);
    // Rank r is process r + 1 and PE n thread n + 1 (`chorus_traces::ids`).
    for t in &trace.tracks {
        let (rank, pe) = (t.pid - 1, t.tid - 1);
        assert_eq!(rank, pe / 4);
        assert_eq!(t.thread_name.as_deref(), Some(format!("PE {pe}").as_str()));
        assert_eq!(
            t.process_name.as_deref(),
            Some(format!("rank {rank}").as_str())
        );
        assert_eq!(t.sort_index, Some(i64::from(pe)));
    }

    // Summary figures equal the simulation's own bookkeeping.
    let sum = summarize(&trace, 10);
    for p in &sum.pes {
        assert_eq!(p.busy_ns, exp.busy[p.pe as usize], "busy of PE {}", p.pe);
        assert_eq!(p.idle_ns, exp.idle[p.pe as usize], "idle of PE {}", p.pe);
        let u = p.busy_ns as f64 / sum.span_ns as f64;
        assert!((p.utilisation - u).abs() < 1e-12);
    }
    let counts: BTreeMap<String, u64> = sum
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.count))
        .collect();
    let totals: BTreeMap<String, u64> = sum
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.total_ns))
        .collect();
    let bytes: BTreeMap<String, u64> = sum
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.bytes))
        .collect();
    assert_eq!(counts, exp.entry_count);
    assert_eq!(totals, exp.entry_total);
    assert_eq!(bytes, exp.entry_bytes);
    let matrix: BTreeMap<(u32, u32), (u64, u64)> = sum
        .messages
        .iter()
        .map(|c| ((c.src_pe, c.dst_pe), (c.messages, c.bytes)))
        .collect();
    assert_eq!(matrix, exp.matrix);
    assert_eq!(sum.message_count as usize, exp.delivered.len());
    let busy_total: u64 = exp.busy.iter().sum();
    let profile_busy: f64 =
        sum.time_profile.busy.iter().sum::<f64>() * sum.time_profile.bin_ns * 6.0;
    assert!((profile_busy - busy_total as f64).abs() < 1e-6 * busy_total as f64);

    // User spans, phases (with their arguments) and instants survived.
    let count_cat = |cat: &str| -> u64 {
        trace
            .tracks
            .iter()
            .map(|t| t.slices.iter().filter(|s| s.cat == cat).count() as u64)
            .sum()
    };
    assert_eq!(count_cat("user"), exp.spans);
    assert_eq!(count_cat("phase"), exp.phases);
    let instants: u64 = trace.tracks.iter().map(|t| t.instants.len() as u64).sum();
    assert_eq!(instants, exp.user_events);
    let phase = trace
        .tracks
        .iter()
        .flat_map(|t| &t.slices)
        .find(|s| s.cat == "phase")
        .unwrap();
    assert_eq!(phase.arg_u64("members"), Some(8));
    assert_eq!(phase.arg_u64("depth"), Some(3));
    assert_eq!(phase.name, "section create");
    assert!(stats.bytes_per_event > 40.0 && stats.bytes_per_event < 250.0);
}

#[test]
fn same_input_same_file() {
    let s = scenario(4, 500, 7);
    let mut files = Vec::new();
    for run in 0..2 {
        let out = scratch(&format!("determinism_{run}")).join("t.json");
        let mut config = TraceConfig::new(&out);
        config.flow_every = 2;
        config.buffer_events = 16;
        record(&s, config).write_chrome(&s.names, &out).unwrap();
        files.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(files[0], files[1]);
}

#[test]
fn buffers_stay_bounded() {
    let out = scratch("bounded").join("t.json");
    let mut config = TraceConfig::new(&out);
    config.buffer_events = 16;
    let sink = Arc::new(Collector::new(config).unwrap());
    let names = Names::new();
    let e = names.intern("E::e");
    let mut r = Recorder::new(0, 0, sink.clone());
    for i in 0..10_000u64 {
        r.entry_begin(10 * i, e, 0, 8, Some(i));
        r.entry_end(10 * i + 5);
        assert!(r.buffered() <= 16);
    }
    assert_eq!(r.max_buffered(), 16);
    assert!(
        r.buffer_capacity() <= 16,
        "capacity {}",
        r.buffer_capacity()
    );
    assert_eq!(r.flushes(), 20_000 / 16);
    let recorded = r.recorded();
    r.finish();
    assert_eq!(sink.spooled_records(), recorded);
    assert!(sink.largest_chunk() <= 16);
    let stats = sink.write_chrome(&names, &out).unwrap();
    assert_eq!(stats.records, 20_000);
    // 10 000 entries + 4 metadata events.
    assert_eq!(stats.slices, 10_000);
    assert_eq!(stats.events, 10_004);
}

#[test]
fn untidy_input_still_nests() {
    let out = scratch("untidy").join("t.json");
    let sink = Arc::new(Collector::new(TraceConfig::new(&out)).unwrap());
    let names = Names::new();
    let (a, b, ph) = (
        names.intern("A::a"),
        names.intern("B::b"),
        names.intern("phase"),
    );
    let sp = names.intern("span");
    let mut r = Recorder::new(3, 1, sink.clone());
    r.entry_end(5); // nothing open: ignored
    r.entry_begin(10, a, 0, 1, None);
    r.span_begin(20, sp); // never closed explicitly: closed by the entry's end
    r.entry_end(100);
    r.entry_begin(150, b, 1, 1, None);
    r.entry_end(300);
    // A phase reported late, overlapping both entries partially.
    r.phase(50, 200, ph, &[("k", 1)]);
    // A phase that encloses the first entry only.
    r.phase(0, 120, ph, &[]);
    r.entry_begin(400, a, 0, 1, None); // left open: closed at the last timestamp
    r.user_event(450, sp);
    r.finish();
    let stats = sink.write_chrome(&names, &out).unwrap();
    assert_eq!(stats.stray_ends, 1);
    assert_eq!(stats.auto_closed, 2);
    assert!(stats.clipped >= 1);
    let trace = read_chrome(&out).unwrap();
    assert_eq!(validate(&trace), Vec::<String>::new());
    check_raw(&std::fs::read_to_string(&out).unwrap());
    let t = trace.track(2, 4).unwrap(); // PE 3 of node 1, one more each in the file
    let entries: Vec<(u64, u64)> = t
        .slices
        .iter()
        .filter(|s| s.cat == "entry")
        .map(|s| (s.ts_ns, s.end_ns()))
        .collect();
    // Entries are never shortened; only phases are.
    assert_eq!(entries, vec![(10, 100), (150, 300), (400, 450)]);
}

#[test]
fn flows_need_both_ends_and_forward_time() {
    let out = scratch("flow_ends").join("t.json");
    let sink = Arc::new(Collector::new(TraceConfig::new(&out)).unwrap());
    let names = Names::new();
    let e = names.intern("E::e");
    let mut p0 = Recorder::new(0, 0, sink.clone());
    let mut p1 = Recorder::new(1, 0, sink.clone());
    p0.entry_begin(0, e, 0, 0, None);
    p0.send(10, 1, 1, 8); // received: a flow
    p0.send(20, 2, 1, 8); // never received
    p0.send(30, 3, 1, 8); // received "before" it was sent (skewed clocks)
    p0.entry_end(40);
    p1.entry_begin(25, e, 0, 8, Some(3));
    p1.entry_end(26);
    p1.entry_begin(50, e, 0, 8, Some(1));
    p1.entry_end(60);
    p1.entry_begin(70, e, 5, 8, Some(9)); // sender not traced
    p1.entry_end(80);
    p1.idle_begin(80);
    p1.idle_end(90);
    // A PE that records nothing still gets a named track.
    let p2 = Recorder::new(2, 0, sink.clone());
    drop((p0, p1, p2));
    let stats = sink.write_chrome(&names, &out).unwrap();
    assert_eq!(stats.flows, 1);
    assert_eq!(stats.unmatched_flow_ends, 2);
    assert_eq!(stats.skewed_flows, 1);
    assert_eq!(stats.pes, 3);
    let trace = read_chrome(&out).unwrap();
    assert_eq!(validate(&trace), Vec::<String>::new());
    assert_eq!(trace.flows.len(), 1);
    assert_eq!(trace.flows[0].id_u64(), Some(1));
    // The send's holder is at its recorded time; the receive's 1 ns into the entry,
    // so that it is not at the boundary the entry shares with what came before.
    assert_eq!(trace.flows[0].from.ts_ns, 10);
    assert_eq!(trace.flows[0].to.ts_ns, 51);
    assert!(trace.track(1, 3).unwrap().thread_name.is_some());
    let idle = trace
        .track(1, 2)
        .unwrap()
        .slices
        .iter()
        .find(|s| s.cat == "idle")
        .unwrap();
    assert_eq!(
        (idle.name.as_str(), idle.ts_ns, idle.dur_ns),
        ("idle", 80, 10)
    );
}

#[test]
fn receives_move_after_sends_that_moved() {
    // Zero-time entries at one instant, as on the ideal sim: PE 0's third send gets
    // its holder 5 ns in, after PE 1's receive of it would have been; PE 1's reply
    // to PE 2 then moves too, which takes a third pass.
    let out = scratch("moved").join("t.json");
    let sink = Arc::new(Collector::new(TraceConfig::new(&out)).unwrap());
    let names = Names::new();
    let e = names.intern("E::e");
    let mut p0 = Recorder::new(0, 0, sink.clone());
    let mut p1 = Recorder::new(1, 0, sink.clone());
    let mut p2 = Recorder::new(2, 0, sink.clone());
    p0.entry_begin(100, e, 0, 0, None);
    for m in 1..=3 {
        p0.send(100, m, 1, 8);
    }
    p0.entry_end(100);
    p1.entry_begin(100, e, 0, 8, Some(3));
    p1.send(100, 4, 2, 8);
    p1.entry_end(100);
    p2.entry_begin(100, e, 1, 8, Some(4));
    p2.entry_end(100);
    for m in 1..=2 {
        p1.entry_begin(100, e, 0, 8, Some(m));
        p1.entry_end(100);
    }
    drop((p0, p1, p2));
    let stats = sink.write_chrome(&names, &out).unwrap();
    assert_eq!(stats.flows, 4);
    assert_eq!(stats.skewed_flows, 0);
    assert_eq!(stats.layout_passes, 3);
    let trace = read_chrome(&out).unwrap();
    assert_eq!(validate(&trace), Vec::<String>::new());
    for f in &trace.flows {
        assert!(f.to.ts_ns > f.from.ts_ns, "{f:?}");
    }
}
