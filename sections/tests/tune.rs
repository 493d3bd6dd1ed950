//! The tuner: every mock-up returns exactly what its collective returns (random
//! inputs, section sizes 1..20, range sections and tree-only sections, on the sim
//! layer); profiles round-trip through their text; the dispatcher picks the right
//! implementation at range boundaries, and the tuned runtime runs it.

use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, Layer, Pe, RedData,
    Reducer, Registry, Runtime,
};
use chorus_sections::collectives::{
    Allgather, Alltoall, Collectives, Member, RangeMember, Topology, TreeMember,
};
use chorus_sections::kary;
use chorus_sections::range::RangeSection;
use chorus_sections::section::{Section, SectionId};
use chorus_sections::tune::measure::{measure, Case, Nrep};
use chorus_sections::tune::{Collective, Impl, MockUp, Profile, COLLECTIVES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

const WORLD: u32 = 24;

fn config(pes: u32) -> Config {
    Config {
        pes,
        layer: Layer::Sim,
        on_error: ErrorPolicy::Abort,
        ..Config::default()
    }
}

use chorus_core::mix64 as mix;

/// How the members of a case see their section.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Shape {
    Range(RangeSection),
    /// Members `pes` in rank order, knowing only their tree neighbours.
    Tree {
        id: SectionId,
        k: u32,
        pes: Vec<Pe>,
    },
}

impl Shape {
    fn size(&self) -> u32 {
        match self {
            Shape::Range(s) => s.size(),
            Shape::Tree { pes, .. } => pes.len() as u32,
        }
    }

    fn member(&self, pe: Pe) -> Option<Member> {
        match self {
            Shape::Range(s) => RangeMember::new(*s, pe).ok().map(Member::from),
            Shape::Tree { id, k, pes } => {
                let rank = pes.iter().position(|&p| p == pe)? as u32;
                let size = pes.len() as u32;
                let section = Section {
                    id: *id,
                    rank,
                    size,
                    k: *k,
                    parent: kary::parent(rank, *k).map(|p| pes[p as usize]),
                    children: kary::children(rank, size, *k)
                        .map(|c| pes[c as usize])
                        .collect(),
                };
                Some(TreeMember::new(section, pe).into())
            }
        }
    }
}

/// One mock-up against its collective on one section.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Probe {
    shape: Shape,
    mock_up: MockUp,
    reducer: Reducer,
    root: u32,
    seed: u64,
    /// Sinks base + 2 rank (default) and base + 2 rank + 1 (mock-up).
    base: usize,
}

impl Probe {
    fn value(&self, rank: u32) -> RedData {
        let r = u64::from(rank);
        let len = 1 + (mix(self.seed) % 5) as usize;
        // Gathers and allgathers take blocks of any length: vary them by rank.
        let len = match self.mock_up.collective() {
            Collective::Allgather | Collective::Gather => len + (rank % 3) as usize,
            _ => len,
        };
        let draw = |i: usize| mix(self.seed ^ (r << 32) ^ i as u64);
        match (self.reducer, self.seed % 2) {
            (Reducer::Or, _) => RedData::Bool((0..len).map(|i| draw(i) % 3 == 0).collect()),
            (Reducer::Min, _) => RedData::I64((0..len).map(|i| draw(i) as i64 % 1000).collect()),
            (Reducer::Sum, 1) => RedData::F64(
                (0..len)
                    .map(|i| {
                        let x = draw(i);
                        ((x % 1000) as f64 - 500.0) * 10f64.powi((x >> 40) as i32 % 30 - 15)
                    })
                    .collect(),
            ),
            _ => RedData::U64((0..len).map(draw).collect()),
        }
    }

    fn start(&self, ctx: &mut Ctx, coll: &Collectives, sinks: &Sinks) -> bool {
        let Some(member) = self.shape.member(ctx.my_pe()) else {
            return false;
        };
        let rank = member.rank();
        for (which, choice) in [Impl::Default, Impl::MockUp(self.mock_up)]
            .into_iter()
            .enumerate()
        {
            let at = self.base + 2 * rank as usize + which;
            let cb = Callback::array_element(&sinks.array, &at, sinks.got);
            let c = coll.pinned(choice);
            let (m, v) = (member.clone(), self.value(rank));
            let r = match self.mock_up.collective() {
                Collective::Allgather => c.allgather(ctx, m, v, Allgather::Auto, cb),
                Collective::Allreduce => c.allreduce(ctx, m, v, self.reducer, cb),
                Collective::Alltoall => {
                    // Blocks of different lengths: an alltoallv.
                    let blocks = (0..m.size())
                        .map(|j| self.value(rank * 64 + j + j % 2))
                        .collect();
                    c.alltoall(ctx, m, blocks, Alltoall::Auto, cb)
                }
                Collective::Gather => c.gather(ctx, m, self.root, v, cb),
                Collective::Reduce => c.reduce(ctx, m, self.root, v, self.reducer, cb),
                Collective::Scan => c.scan(ctx, m, v, self.reducer, cb),
            };
            r.unwrap_or_else(|e| panic!("starting {self:?}: {e}"));
        }
        true
    }
}

