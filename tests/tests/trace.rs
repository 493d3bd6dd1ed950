//! `--trace FILE` on every layer: the written Chrome trace parses back, is well formed,
//! and its slices, flows and summary agree with what the program is known to have done.

use chorus_core::{Chare, Config, Ctx, ErrorPolicy, GroupProxy, Layer, Registry, Runtime};
use chorus_tests::{config, layers};
use chorus_traces::{read_chrome, summarize, validate, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

const PES: u32 = 5;
const HOPS: u32 = 40;

/// A group whose members pass a token around the ring of PEs, marking user events,
/// spans and a phase on the way.
struct Ringer;

#[derive(Clone, Serialize, Deserialize)]
enum RingerMsg {
    Token { left: u32, started: f64 },
}

impl Chare for Ringer {
    type Init = ();
    type Msg = RingerMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Ringer
    }
    fn handle(&mut self, msg: RingerMsg, ctx: &mut Ctx) {
        let RingerMsg::Token { left, started } = msg;
        ctx.trace_event("hop");
        if left == 0 {
            ctx.trace_phase("ring", started, &[("hops", u64::from(HOPS))]);
            ctx.exit();
            return;
        }
        ctx.trace_span_begin("forward");
        let group: GroupProxy<Ringer> = ctx.this_group().expect("a group member");
        let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
        group.send(
            ctx,
            next,
            RingerMsg::Token {
                left: left - 1,
                started,
            },
        );
        ctx.trace_span_end();
    }
}

fn out_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn run_ring(cfg: Config) -> chorus_core::RunReport {
    let mut reg = Registry::new();
    reg.chare::<Ringer>("Ringer");
    Runtime::new(reg, cfg)
        .run(|ctx| {
            let g: GroupProxy<Ringer> = ctx.create_group(());
            let started = ctx.now();
            g.send(
                ctx,
                0,
                RingerMsg::Token {
                    left: HOPS,
                    started,
                },
            );
        })
        .expect("the ring runs")
}

fn traced(layer: Layer, name: &str, flow_every: u64) -> (chorus_core::RunReport, Trace) {
    let file = out_file(name);
    let mut cfg = config(layer, PES, ErrorPolicy::Abort);
    cfg.trace = Some(file.clone());
    cfg.trace_flow_every = flow_every;
    let report = run_ring(cfg);
    let written = report
        .trace
        .clone()
        .expect("a traced run reports its trace");
    assert_eq!(written.file, file);
    let trace = read_chrome(&file).expect("the trace parses back");
    (report, trace)
}

fn token_slices(trace: &Trace) -> Vec<(u32, u64)> {
    let mut out: Vec<(u32, u64)> = trace
        .tracks
        .iter()
        .flat_map(|t| {
            t.slices
                .iter()
                .filter(|s| s.name == "Ringer::Token")
                .map(move |s| (t.pe(), s.ts_ns))
        })
        .collect();
    out.sort_by_key(|&(_, ts)| ts);
    out
}

