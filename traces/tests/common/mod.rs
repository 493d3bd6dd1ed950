//! A deterministic message-driven run, simulated without the runtime, and what its
//! trace must contain (computed from the simulation, not from the trace).
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::PathBuf;
use std::sync::Arc;

use chorus_traces::{Collector, NameId, Names, Recorder, TraceConfig};

/// One recorder call.
#[derive(Clone, Debug)]
pub enum Op {
    EntryBegin {
        ts: u64,
        name: NameId,
        src: u32,
        bytes: u64,
        msg: Option<u64>,
    },
    EntryEnd(u64),
    Send {
        ts: u64,
        msg: u64,
        dst: u32,
        bytes: u64,
    },
    IdleBegin(u64),
    IdleEnd(u64),
    User(u64, NameId),
    SpanBegin(u64, NameId),
    SpanEnd(u64),
    Phase {
        ts: u64,
        dur: u64,
        name: NameId,
        args: Vec<(&'static str, u64)>,
    },
}

/// Figures the trace summary must reproduce.
#[derive(Debug, Default)]
pub struct Expected {
    pub busy: Vec<u64>,
    pub idle: Vec<u64>,
    pub entry_count: BTreeMap<String, u64>,
    pub entry_total: BTreeMap<String, u64>,
    pub entry_bytes: BTreeMap<String, u64>,
    pub matrix: BTreeMap<(u32, u32), (u64, u64)>,
    /// Ids of messages both sent and received (candidates for flows).
    pub delivered: Vec<u64>,
    pub user_events: u64,
    pub spans: u64,
    pub phases: u64,
}

pub struct Scenario {
    pub pes: u32,
    pub ops: Vec<Vec<Op>>,
    pub names: Arc<Names>,
    pub expected: Expected,
}

/// xorshift64*: a fixed, seedable generator so every run is the same.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Msg {
    arrive: u64,
    src: u32,
    dst: u32,
    id: u64,
    bytes: u64,
    entry: usize,
}