struct Sink;

#[derive(Clone, Serialize, Deserialize)]
enum SinkMsg {
    Got(RedData),
}

impl Chare for Sink {
    type Init = ();
    type Msg = SinkMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Sink
    }
    fn handle(&mut self, SinkMsg::Got(v): SinkMsg, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("a sink is an element");
        ctx.publish("got", &(i, v));
    }
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Sinks {
    array: ArrayProxy<Sink, usize>,
    got: Entry<Sink, RedData>,
}

#[derive(Clone, Serialize, Deserialize)]
struct Plan {
    probes: Vec<Probe>,
    coll: Collectives,
    sinks: Sinks,
}

struct Driver;

impl Chare for Driver {
    type Init = Plan;
    type Msg = ();
    fn create(plan: Plan, ctx: &mut Ctx) -> Self {
        for p in &plan.probes {
            p.start(ctx, &plan.coll, &plan.sinks);
        }
        Driver
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

fn probes() -> Vec<Probe> {
    let mut out = Vec::new();
    let mut base = 0;
    let mut i = 0u64;
    for size in 1..=20u32 {
        for c in COLLECTIVES {
            for mock_up in c.mock_ups() {
                i += 1;
                let seed = mix(i);
                let k = 2 + (seed % 3) as u32;
                // Alltoall needs a roster, which tree-only sections lack.
                let shape = if seed % 4 == 3 && c != Collective::Alltoall {
                    let mut pes: Vec<Pe> = (0..WORLD).collect();
                    for j in (1..pes.len()).rev() {
                        pes.swap(j, (mix(seed ^ j as u64) % (j as u64 + 1)) as usize);
                    }
                    pes.truncate(size as usize);
                    let id = SectionId::created(pes[0], i as u32, size);
                    Shape::Tree { id, k, pes }
                } else {
                    let stride = if 2 * size <= WORLD {
                        1 + (seed % 2) as u32
                    } else {
                        1
                    };
                    let first = (seed >> 8) as u32 % (WORLD - (size - 1) * stride);
                    let w = RangeSection::world(WORLD, k).unwrap();
                    Shape::Range(w.split(first, first + (size - 1) * stride, stride).unwrap())
                };
                let reducer = match c {
                    Collective::Allgather | Collective::Gather | Collective::Alltoall => {
                        Reducer::Concat
                    }
                    _ => [Reducer::Sum, Reducer::Min, Reducer::Or][(seed >> 20) as usize % 3],
                };
                out.push(Probe {
                    shape,
                    mock_up,
                    reducer,
                    root: (seed >> 30) as u32 % size,
                    seed,
                    base,
                });
                base += 2 * size as usize;
            }
        }
    }
    out
}

#[test]
fn every_mock_up_returns_what_its_collective_returns() {
    let probes = probes();
    let sinks_len: usize = probes.iter().map(|p| 2 * p.shape.size() as usize).sum();
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Sink>("sink").chare::<Driver>("driver");
    let got = reg.entry::<Sink, RedData>("got", SinkMsg::Got);
    let plan_probes = probes.clone();
    let report = Runtime::new(reg, config(WORLD))
        .run(move |ctx| {
            let coll = Collectives::create(ctx);
            let array = ctx.create_array_1d::<Sink>(sinks_len, (), ArrayMap::RoundRobin);
            let sinks = Sinks { array, got };
            ctx.create_group::<Driver>(Plan {
                probes: plan_probes,
                coll,
                sinks,
            });
            ctx.exit_on_quiescence();
        })
        .expect("the probes run");
    let results: BTreeMap<usize, RedData> =
        report.outputs("got").into_iter().map(|x| x.1).collect();
    let mut compared = 0;
    for p in &probes {
        let n = p.shape.size();
        for r in 0..n {
            let at = p.base + 2 * r as usize;
            let (default, mock) = (results.get(&at), results.get(&(at + 1)));
            assert_eq!(mock, default, "rank {r} of {p:?}");
            let rooted = p.mock_up.collective().rooted();
            assert_eq!(
                default.is_some(),
                !rooted || r == p.root,
                "rank {r} of {p:?}"
            );
            compared += usize::from(default.is_some());
        }
    }
    assert!(compared > 1000, "only {compared} results compared");
}

#[test]
fn profiles_round_trip_and_bad_ones_are_refused() {
    let mut p = Profile::new();
    let bruck = Impl::MockUp(MockUp::AllgatherBy(Allgather::Bruck(1)));
    let ring = Impl::MockUp(MockUp::AllgatherBy(Allgather::Ring));
    p.set(
        Collective::Allgather,
        8,
        &[(8, bruck), (64, bruck), (512, Impl::Default), (4096, ring)],
    );
    p.set(Collective::Allgather, 1024, &[(8, Impl::Default)]);
    p.set(
        Collective::Scan,
        8,
        &[
            (8, Impl::Default),
            (64, Impl::MockUp(MockUp::ExscanReduceLocal)),
        ],
    );
    p.set(
        Collective::Reduce,
        8,
        &[(8, Impl::MockUp(MockUp::ReduceAsAllreduce))],
    );
    let text = p.to_text();
    assert!(
        text.contains("allgather        8  0..512           bruck/1"),
        "{text}"
    );
    assert_eq!(Profile::parse(&text).unwrap(), p);
    let dir = std::env::temp_dir().join(format!("chorus-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("profile.txt");
    p.save(&file).unwrap();
    assert_eq!(Profile::load(&file).unwrap(), p);
    std::fs::remove_dir_all(&dir).unwrap();
    for bad in [
        "allgather 8 0..64 bruck/1", // the last range must be open
        "allgather 8 8.. default",   // must start at 0
        "allgather 8 0..64 default\nallgather 8 65.. ring", // a gap
        "allgather 8 0.. reduce+broadcast", // not an allgather mock-up
        "allscatter 8 0.. default",
        "allgather 0 0.. default",
        "allgather 8 0..",
    ] {
        assert!(Profile::parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn the_dispatcher_picks_by_range_at_the_boundaries() {
    let mut p = Profile::new();
    let m = |x| Impl::MockUp(x);
    let choices = [
        (8, m(MockUp::ReduceBroadcast)),
        (64, Impl::Default),
        (512, m(MockUp::AllgatherReduceLocal)),
        (4096, m(MockUp::ReduceBroadcast)),
    ];
    p.set(Collective::Allreduce, 16, &choices);
    let at = |b| p.choose(Collective::Allreduce, 16, b);
    assert_eq!(at(0), m(MockUp::ReduceBroadcast));
    assert_eq!(at(63), m(MockUp::ReduceBroadcast));
    assert_eq!(at(64), Impl::Default);
    assert_eq!(at(511), Impl::Default);
    assert_eq!(at(512), m(MockUp::AllgatherReduceLocal));
    assert_eq!(at(4095), m(MockUp::AllgatherReduceLocal));
    assert_eq!(at(4096), m(MockUp::ReduceBroadcast));
    assert_eq!(at(u64::MAX), m(MockUp::ReduceBroadcast));
    assert_eq!(p.ranges(Collective::Allreduce, 16).unwrap().len(), 4);
    // Another section size or collective: the default.
    assert_eq!(p.choose(Collective::Allreduce, 15, 600), Impl::Default);
    assert_eq!(p.choose(Collective::Reduce, 16, 600), Impl::Default);
}

#[test]
fn the_tuned_runtime_runs_the_profiles_choice() {
    // On sim, times are deterministic: a tuned call takes exactly as long as the
    // implementation the profile names for its message size.
    let pes = 16;
    let local = Impl::MockUp(MockUp::AllgatherReduceLocal);
    let mut p = Profile::new();
    p.set(
        Collective::Allreduce,
        pes,
        &[(8, local), (256, Impl::Default)],
    );
    let mut cases = Vec::new();
    for bytes in [8, 248, 256, 1024] {
        for choice in [None, Some(Impl::Default), Some(local)] {
            cases.push(Case {
                collective: Collective::Allreduce,
                choice,
                bytes,
            });
        }
    }
    let nrep = Nrep {
        warmup: 1,
        min: 3,
        max: 3,
        rse: 0.0,
    };
    let samples = measure(&config(pes), &cases, nrep, Some(Arc::new(p))).unwrap();
    assert_eq!(samples.len(), cases.len());
    for s in samples.chunks(3) {
        let (tuned, default, mock) = (&s[0].us, &s[1].us, &s[2].us);
        assert_eq!(tuned.len(), 3);
        assert_ne!(
            default, mock,
            "the two implementations take different times"
        );
        let want = if s[0].case.bytes < 256 { mock } else { default };
        assert_eq!(tuned, want, "{:?}", s[0].case);
    }
}