#[test]
fn traces_are_well_formed_and_complete() {
    for layer in layers() {
        let (report, trace) = traced(layer, &format!("ring-{layer:?}.json"), 1);
        let problems = validate(&trace);
        assert!(problems.is_empty(), "{layer:?}: {problems:?}");

        // One named track per PE, each of which ran something (the group constructor).
        assert_eq!(trace.tracks.len(), PES as usize, "{layer:?}");
        for (i, t) in trace.tracks.iter().enumerate() {
            assert_eq!(t.thread_name.as_deref(), Some(format!("PE {i}").as_str()));
            assert!(t.slices.iter().any(|s| s.name == "Ringer::create"));
        }

        // Every hop is one entry slice, on the PE the ring reached, in ring order.
        let tokens = token_slices(&trace);
        assert_eq!(tokens.len(), HOPS as usize + 1, "{layer:?}");
        for (k, &(pe, _)) in tokens.iter().enumerate() {
            assert_eq!(pe, k as u32 % PES, "{layer:?}: hop {k} ran on PE {pe}");
        }

        // Every token arrived by an arrow from the previous hop's PE (the first from main).
        let into_tokens: Vec<_> = trace
            .flows
            .iter()
            .filter(|f| {
                trace.track(f.to.pid, f.to.tid).is_some_and(|t| {
                    t.slices.iter().any(|s| {
                        s.name == "Ringer::Token"
                            && s.ts_ns <= f.to.ts_ns
                            && f.to.ts_ns <= s.end_ns()
                    })
                })
            })
            .collect();
        assert_eq!(into_tokens.len(), HOPS as usize + 1, "{layer:?}");
        let from_main = into_tokens
            .iter()
            .filter(|f| f.from.pe() == 0 && f.to.pe() == 0)
            .count();
        assert_eq!(from_main, 1, "{layer:?}: main's first send");
        for f in &into_tokens {
            let ring_step = (f.from.pe() + 1) % PES == f.to.pe();
            let first = f.from.pe() == 0 && f.to.pe() == 0;
            assert!(ring_step || first, "{layer:?}: arrow {f:?}");
            assert!(
                f.from.ts_ns <= f.to.ts_ns,
                "{layer:?}: backward arrow {f:?}"
            );
        }

        // User events, spans and the phase.
        let count = |pred: &dyn Fn(&str) -> bool| -> usize {
            trace
                .tracks
                .iter()
                .map(|t| t.slices.iter().filter(|s| pred(&s.name)).count())
                .sum()
        };
        let hops: usize = trace
            .tracks
            .iter()
            .map(|t| t.instants.iter().filter(|i| i.name == "hop").count())
            .sum();
        assert_eq!(hops, HOPS as usize + 1);
        assert_eq!(count(&|n| n == "forward"), HOPS as usize);
        let ring: Vec<_> = trace
            .tracks
            .iter()
            .flat_map(|t| t.slices.iter().filter(|s| s.name == "ring"))
            .collect();
        assert_eq!(ring.len(), 1);
        assert_eq!(ring[0].arg_u64("hops"), Some(u64::from(HOPS)));

        // The summary agrees with counts taken from the raw slices.
        let sum = summarize(&trace, 10);
        let token_row = sum
            .entries
            .iter()
            .find(|e| e.name == "Ringer::Token")
            .expect("token entry in the table");
        assert_eq!(token_row.count, HOPS as u64 + 1);
        let mut matrix: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for t in &trace.tracks {
            let entries: Vec<_> = t.slices.iter().filter(|s| s.cat == "entry").collect();
            let usage = sum
                .pes
                .iter()
                .find(|p| p.pe == t.pe())
                .expect("PE usage row");
            assert_eq!(usage.entries, entries.len() as u64, "PE {}", t.pe());
            for s in entries {
                if let Some(src) = s.arg_u64("src_pe") {
                    *matrix.entry((src as u32, t.pe())).or_default() += 1;
                }
            }
        }
        let from_summary: BTreeMap<(u32, u32), u64> = sum
            .messages
            .iter()
            .map(|c| ((c.src_pe, c.dst_pe), c.messages))
            .collect();
        assert_eq!(from_summary, matrix, "{layer:?}");
        for pe in 0..PES {
            let ring_msgs = from_summary
                .get(&(pe, (pe + 1) % PES))
                .copied()
                .unwrap_or(0);
            assert!(ring_msgs >= u64::from(HOPS / PES), "{layer:?}: PE {pe}");
        }

        // Every counted message the runtime processed is one traced entry or runtime slice.
        assert!(report.trace.as_ref().is_some_and(|t| t.stats.flows > 0));
    }
}

#[test]
fn sampled_flows_keep_both_ends() {
    for layer in layers() {
        let (_, all) = traced(layer, &format!("all-{layer:?}.json"), 1);
        let (_, some) = traced(layer, &format!("some-{layer:?}.json"), 4);
        assert!(validate(&some).is_empty());
        assert!(
            some.flows.len() < all.flows.len(),
            "{layer:?}: sampling 1 in 4 kept {} of {} arrows",
            some.flows.len(),
            all.flows.len()
        );
        assert!(!some.flows.is_empty());
        assert_eq!(some.dangling_flow_events, 0);
        // Entries are never sampled away.
        assert_eq!(token_slices(&some).len(), HOPS as usize + 1);
    }
}

#[test]
fn sim_traces_are_deterministic() {
    let write = |name: &str| {
        let (_, _) = traced(Layer::Sim, name, 1);
        std::fs::read(out_file(name)).expect("trace file")
    };
    assert_eq!(write("det-a.json"), write("det-b.json"));
}