/// Main on PE 0 sends one message to every PE (outside any entry); each entry runs a
/// while, may open nested spans, emit user events and send 1-2 messages, until
/// `budget` messages have been sent. PEs idle between messages.
pub fn scenario(pes: u32, budget: u64, seed: u64) -> Scenario {
    let names = Arc::new(Names::new());
    let entry_names: Vec<NameId> = ["Worker::go", "Worker::step", "Reducer::add", "Main::done"]
        .iter()
        .map(|n| names.intern(n))
        .collect();
    let span_outer = names.intern("compute");
    let span_inner = names.intern("kernel");
    let user = names.intern("checkpoint");
    let phase = names.intern("section create");
    let mut rng = Rng::new(seed);
    let mut ops: Vec<Vec<Op>> = (0..pes).map(|_| Vec::new()).collect();
    let mut exp = Expected {
        busy: vec![0; pes as usize],
        idle: vec![0; pes as usize],
        ..Expected::default()
    };
    let mut clock = vec![0u64; pes as usize];
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut msgs: BTreeMap<u64, Msg> = BTreeMap::new();
    let mut next_id = 1u64;
    let mut sent = 0u64;

    // Main's bare sends, 10 ns apart, before any entry runs.
    for dst in 0..pes {
        let ts = 10 * u64::from(dst);
        let id = next_id << 8 | 0xAB; // ids with constant low bits, as a runtime might make
        next_id += 1;
        let bytes = 32;
        ops[0].push(Op::Send {
            ts,
            msg: id,
            dst,
            bytes,
        });
        msgs.insert(
            id,
            Msg {
                arrive: ts + 500 + rng.below(500),
                src: 0,
                dst,
                id,
                bytes,
                entry: 0,
            },
        );
        heap.push(Reverse((msgs[&id].arrive, id)));
        sent += 1;
    }
    clock[0] = 10 * u64::from(pes);

    while let Some(Reverse((_, id))) = heap.pop() {
        let m = msgs.remove(&id).expect("queued message");
        let pe = m.dst as usize;
        let p = &mut ops[pe];
        let mut t = clock[pe];
        if m.arrive > t {
            if t > 0 {
                p.push(Op::IdleBegin(t));
                p.push(Op::IdleEnd(m.arrive));
                exp.idle[pe] += m.arrive - t;
            }
            t = m.arrive;
        }
        let begin = t;
        let name = entry_names[m.entry];
        let name_s = names.get(name).unwrap();
        p.push(Op::EntryBegin {
            ts: begin,
            name,
            src: m.src,
            bytes: m.bytes,
            msg: Some(m.id),
        });
        exp.delivered.push(m.id);
        t += 50 + rng.below(200);
        if rng.below(3) == 0 {
            p.push(Op::SpanBegin(t, span_outer));
            t += 20;
            p.push(Op::SpanBegin(t, span_inner));
            t += 30 + rng.below(50);
            p.push(Op::SpanEnd(t));
            t += 10;
            p.push(Op::SpanEnd(t));
            exp.spans += 2;
            t += 5;
        }
        if rng.below(5) == 0 {
            p.push(Op::User(t, user));
            exp.user_events += 1;
            t += 5;
        }
        if rng.below(7) == 0 {
            // A phase inside the entry, reported before the entry ends.
            p.push(Op::Phase {
                ts: begin + 1,
                dur: t - begin - 1,
                name: phase,
                args: vec![("members", 8), ("depth", 3)],
            });
            exp.phases += 1;
        }
        let sends = if sent < budget { 1 + rng.below(2) } else { 0 };
        for _ in 0..sends {
            t += 10 + rng.below(40);
            let dst = rng.below(u64::from(pes)) as u32;
            let id = next_id << 8 | 0xAB;
            next_id += 1;
            let bytes = 8 * (1 + rng.below(64));
            p.push(Op::Send {
                ts: t,
                msg: id,
                dst,
                bytes,
            });
            let arrive = t + 100 + rng.below(2_000);
            msgs.insert(
                id,
                Msg {
                    arrive,
                    src: pe as u32,
                    dst,
                    id,
                    bytes,
                    entry: 1 + rng.below(3) as usize,
                },
            );
            heap.push(Reverse((arrive, id)));
            sent += 1;
        }
        t += 20 + rng.below(100);
        p.push(Op::EntryEnd(t));
        clock[pe] = t;
        exp.busy[pe] += t - begin;
        *exp.entry_count.entry(name_s.clone()).or_default() += 1;
        *exp.entry_total.entry(name_s.clone()).or_default() += t - begin;
        *exp.entry_bytes.entry(name_s).or_default() += m.bytes;
        let cell = exp.matrix.entry((m.src, m.dst)).or_default();
        cell.0 += 1;
        cell.1 += m.bytes;
    }
    Scenario {
        pes,
        ops,
        names,
        expected: exp,
    }
}

/// Plays one PE's ops into its recorder.
pub fn play(r: &mut Recorder, ops: &[Op]) {
    for op in ops {
        match op {
            Op::EntryBegin {
                ts,
                name,
                src,
                bytes,
                msg,
            } => r.entry_begin(*ts, *name, *src, *bytes, *msg),
            Op::EntryEnd(ts) => r.entry_end(*ts),
            Op::Send {
                ts,
                msg,
                dst,
                bytes,
            } => r.send(*ts, *msg, *dst, *bytes),
            Op::IdleBegin(ts) => r.idle_begin(*ts),
            Op::IdleEnd(ts) => r.idle_end(*ts),
            Op::User(ts, n) => r.user_event(*ts, *n),
            Op::SpanBegin(ts, n) => r.span_begin(*ts, *n),
            Op::SpanEnd(ts) => r.span_end(*ts),
            Op::Phase {
                ts,
                dur,
                name,
                args,
            } => r.phase(*ts, *dur, *name, args),
        }
    }
}

/// Records the scenario with one thread per PE (pid = PE / 4, like 4 PEs per node).
pub fn record(s: &Scenario, config: TraceConfig) -> Arc<Collector> {
    let sink = Arc::new(Collector::new(config).expect("collector"));
    std::thread::scope(|scope| {
        for (pe, ops) in s.ops.iter().enumerate() {
            let sink = sink.clone();
            scope.spawn(move || {
                let mut r = Recorder::new(pe as u32, pe as u32 / 4, sink);
                play(&mut r, ops);
                r.finish();
            });
        }
    });
    sink
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("chorus-traces")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