#[test]
fn untraced_runs_write_nothing() {
    let report = run_ring(config(Layer::Threads, PES, ErrorPolicy::Abort));
    assert!(report.trace.is_none());
}

#[test]
fn unwritable_trace_is_a_clear_error() {
    // A path below a regular file can never be created.
    let blocker = out_file("not-a-directory");
    std::fs::write(&blocker, b"x").expect("blocker file");
    let target = blocker.join("trace.json");
    for layer in layers() {
        let mut cfg = config(layer, 2, ErrorPolicy::Abort);
        cfg.trace = Some(target.clone());
        let mut reg = Registry::new();
        reg.chare::<Ringer>("Ringer");
        let err = Runtime::new(reg, cfg)
            .run(|ctx| ctx.exit())
            .expect_err("no directory to write to");
        assert!(
            err.to_string().contains(&*target.to_string_lossy()),
            "{layer:?}: {err}"
        );
    }
}

/// An array element that moves one PE on per message, sending the next to itself.
#[derive(Serialize, Deserialize)]
struct Walker {
    left: u32,
}

impl Chare for Walker {
    type Init = u32;
    type Msg = ();
    fn create(left: u32, _: &mut Ctx) -> Self {
        Walker { left }
    }
    fn handle(&mut self, (): (), ctx: &mut Ctx) {
        if self.left == 0 {
            return ctx.exit();
        }
        self.left -= 1;
        let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
        ctx.migrate_me(next).expect("a valid move");
        let me: chorus_core::ArrayProxy<Walker, usize> = ctx.this_array().expect("an element");
        me.send(ctx, &0, ());
    }
}

impl chorus_core::Migratable for Walker {}

#[test]
fn migrations_are_traced_as_arrivals_with_arrows_from_the_old_pe() {
    for layer in layers() {
        let file = out_file(&format!("walk-{layer:?}.json"));
        let mut cfg = config(layer, PES, ErrorPolicy::Abort);
        cfg.trace = Some(file.clone());
        let mut reg = Registry::new();
        reg.migratable::<Walker>("Walker");
        Runtime::new(reg, cfg)
            .run(|ctx| {
                ctx.create_array_1d::<Walker>(1, HOPS, chorus_core::ArrayMap::Block)
                    .send(ctx, &0, ());
            })
            .expect("the walk runs");
        let trace = read_chrome(&file).expect("the trace parses back");
        let problems = validate(&trace);
        assert!(problems.is_empty(), "{layer:?}: {problems:?}");
        // One arrival per move, on the PE moved to: PE 1, 2, ... around the ring.
        let arrivals: Vec<u32> = trace
            .tracks
            .iter()
            .flat_map(|t| {
                t.slices
                    .iter()
                    .filter(|s| s.name == "chorus::migrate")
                    .map(move |s| (s.ts_ns, t.pe()))
            })
            .collect::<BTreeMap<_, _>>()
            .into_values()
            .collect();
        let want: Vec<u32> = (1..=HOPS).map(|k| k % PES).collect();
        assert_eq!(arrivals, want, "{layer:?}");
    }
}

#[test]
fn sim_entries_include_their_modelled_overhead() {
    // Remote messages cost the receiver o_recv + handler before the handler runs; the
    // entry's slice covers that cost instead of leaving it to idle.
    let file = out_file("overhead.json");
    let mut cfg = config(Layer::Sim, PES, ErrorPolicy::Abort);
    cfg.trace = Some(file.clone());
    cfg.sim.preset = Some(chorus_core::SimPreset::Ideal);
    cfg.sim.handler_us = Some(1.0);
    cfg.sim.recv_overhead_us = Some(0.5);
    let report = run_ring(cfg);
    // The writer may start a slice a few ns late to make room for arrows before it.
    let shift = report.trace.expect("traced").stats.max_shift_ns;
    assert!(shift < 100, "moved {shift} ns");
    let trace = read_chrome(&file).expect("the trace parses");
    let problems = validate(&trace);
    assert!(problems.is_empty(), "{problems:?}");
    let tokens: Vec<(u32, &chorus_traces::Slice)> = trace
        .tracks
        .iter()
        .flat_map(|t| {
            t.slices
                .iter()
                .filter(|s| s.name == "Ringer::Token")
                .map(move |s| (t.pe(), s))
        })
        .collect();
    assert_eq!(tokens.len(), HOPS as usize + 1);
    for (pe, s) in tokens {
        // A message to the PE itself costs the handler only.
        let src = s.arg_u64("src_pe");
        let want = if src == Some(u64::from(pe)) {
            1_000
        } else {
            1_500
        };
        assert!(
            s.dur_ns + shift >= want,
            "{} [{}, {}] from PE {src:?} lasts {} ns, less than its modelled {want} ns",
            s.name,
            s.ts_ns,
            s.end_ns(),
            s.dur_ns
        );
    }
}

#[test]
fn trace_pes_records_only_those_pes() {
    for layer in layers() {
        let file = out_file(&format!("subset-{layer:?}.json"));
        let mut cfg = config(layer, PES, ErrorPolicy::Abort);
        cfg.trace = Some(file.clone());
        cfg.trace_pes = Some("1..2,4".parse().expect("a PE list"));
        run_ring(cfg);
        let trace = read_chrome(&file).expect("the trace parses");
        let problems = validate(&trace);
        assert!(problems.is_empty(), "{layer:?}: {problems:?}");
        let pes: Vec<u32> = trace.tracks.iter().map(|t| t.pe()).collect();
        assert_eq!(pes, [1, 2, 4], "{layer:?}");
        // Every hop on a traced PE is there, and the arrows between traced PEs.
        let tokens = token_slices(&trace);
        let want = (0..=HOPS)
            .filter(|k| [1, 2, 4].contains(&(k % PES)))
            .count();
        assert_eq!(tokens.len(), want, "{layer:?}");
        assert!(
            trace
                .flows
                .iter()
                .any(|f| f.from.pe() == 1 && f.to.pe() == 2),
            "{layer:?}: the 1 -> 2 arrows"
        );
    }
}

#[test]
fn trace_window_records_only_that_span() {
    // The whole ring on sim, to find its span, then its middle third.
    let (_, whole) = traced(Layer::Sim, "window-all.json", 1);
    let tokens = token_slices(&whole);
    let (first, last) = (tokens[0].1, tokens[tokens.len() - 1].1);
    let (t0, t1) = (first + (last - first) / 3, first + 2 * (last - first) / 3);
    let file = out_file("window.json");
    let mut cfg = config(Layer::Sim, PES, ErrorPolicy::Abort);
    cfg.trace = Some(file.clone());
    cfg.trace_window = Some(format!("{t0}ns..{t1}ns").parse().expect("a window"));
    run_ring(cfg);
    let trace = read_chrome(&file).expect("the trace parses");
    let problems = validate(&trace);
    assert!(problems.is_empty(), "{problems:?}");
    let inside = token_slices(&trace);
    let want = tokens
        .iter()
        .filter(|&&(_, ts)| (t0..=t1).contains(&ts))
        .count();
    assert!(
        want > 5 && want < tokens.len() / 2,
        "{want} of {}",
        tokens.len()
    );
    assert_eq!(inside.len(), want);
    for t in &trace.tracks {
        for s in &t.slices {
            assert!(s.ts_ns >= t0, "{} at {} ns, before {t0}", s.name, s.ts_ns);
            // Slices end by the window's end, but for the writer's few ns of room.
            assert!(
                s.end_ns() <= t1 + 100,
                "{} ends at {} ns",
                s.name,
                s.end_ns()
            );
        }
    }
    assert!(!trace.flows.is_empty());
}

#[test]
fn a_perfetto_trace_path_writes_protobuf_with_the_same_events() {
    // The sim layer is deterministic, so both runs record the same events.
    let (_, json) = traced(Layer::Sim, "ring-same.json", 1);
    let (report, pf) = traced(Layer::Sim, "ring-same.perfetto-trace", 1);
    let file = report.trace.expect("traced").file;
    let head = std::fs::read(&file).expect("the trace exists");
    assert_eq!(head.first(), Some(&0x0a), "a TracePacket first, not JSON");
    assert_eq!(token_slices(&pf), token_slices(&json));
    assert_eq!(pf.flows.len(), json.flows.len());
    assert_eq!(summarize(&pf, 10), summarize(&json, 10));
}
