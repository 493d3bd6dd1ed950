//! Differential tests of the section collectives on the runtime: every collective on
//! range sections (stride 1 and more, nested) and on algorithm-style sections (members
//! in a shuffled PE order, with and without a roster) of sizes 1..20, element counts
//! 0, 1, 2^k and 2^k±1, against a sequential computation — the RBC test-suite pattern
//! — on the threads and sim layers. All cases of a run are started at once, so every
//! run also has many collectives in flight on one section and on overlapping ones.

use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, GroupProxy, Layer, Pe,
    RedData, Reducer, Registry, Runtime, RuntimeError,
};
use chorus_sections::collectives::{
    Allgather, CollectiveError, Collectives, Member, PerMember, RangeMember, Topology, TreeMember,
    REPORTER,
};
use chorus_sections::kary;
use chorus_sections::range::RangeSection;
use chorus_sections::section::{Section, SectionId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The machine layers the tests run on (as chorus-tests' `layers()`).
fn layers() -> Vec<Layer> {
    vec![Layer::Threads, Layer::Sim]
}

fn config(layer: Layer, pes: u32) -> Config {
    Config {
        pes,
        layer,
        on_error: ErrorPolicy::Abort,
        ..Config::default()
    }
}

use chorus_core::mix64 as mix;

/// Element type and reducer of a reduction case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Kind {
    U64Sum,
    I64Min,
    F64Sum,
    BoolOr,
    U64Xor,
    F64Max,
    I64Product,
    U64Concat,
}

const KINDS: [Kind; 8] = [
    Kind::U64Sum,
    Kind::I64Min,
    Kind::F64Sum,
    Kind::BoolOr,
    Kind::U64Xor,
    Kind::F64Max,
    Kind::I64Product,
    Kind::U64Concat,
];

impl Kind {
    fn reducer(self) -> Reducer {
        match self {
            Kind::U64Sum => Reducer::Sum,
            Kind::I64Min => Reducer::Min,
            Kind::F64Sum => Reducer::Sum,
            Kind::BoolOr => Reducer::Or,
            Kind::U64Xor => Reducer::BitXor,
            Kind::F64Max => Reducer::Max,
            Kind::I64Product => Reducer::Product,
            Kind::U64Concat => Reducer::Concat,
        }
    }

    /// A member's value: `count` elements drawn from `seed`. Float magnitudes vary
    /// widely so that any other summation order gives another result.
    fn value(self, seed: u64, count: u32) -> RedData {
        let draws = (0..u64::from(count)).map(|i| mix(seed.wrapping_mul(1000).wrapping_add(i)));
        match self {
            Kind::U64Sum | Kind::U64Xor | Kind::U64Concat => RedData::U64(draws.collect()),
            Kind::I64Min => RedData::I64(draws.map(|x| (x % 2001) as i64 - 1000).collect()),
            Kind::I64Product => RedData::I64(draws.map(|x| (x % 7) as i64 - 3).collect()),
            Kind::F64Sum | Kind::F64Max => RedData::F64(
                draws
                    .map(|x| {
                        let m = (x % 1000) as f64 / 7.0 - 70.0;
                        m * 10f64.powi(((x >> 20) % 33) as i32 - 16)
                    })
                    .collect(),
            ),
            Kind::BoolOr => RedData::Bool(draws.map(|x| x % 5 == 0).collect()),
        }
    }

    /// a ⊕ b, computed directly on typed vectors.
    fn combine(self, a: &RedData, b: &RedData) -> RedData {
        use RedData::*;
        match (self, a, b) {
            (Kind::U64Sum, U64(a), U64(b)) => {
                U64(a.iter().zip(b).map(|(x, y)| x.wrapping_add(*y)).collect())
            }
            (Kind::U64Xor, U64(a), U64(b)) => U64(a.iter().zip(b).map(|(x, y)| x ^ y).collect()),
            (Kind::U64Concat, U64(a), U64(b)) => U64(a.iter().chain(b).copied().collect()),
            (Kind::I64Min, I64(a), I64(b)) => {
                I64(a.iter().zip(b).map(|(x, y)| *x.min(y)).collect())
            }
            (Kind::I64Product, I64(a), I64(b)) => {
                I64(a.iter().zip(b).map(|(x, y)| x.wrapping_mul(*y)).collect())
            }
            (Kind::F64Sum, F64(a), F64(b)) => F64(a.iter().zip(b).map(|(x, y)| x + y).collect()),
            (Kind::F64Max, F64(a), F64(b)) => {
                F64(a.iter().zip(b).map(|(x, y)| x.max(*y)).collect())
            }
            (Kind::BoolOr, Bool(a), Bool(b)) => {
                Bool(a.iter().zip(b).map(|(x, y)| *x || *y).collect())
            }
            _ => unreachable!("{self:?} on {a:?}, {b:?}"),
        }
    }

    /// The exclusive prefix of rank 0: the identity, `count` long.
    fn identity(self, count: u32) -> RedData {
        let n = count as usize;
        match self {
            Kind::U64Sum | Kind::U64Xor => RedData::U64(vec![0; n]),
            Kind::U64Concat => RedData::U64(Vec::new()),
            Kind::I64Min => RedData::I64(vec![i64::MAX; n]),
            Kind::I64Product => RedData::I64(vec![1; n]),
            Kind::F64Sum => RedData::F64(vec![0.0; n]),
            Kind::F64Max => RedData::F64(vec![f64::NEG_INFINITY; n]),
            Kind::BoolOr => RedData::Bool(vec![false; n]),
        }
    }
}

/// A collective under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Coll {
    Broadcast,
    Reduce(Kind),
    Allreduce(Kind),
    Barrier,
    Scan(Kind),
    Exscan(Kind),
    Gather,
    Gatherv,
    Allgather(Allgather),
}

/// How the members of a case see their section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    /// A range section.
    Range(RangeSection),
    /// A section as a creation algorithm leaves it: members `roster` (rank order),
    /// a k-ary tree, and the roster itself only when `shared`.
    Tree {
        id: SectionId,
        k: u32,
        roster: Vec<Pe>,
        shared: bool,
    },
}

impl Shape {
    fn size(&self) -> u32 {
        match self {
            Shape::Range(s) => s.size(),
            Shape::Tree { roster, .. } => roster.len() as u32,
        }
    }

    fn member_pe(&self, rank: u32) -> Pe {
        match self {
            Shape::Range(s) => s.pe(rank).expect("a rank of the range"),
            Shape::Tree { roster, .. } => roster[rank as usize],
        }
    }

    fn member(&self, pe: Pe) -> Option<Member> {
        match self {
            Shape::Range(s) => RangeMember::new(*s, pe).ok().map(Member::from),
            Shape::Tree {
                id,
                k,
                roster,
                shared,
            } => {
                let rank = roster.iter().position(|&p| p == pe)? as u32;
                let size = roster.len() as u32;
                let section = Section {
                    id: *id,
                    rank,
                    size,
                    k: *k,
                    parent: kary::parent(rank, *k).map(|p| roster[p as usize]),
                    children: kary::children(rank, size, *k)
                        .map(|c| roster[c as usize])
                        .collect(),
                };
                Some(if *shared {
                    TreeMember::with_roster(section, pe, roster.clone())
                        .expect("a consistent roster")
                        .into()
                } else {
                    TreeMember::new(section, pe).into()
                })
            }
        }
    }
}

/// One collective of a run, with the sink elements `base..base+size` for its results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Case {
    shape: Shape,
    coll: Coll,
    count: u32,
    root: u32,
    seed: u64,
    base: usize,
}

impl Case {
    fn value(&self, rank: u32) -> RedData {
        let seed = self.seed ^ (u64::from(rank) << 40);
        match self.coll {
            Coll::Reduce(k) | Coll::Allreduce(k) | Coll::Scan(k) | Coll::Exscan(k) => {
                k.value(seed, self.count)
            }
            Coll::Gatherv => Kind::U64Sum.value(seed, self.count + rank % 3),
            Coll::Allgather(_) if self.seed % 2 == 1 => Kind::I64Min.value(seed, self.count),
            _ => Kind::U64Sum.value(seed, self.count),
        }
    }

    /// What each rank's callback must receive (None: nothing).
    fn expected(&self) -> Vec<Option<RedData>> {
        let n = self.shape.size();
        let vals: Vec<RedData> = (0..n).map(|r| self.value(r)).collect();
        let fold = |k: Kind, upto: usize| {
            let mut acc = vals[0].clone();
            for v in &vals[1..upto] {
                acc = k.combine(&acc, v);
            }
            acc
        };
        let concat = || {
            let mut acc = vals[0].clone();
            for v in &vals[1..] {
                acc = Kind::U64Concat.combine(&acc, v);
            }
            acc
        };
        let at_root = |v: RedData| {
            (0..n)
                .map(|r| (r == self.root).then(|| v.clone()))
                .collect()
        };
        let everywhere = |v: RedData| vec![Some(v); n as usize];
        match self.coll {
            Coll::Broadcast => everywhere(vals[self.root as usize].clone()),
            Coll::Reduce(k) => at_root(fold(k, n as usize)),
            Coll::Allreduce(k) => everywhere(fold(k, n as usize)),
            Coll::Barrier => everywhere(RedData::List(Vec::new())),
            Coll::Scan(k) => (1..=n as usize).map(|r| Some(fold(k, r))).collect(),
            Coll::Exscan(k) => (0..n as usize)
                .map(|r| {
                    Some(if r == 0 {
                        k.identity(self.count)
                    } else {
                        fold(k, r)
                    })
                })
                .collect(),
            Coll::Gather => at_root(match vals[0] {
                RedData::I64(_) => {
                    let mut acc = Vec::new();
                    for v in &vals {
                        if let RedData::I64(x) = v {
                            acc.extend(x);
                        }
                    }
                    RedData::I64(acc)
                }
                _ => concat(),
            }),
            Coll::Gatherv => at_root(RedData::List(vals.clone())),
            Coll::Allgather(_) => everywhere(match vals[0] {
                RedData::I64(_) => RedData::I64(
                    vals.iter()
                        .flat_map(|v| match v {
                            RedData::I64(x) => x.clone(),
                            _ => unreachable!(),
                        })
                        .collect(),
                ),
                _ => concat(),
            }),
        }
    }

    /// Start this case's collective for the member on `pe`, if it is one.
    fn start(&self, ctx: &mut Ctx, coll: &Collectives, sink: &Sinks) -> bool {
        let Some(member) = self.shape.member(ctx.my_pe()) else {
            return false;
        };
        let rank = member.rank();
        let cb = Callback::array_element(&sink.array, &(self.base + rank as usize), sink.got);
        let v = self.value(rank);
        let r = match self.coll {
            Coll::Broadcast => {
                let v = (rank == self.root).then_some(v);
                coll.broadcast(ctx, member, self.root, v, cb)
            }
            Coll::Reduce(k) => coll.reduce(ctx, member, self.root, v, k.reducer(), cb),
            Coll::Allreduce(k) => coll.allreduce(ctx, member, v, k.reducer(), cb),
            Coll::Barrier => coll.barrier(ctx, member, cb),
            Coll::Scan(k) => coll.scan(ctx, member, v, k.reducer(), cb),
            Coll::Exscan(k) => coll.exscan(ctx, member, v, k.reducer(), cb),
            Coll::Gather => coll.gather(ctx, member, self.root, v, cb),
            Coll::Gatherv => coll.gatherv(ctx, member, self.root, v, cb),
            Coll::Allgather(a) => coll.allgather(ctx, member, v, a, cb),
        };
        r.unwrap_or_else(|e| panic!("starting {self:?}: {e}"));
        true
    }
}

/// Receives one result of one member of one case.
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
        let i = ctx
            .this_index::<usize>()
            .expect("a sink is an array element");
        ctx.publish("got", &(i, v));
        let t = ctx.now();
        ctx.publish("t", &t);
    }
}

/// Where results go.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Sinks {
    array: ArrayProxy<Sink, usize>,
    got: Entry<Sink, RedData>,
}

/// A run's plan, as every driver gets it.
#[derive(Clone, Serialize, Deserialize)]
struct Plan {
    cases: Vec<Case>,
    coll: Collectives,
    sinks: Sinks,
    /// Members on PEs `p` with `p % stagger.0 == stagger.1` compute this long first, so
    /// their peers' messages arrive before their start.
    stagger: (u32, u32, Duration),
}

/// One per PE: starts its members' collectives, in plan order.
struct Driver;

impl Chare for Driver {
    type Init = Plan;
    type Msg = ();
    fn create(plan: Plan, ctx: &mut Ctx) -> Self {
        let (m, r, d) = plan.stagger;
        if m > 0 && ctx.my_pe() % m == r {
            ctx.work(d);
        }
        let started = plan
            .cases
            .iter()
            .filter(|c| c.start(ctx, &plan.coll, &plan.sinks))
            .count();
        ctx.publish("started", &started);
        Driver
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

fn registry() -> (Registry, Entry<Sink, RedData>) {
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Sink>("sink").chare::<Driver>("driver");
    let got = reg.entry::<Sink, RedData>("got", SinkMsg::Got);
    (reg, got)
}

/// Run `cases` on `pes` PEs of `layer`, check every result against the sequential
/// computation, and return the wall time.
fn run(layer: Layer, pes: u32, cases: Vec<Case>, stagger: (u32, u32, Duration)) -> Duration {
    run_timed(layer, pes, cases, stagger).0
}

/// As `run`, also returning the layer's clock when the last result arrived (virtual
/// time on sim).
fn run_timed(
    layer: Layer,
    pes: u32,
    mut cases: Vec<Case>,
    stagger: (u32, u32, Duration),
) -> (Duration, f64) {
    let mut base = 0;
    for c in &mut cases {
        c.base = base;
        base += c.shape.size() as usize;
    }
    let (reg, got) = registry();
    let plan_cases = cases.clone();
    let t = Instant::now();
    let report = Runtime::new(reg, config(layer, pes))
        .run(move |ctx| {
            let coll = Collectives::create(ctx);
            let array = ctx.create_array_1d::<Sink>(base.max(1), (), ArrayMap::RoundRobin);
            let plan = Plan {
                cases: plan_cases,
                coll,
                sinks: Sinks { array, got },
                stagger,
            };
            ctx.create_group::<Driver>(plan);
            ctx.exit_on_quiescence();
        })
        .unwrap_or_else(|e| panic!("{layer:?}: {e}"));
    let elapsed = t.elapsed();
    let mut results: BTreeMap<usize, RedData> = BTreeMap::new();
    for (_, (i, v)) in report.outputs::<(usize, RedData)>("got") {
        assert!(
            results.insert(i, v).is_none(),
            "{layer:?}: result {i} twice"
        );
    }
    for c in &cases {
        let want = c.expected();
        for (r, w) in want.into_iter().enumerate() {
            let got = results.remove(&(c.base + r));
            assert_eq!(got, w, "{layer:?} on {pes} PEs: rank {r} of {c:?}");
        }
    }
    assert!(results.is_empty(), "{layer:?}: results nobody expected");
    let started: usize = report.outputs::<usize>("started").iter().map(|x| x.1).sum();
    assert_eq!(started, base, "{layer:?}: every member started");
    let last = report
        .outputs::<f64>("t")
        .iter()
        .map(|x| x.1)
        .fold(0.0, f64::max);
    (elapsed, last)
}

/// Element counts: 0, 1, 2^k and 2^k±1.
const COUNTS: [u32; 12] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17];

/// A range section of `size` members out of `world` PEs, of the variety `v`: plain,
/// strided, nested (a range of a range), or from the top.
fn range_of(world: u32, size: u32, k: u32, v: u64) -> RangeSection {
    let w = RangeSection::world(world, k).unwrap();
    match v % 4 {
        0 => w.split(0, size - 1, 1).unwrap(),
        1 => {
            // Stride 2 from PE 1 where it fits, else as far right as it fits.
            let first = u32::from(size < world);
            let stride = if first + 2 * (size - 1) < world { 2 } else { 1 };
            w.split(first, first + (size - 1) * stride, stride).unwrap()
        }
        2 => {
            // A nested range: the odd PEs, then a strided range of those.
            let odd = w.split(1, world - 1, 2).unwrap();
            if size * 2 <= odd.size() {
                odd.split(0, 2 * (size - 1), 2).unwrap()
            } else if size <= odd.size() {
                odd.split(odd.size() - size, odd.size() - 1, 1).unwrap()
            } else {
                // Too few odd PEs: a range of a range of the world instead.
                let top = w.split(world - size, world - 1, 1).unwrap();
                top.split(0, size - 1, 1).unwrap()
            }
        }
        _ => w.split(world - size, world - 1, 1).unwrap(),
    }
}

/// Shuffle of `world` PEs' first `size` as an algorithm section's ranks.
fn tree_of(world: u32, size: u32, k: u32, seed: u64, shared: bool) -> Shape {
    let mut pes: Vec<Pe> = (0..world).collect();
    for i in (1..pes.len()).rev() {
        let j = (mix(seed ^ i as u64) % (i as u64 + 1)) as usize;
        pes.swap(i, j);
    }
    pes.truncate(size as usize);
    Shape::Tree {
        id: SectionId::created(pes[0], seed as u32, size),
        k,
        roster: pes,
        shared,
    }
}

fn all_colls(i: u64) -> Vec<Coll> {
    let kind = |j: u64| KINDS[((i + j) % KINDS.len() as u64) as usize];
    let mut v = vec![
        Coll::Broadcast,
        Coll::Reduce(kind(0)),
        Coll::Allreduce(kind(1)),
        Coll::Barrier,
        Coll::Scan(kind(2)),
        Coll::Exscan(kind(3)),
        Coll::Gather,
        Coll::Gatherv,
        Coll::Allgather(Allgather::Auto),
        Coll::Allgather(Allgather::Tree),
    ];
    let a = [
        Allgather::Bruck(1),
        Allgather::Bruck(2),
        Allgather::Bruck(3),
        Allgather::StandardExchange(1),
        Allgather::StandardExchange(2),
        Allgather::StandardExchange(3),
        Allgather::Ring,
    ];
    v.extend(a.iter().map(|&a| Coll::Allgather(a)));
    v
}

fn needs_roster(c: Coll) -> bool {
    matches!(
        c,
        Coll::Allgather(Allgather::Bruck(_) | Allgather::StandardExchange(_) | Allgather::Ring)
    )
}

/// Every collective on range sections of sizes 1..=20 with every element count.
fn range_sweep(world: u32, sizes: impl Iterator<Item = u32>, counts: &[u32]) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut i = 0u64;
    for size in sizes {
        for coll in all_colls(u64::from(size)) {
            for &count in counts {
                i += 1;
                let k = 2 + (i % 3) as u32;
                cases.push(Case {
                    shape: Shape::Range(range_of(world, size, k, i)),
                    coll,
                    count,
                    root: (mix(i) % u64::from(size)) as u32,
                    seed: mix(i ^ 0xabc),
                    base: 0,
                });
            }
        }
    }
    cases
}

/// Every collective on algorithm-style sections, half with a roster.
fn tree_sweep(world: u32, sizes: impl Iterator<Item = u32>, counts: &[u32]) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut i = 0u64;
    for size in sizes {
        for coll in all_colls(u64::from(size)) {
            for &count in counts {
                i += 1;
                let shared = needs_roster(coll) || i.is_multiple_of(2);
                let k = 2 + (i % 4) as u32;
                cases.push(Case {
                    shape: tree_of(world, size, k, mix(i ^ 0x5eed), shared),
                    coll,
                    count,
                    root: (mix(i ^ 7) % u64::from(size)) as u32,
                    seed: mix(i ^ 0xdef),
                    base: 0,
                });
            }
        }
    }
    cases
}

const NO_STAGGER: (u32, u32, Duration) = (0, 0, Duration::ZERO);

#[test]
fn every_collective_on_range_sections_of_1_to_20_matches_the_sequential_result_on_sim() {
    let t = run(Layer::Sim, 41, range_sweep(41, 1..=20, &COUNTS), NO_STAGGER);
    eprintln!("range sweep on sim: {t:?}");
}

#[test]
fn every_collective_on_algorithm_sections_of_1_to_20_matches_the_sequential_result_on_sim() {
    let t = run(Layer::Sim, 29, tree_sweep(29, 1..=20, &COUNTS), NO_STAGGER);
    eprintln!("tree sweep on sim: {t:?}");
}

#[test]
fn every_collective_matches_the_sequential_result_on_threads() {
    let counts = [0, 1, 8, 9];
    let mut cases = range_sweep(20, 1..=20, &counts);
    cases.extend(tree_sweep(20, [1, 2, 3, 5, 8, 13, 20].into_iter(), &[1, 7]));
    let t = run(Layer::Threads, 20, cases, NO_STAGGER);
    eprintln!("sweep on threads: {t:?}");
}

/// The janus case: two range sections overlapping in one PE, each with several
/// collectives in flight at once, and the shared PE starting late so that messages of
/// both sections wait for it.
#[test]
fn overlapping_ranges_sharing_a_pe_run_collectives_at_the_same_time() {
    for layer in layers() {
        let world = RangeSection::world(9, 2).unwrap();
        let left = world.split(0, 4, 1).unwrap();
        let right = world.split(4, 8, 1).unwrap();
        let mut cases = Vec::new();
        for (i, coll) in all_colls(3).into_iter().enumerate() {
            for (j, sec) in [left, right].into_iter().enumerate() {
                for count in [1, 5] {
                    cases.push(Case {
                        shape: Shape::Range(sec),
                        coll,
                        count,
                        root: (i as u32 + 2 * j as u32) % 5,
                        seed: mix((i * 10 + j * 2) as u64 + u64::from(count)),
                        base: 0,
                    });
                }
            }
        }
        // PE 4 (the shared one) computes for 20 ms before starting anything.
        let t = run(layer, 9, cases, (9, 4, Duration::from_millis(20)));
        eprintln!("janus case on {layer:?}: {t:?}");
    }
}

/// Forty collectives in flight on one section; odd PEs start late.
#[test]
fn many_collectives_in_flight_on_one_section() {
    for layer in layers() {
        let sec = RangeSection::world(7, 2).unwrap().split(1, 6, 1).unwrap();
        let colls = all_colls(1);
        let cases: Vec<Case> = (0..40u64)
            .map(|i| Case {
                shape: Shape::Range(sec),
                coll: colls[i as usize % colls.len()],
                count: [0, 3, 16][i as usize % 3],
                root: (i % 6) as u32,
                seed: mix(i),
                base: 0,
            })
            .collect();
        let t = run(layer, 7, cases, (2, 1, Duration::from_millis(10)));
        eprintln!("40 in flight on {layer:?}: {t:?}");
    }
}

/// Starting a collective checks what it can locally and says why it refuses.
#[test]
fn bad_starts_are_refused_with_typed_errors() {
    let (reg, _) = registry();
    let report = Runtime::new(reg, config(Layer::Sim, 4))
        .run(|ctx| {
            let coll = Collectives::create(ctx);
            let sec = RangeSection::world(4, 2).unwrap();
            let me = RangeMember::new(sec, 0).unwrap();
            let other = RangeMember::new(sec, 1).unwrap();
            let bare = TreeMember::new(
                Section {
                    id: SectionId::created(0, 0, 4),
                    rank: 0,
                    size: 4,
                    k: 2,
                    parent: None,
                    children: vec![1, 2],
                },
                0,
            );
            let cb = Callback::Ignore;
            let errors: Vec<CollectiveError> = [
                coll.broadcast(ctx, other, 0, Some(1u64), cb.clone()),
                coll.broadcast::<u64>(ctx, me, 0, None, cb.clone()),
                coll.reduce(ctx, me, 4, 1u64, Reducer::Sum, cb.clone()),
                coll.allreduce(ctx, me, 1u64, Reducer::Custom(0), cb.clone()),
                coll.scan(ctx, me, true, Reducer::Sum, cb.clone()),
                coll.allgather(ctx, bare.clone(), 1u64, Allgather::Ring, cb.clone()),
                coll.allgather(ctx, me, 1u64, Allgather::StandardExchange(0), cb.clone()),
            ]
            .into_iter()
            .map(|r| r.unwrap_err())
            .collect();
            // Nothing was started, so nothing is left running: the job ends.
            let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            ctx.publish("errors", &text);
            assert_eq!(
                errors[..3],
                [
                    CollectiveError::NotMyPe {
                        member: 1,
                        caller: 0
                    },
                    CollectiveError::MissingValue,
                    CollectiveError::BadRoot { root: 4, size: 4 },
                ]
            );
            assert_eq!(errors[3], CollectiveError::CustomReducer(0));
            assert!(matches!(errors[4], CollectiveError::Value(_)));
            assert_eq!(
                errors[5],
                CollectiveError::NeedsRoster {
                    algorithm: "the ring"
                }
            );
            assert_eq!(errors[6], CollectiveError::BadPorts(0));
            assert_eq!(
                RangeMember::new(sec.split(1, 2, 1).unwrap(), 0).unwrap_err(),
                { CollectiveError::NotAMember { pe: 0 } }
            );
            ctx.exit_on_quiescence();
        })
        .unwrap();
    let errors: Vec<String> = report.output("errors").unwrap();
    assert_eq!(errors.len(), 7);
}

/// A group member that records every multicast value reaching its PE.
struct Inbox;

impl Chare for Inbox {
    type Init = ();
    type Msg = RedData;
    fn create(_: (), _: &mut Ctx) -> Self {
        Inbox
    }
    fn handle(&mut self, v: RedData, ctx: &mut Ctx) {
        let pe = ctx.my_pe();
        ctx.publish("inbox", &(pe, v));
    }
}

/// Multicasts to start: (section, root rank); case 0 goes to an array by rank.
#[derive(Clone, Serialize, Deserialize)]
struct McPlan {
    coll: Collectives,
    inbox: GroupProxy<Inbox>,
    inbox_got: Entry<Inbox, RedData>,
    sinks: Sinks,
    cases: Vec<(RangeSection, u32)>,
}

/// Starts the multicasts whose root is on its PE.
struct McDriver;

impl Chare for McDriver {
    type Init = McPlan;
    type Msg = ();
    fn create(plan: McPlan, ctx: &mut Ctx) -> Self {
        for (i, &(sec, root)) in plan.cases.iter().enumerate() {
            if sec.pe(root) != Some(ctx.my_pe()) {
                continue;
            }
            let target = if i == 0 {
                PerMember::array_by_rank(&plan.sinks.array, plan.sinks.got)
            } else {
                PerMember::group(&plan.inbox, plan.inbox_got)
            };
            let member = RangeMember::new(sec, ctx.my_pe()).unwrap();
            let value = vec![i as u64, mix(i as u64)];
            plan.coll.multicast(ctx, member, value, target).unwrap();
        }
        McDriver
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// One-sided multicasts from every root of strided and nested ranges reach each
/// member's group element (or array element by rank) exactly once, and nobody else.
#[test]
fn multicasts_reach_each_member_once_from_any_root() {
    for layer in layers() {
        let world = RangeSection::world(13, 2).unwrap();
        let first = world.split(2, 11, 3).unwrap();
        let mut cases = vec![(first, 2)];
        for sec in [
            world,
            world.with_k(3).unwrap(),
            first,
            world.split(1, 12, 2).unwrap().split(1, 5, 1).unwrap(),
            world.split(7, 7, 1).unwrap(),
        ] {
            cases.extend((0..sec.size()).map(|r| (sec, r)));
        }
        let (mut reg, got) = registry();
        reg.chare::<Inbox>("inbox").chare::<McDriver>("mc-driver");
        let inbox_got = reg.entry::<Inbox, RedData>("inbox", |v| v);
        let plan_cases = cases.clone();
        let report = Runtime::new(reg, config(layer, 13))
            .run(move |ctx| {
                let coll = Collectives::create(ctx);
                let inbox = ctx.create_group::<Inbox>(());
                let n = plan_cases[0].0.size() as usize;
                let array = ctx.create_array_1d::<Sink>(n, (), ArrayMap::RoundRobin);
                let plan = McPlan {
                    coll,
                    inbox,
                    inbox_got,
                    sinks: Sinks { array, got },
                    cases: plan_cases,
                };
                ctx.create_group::<McDriver>(plan);
                ctx.exit_on_quiescence();
            })
            .unwrap_or_else(|e| panic!("{layer:?}: {e}"));
        let value = |i: usize| RedData::U64(vec![i as u64, mix(i as u64)]);
        let mut by_rank: Vec<(usize, RedData)> =
            report.outputs("got").into_iter().map(|x| x.1).collect();
        by_rank.sort_by_key(|x| x.0);
        let want: Vec<(usize, RedData)> = (0..cases[0].0.size() as usize)
            .map(|r| (r, value(0)))
            .collect();
        assert_eq!(by_rank, want, "{layer:?}: the array by rank");
        let mut got: Vec<(Pe, RedData)> =
            report.outputs("inbox").into_iter().map(|x| x.1).collect();
        let mut want: Vec<(Pe, RedData)> = Vec::new();
        for (i, (sec, _)) in cases.iter().enumerate().skip(1) {
            want.extend((0..sec.size()).map(|r| (sec.pe(r).unwrap(), value(i))));
        }
        let key = |x: &(Pe, RedData)| format!("{x:?}");
        got.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(got, want, "{layer:?}: the group");
    }
}

/// On sim, with short blocks, the logarithmic allgathers finish in a fraction of the
/// ring's n-1 rounds (virtual time, deterministic), and `Auto` picks one of them.
#[test]
fn logarithmic_allgathers_beat_the_ring_on_short_blocks_in_virtual_time() {
    let n = 64;
    let sec = RangeSection::world(n, 2).unwrap();
    let time = |a: Allgather| {
        let case = Case {
            shape: Shape::Range(sec),
            coll: Coll::Allgather(a),
            count: 1,
            root: 0,
            seed: 2,
            base: 0,
        };
        run_timed(Layer::Sim, n, vec![case], NO_STAGGER).1
    };
    let algorithms = [
        Allgather::Auto,
        Allgather::Tree,
        Allgather::Bruck(1),
        Allgather::Bruck(3),
        Allgather::StandardExchange(1),
        Allgather::StandardExchange(3),
        Allgather::Ring,
    ];
    let t: Vec<f64> = algorithms.iter().map(|&a| time(a)).collect();
    for (a, t) in algorithms.iter().zip(&t) {
        eprintln!(
            "allgather {} of 64 x 8 bytes on sim: {:.1} us",
            a.name(),
            t * 1e6
        );
    }
    let ring = t[6];
    for (a, &x) in algorithms.iter().zip(&t).take(6) {
        assert!(
            x * 3.0 < ring,
            "{} takes {x} s, the ring {ring} s",
            a.name()
        );
    }
    assert_eq!(t[0], t[4], "Auto is recursive doubling at 64 members");
}

/// A collective whose members' values do not combine, as every member starts it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
enum BadOp {
    Reduce,
    Allreduce,
    Scan,
    Gather,
    Allgather(Allgather),
}

/// One member (`odd`) gives `odd_value`; the others give three `u64`s. The member of
/// rank `late`, if any, starts two handlers after computing for a millisecond.
#[derive(Clone, Serialize, Deserialize)]
struct BadPlan {
    coll: Collectives,
    sinks: Sinks,
    shape: Shape,
    op: BadOp,
    odd: u32,
    odd_value: RedData,
    late: Option<u32>,
}

impl BadPlan {
    /// Start the member on this PE's part of the collective.
    fn start(&self, ctx: &mut Ctx) {
        let Some(member) = self.shape.member(ctx.my_pe()) else {
            return;
        };
        let rank = member.rank();
        let v = if rank == self.odd {
            self.odd_value.clone()
        } else {
            RedData::U64(vec![u64::from(rank), 1, 2])
        };
        let cb = Callback::array_element(&self.sinks.array, &(rank as usize), self.sinks.got);
        let c = &self.coll;
        let started = match self.op {
            BadOp::Reduce => c.reduce(ctx, member, 0, v, Reducer::Sum, cb),
            BadOp::Allreduce => c.allreduce(ctx, member, v, Reducer::Sum, cb),
            BadOp::Scan => c.scan(ctx, member, v, Reducer::Sum, cb),
            BadOp::Gather => c.gather(ctx, member, 0, v, cb),
            BadOp::Allgather(a) => c.allgather(ctx, member, v, a, cb),
        };
        // Every member's own value is fine: starting succeeds everywhere.
        started.unwrap_or_else(|e| panic!("starting {:?}: {e}", self.op));
    }
}

/// One per PE: starts its member's part of the plan's collective.
struct BadDriver(BadPlan);

impl Chare for BadDriver {
    type Init = BadPlan;
    /// Handlers left before a late member starts.
    type Msg = u8;
    fn create(plan: BadPlan, ctx: &mut Ctx) -> Self {
        let late = plan.late.is_some_and(|r| {
            plan.shape
                .member(ctx.my_pe())
                .is_some_and(|m| m.rank() == r)
        });
        if late {
            // What arrives during the compute is queued behind the first message to
            // self and ahead of the second, which starts the collective.
            ctx.work(Duration::from_millis(1));
            let me = ctx.this_group::<BadDriver>().expect("a group member");
            me.send(ctx, ctx.my_pe(), 2);
        } else {
            plan.start(ctx);
        }
        BadDriver(plan)
    }
    fn handle(&mut self, left: u8, ctx: &mut Ctx) {
        if left > 1 {
            let me = ctx.this_group::<BadDriver>().expect("a group member");
            me.send(ctx, ctx.my_pe(), left - 1);
        } else {
            self.0.start(ctx);
        }
    }
}

/// Run the plan on 4 PEs of `layer` under `policy`.
fn run_bad(
    layer: Layer,
    policy: ErrorPolicy,
    shape: &Shape,
    op: BadOp,
    (odd, odd_value): (u32, &RedData),
    late: Option<u32>,
) -> Result<chorus_core::RunReport, RuntimeError> {
    let (mut reg, got) = registry();
    reg.chare::<BadDriver>("bad-driver");
    let (shape, odd_value) = (shape.clone(), odd_value.clone());
    let config = Config {
        on_error: policy,
        ..config(layer, 4)
    };
    Runtime::new(reg, config).run(move |ctx| {
        let coll = Collectives::create(ctx);
        let array = ctx.create_array_1d::<Sink>(4, (), ArrayMap::RoundRobin);
        let plan = BadPlan {
            coll,
            sinks: Sinks { array, got },
            shape,
            op,
            odd,
            odd_value,
            late,
        };
        ctx.create_group::<BadDriver>(plan);
        ctx.exit_on_quiescence();
    })
}

/// A case of values that do not combine: the section, the collective, the odd member's
/// rank and value, the collective's name, the ranks that find the problem and what
/// they say.
type BadCase = (Shape, BadOp, u32, RedData, &'static str, Vec<u32>, String);

/// Members whose values differ in kind or length end a reduce, an allreduce, a scan
/// (by recursive doubling and by the tree), a gather and allgathers by rounds with
/// `CollectiveError::Failed` naming the collective, the section and what disagreed,
/// reported by "section collectives" under both policies: `abort` returns it; `drop`
/// lists it, and the members waiting on the failed one hear of it and fail with
/// `Aborted` instead of waiting (no handler panics, and the job still ends).
#[test]
fn values_that_do_not_combine_fail_the_collective_with_a_typed_error_under_both_policies() {
    let range = RangeSection::world(4, 2).unwrap();
    let tree = Shape::Tree {
        id: SectionId::created(0, 77, 4),
        k: 2,
        roster: vec![2, 0, 3, 1],
        shared: false,
    };
    let u64s = RedData::U64(vec![0; 3]);
    let combine = |b: RedData| {
        chorus_core::reduction::combine_values(Reducer::Sum, u64s.clone(), b, &|_| None)
            .unwrap_err()
    };
    let other_kind = RedData::I64(vec![1, 2, 3]);
    let shorter = RedData::U64(vec![1, 2]);
    let floats = RedData::F64(vec![0.5; 3]);
    let concat = "cannot concatenate u64 with i64".to_string();
    // (shape, op, odd rank, its value, the collective's name, ranks that find the
    // problem, what they say). On the range section rank r is PE r; in the k = 2 tree
    // rank 1 merges rank 3's partial, and rank 0 folds a scan's or gather's values.
    let cases: Vec<BadCase> = vec![
        (
            Shape::Range(range),
            BadOp::Reduce,
            3,
            other_kind.clone(),
            "reduce",
            vec![1],
            combine(other_kind.clone()),
        ),
        (
            Shape::Range(range),
            BadOp::Allreduce,
            3,
            shorter.clone(),
            "allreduce",
            vec![1],
            combine(shorter.clone()),
        ),
        (
            Shape::Range(range),
            BadOp::Allreduce,
            3,
            floats,
            "allreduce",
            vec![1],
            "reducer Sum cannot combine f64 values with integer ones".into(),
        ),
        // Recursive doubling: only rank 3 folds in rank 3's value.
        (
            Shape::Range(range),
            BadOp::Scan,
            3,
            other_kind.clone(),
            "scan",
            vec![3],
            combine(other_kind.clone()),
        ),
        (
            tree.clone(),
            BadOp::Scan,
            3,
            shorter.clone(),
            "scan",
            vec![0],
            combine(shorter),
        ),
        (
            Shape::Range(range),
            BadOp::Gather,
            2,
            other_kind.clone(),
            "gather",
            vec![0],
            concat.clone(),
        ),
        (
            Shape::Range(range),
            BadOp::Allgather(Allgather::Ring),
            2,
            other_kind.clone(),
            "allgather (ring)",
            vec![0, 1, 2, 3],
            concat.clone(),
        ),
        (
            Shape::Range(range),
            BadOp::Allgather(Allgather::Bruck(1)),
            2,
            other_kind,
            "allgather (bruck/1)",
            vec![0, 1, 2, 3],
            concat,
        ),
    ];
    for layer in layers() {
        for (shape, op, odd, odd_value, name, ranks, what) in &cases {
            let (section, pe_of) = match shape {
                Shape::Range(s) => (
                    s.id(),
                    ranks.iter().map(|&r| s.pe(r).unwrap()).collect::<Vec<_>>(),
                ),
                Shape::Tree { id, roster, .. } => {
                    (*id, ranks.iter().map(|&r| roster[r as usize]).collect())
                }
            };
            let wants: Vec<String> = ranks
                .iter()
                .zip(pe_of)
                .map(|(&rank, pe)| {
                    CollectiveError::Failed {
                        collective: name.to_string(),
                        section,
                        seq: 0,
                        rank,
                        pe,
                        cause: Box::new(CollectiveError::Mismatch(what.clone())),
                    }
                    .to_string()
                })
                .collect();
            let expected = |e: &RuntimeError| {
                matches!(e, RuntimeError::Reported { by, message, .. }
                    if by == REPORTER && wants.contains(message))
            };
            let case = format!("{layer:?}: {op:?} on {shape:?}, rank {odd} gives {odd_value:?}");
            let err = run_bad(
                layer,
                ErrorPolicy::Abort,
                shape,
                *op,
                (*odd, odd_value),
                None,
            )
            .expect_err("abort ends the job with the error");
            assert!(expected(&err), "{case}: {err:?}, wanted one of {wants:?}");
            assert!(err.to_string().contains(what.as_str()), "{case}: {err}");
            let report = run_bad(
                layer,
                ErrorPolicy::Drop,
                shape,
                *op,
                (*odd, odd_value),
                None,
            )
            .unwrap_or_else(|e| panic!("{case}: drop completes the job, got {e}"));
            let errors = report.errors();
            assert!(
                errors.iter().any(|e| expected(e)),
                "{case}: drop lists one of {wants:?}, got {errors:?}"
            );
            // The other errors are members that were waiting on the failed ones and
            // heard of the failure instead of waiting forever.
            let heard = |e: &RuntimeError| {
                matches!(e, RuntimeError::Reported { by, message, .. }
                    if by == REPORTER && message.contains(") failed it ") && message.contains(what.as_str()))
            };
            assert!(
                errors.iter().all(|e| expected(e) || heard(e)),
                "{case}: {errors:?}, wanted {wants:?} and members that heard of them"
            );
            // Every member that expects a result gets it or fails: none is left waiting.
            let got: Vec<(usize, RedData)> =
                report.outputs("got").into_iter().map(|(_, g)| g).collect();
            for rank in 0..shape.size() {
                let expects = !matches!(op, BadOp::Reduce | BadOp::Gather) || rank == 0;
                let pe = shape.member_pe(rank);
                let failed_here = format!(" failed at rank {rank} (PE {pe}): ");
                let failed = errors.iter().any(
                    |e| matches!(e, RuntimeError::Reported { message, .. } if message.contains(&failed_here)),
                );
                let answered = got.iter().any(|(i, _)| *i == rank as usize);
                assert!(
                    !expects || failed || answered,
                    "{case}: rank {rank} got neither a result nor an error: {errors:?}"
                );
            }
        }
    }
}

/// News of a failure reaches every waiting member: up and down a tree without a
/// roster, to a member that had not started (which fails at its start and passes the
/// news on to its subtree), and from a member with a roster to all. On the sim layer,
/// where the order is fixed. Each case: the section, the odd rank and its value, the
/// late rank, the rank that finds the problem, and the rank that fails at its start.
#[test]
fn news_of_a_failure_reaches_every_waiting_member() {
    let range = Shape::Range(RangeSection::world(4, 2).unwrap());
    // Ranks 0..4 on PEs 2, 0, 3, 1; rank 0's children are 1 and 2, rank 1's is 3.
    let tree = Shape::Tree {
        id: SectionId::created(0, 77, 4),
        k: 2,
        roster: vec![2, 0, 3, 1],
        shared: false,
    };
    let shorter = RedData::U64(vec![1, 2]);
    // Rank 1 finds rank 3's short vector while rank 2 computes: the roster tells all.
    // In the tree, rank 1 finds it and the news climbs to 0 and goes down to 2 and 3.
    // In the tree with rank 1 late, rank 0 finds rank 2's, and rank 1 passes the news
    // on to rank 3 when it starts.
    let cases = [
        (&range, 3, Some(2), 1, Some(2)),
        (&tree, 3, None, 1, None),
        (&tree, 2, Some(1), 0, Some(1)),
    ];
    for (shape, odd, late, finder, starter) in cases {
        let case = format!("{shape:?}, odd rank {odd}, late rank {late:?}");
        let report = run_bad(
            Layer::Sim,
            ErrorPolicy::Drop,
            shape,
            BadOp::Allreduce,
            (odd, &shorter),
            late,
        )
        .unwrap_or_else(|e| panic!("{case}: drop completes the job, got {e}"));
        let errors: Vec<String> = report.errors().iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 4, "{case}: every member fails: {errors:?}");
        let at = |rank: u32| format!("failed at rank {rank} (PE {}): ", shape.member_pe(rank));
        let origin = format!("rank {finder} (PE {}) failed it", shape.member_pe(finder));
        for rank in 0..4 {
            let mine: Vec<&String> = errors.iter().filter(|e| e.contains(&at(rank))).collect();
            assert_eq!(mine.len(), 1, "{case}: rank {rank}: {errors:?}");
            let e = mine[0];
            if rank == finder {
                assert!(
                    e.contains("do not combine") && !e.contains("failed it"),
                    "{case}: {e}"
                );
            } else if Some(rank) == starter {
                assert!(
                    e.contains(&format!("{origin} before this member started")),
                    "{case}: {e}"
                );
            } else {
                assert!(e.contains(&format!("{origin} first")), "{case}: {e}");
            }
        }
        assert!(
            report.outputs::<(usize, RedData)>("got").is_empty(),
            "{case}"
        );
    }
}

/// A forged section view (no parent at rank 1, missing children, k = 0) is refused at
/// the start with `BadSection`, before any routing could panic on it.
#[test]
fn forged_section_views_are_refused_at_the_start() {
    let (reg, _) = registry();
    let report = Runtime::new(reg, config(Layer::Sim, 4))
        .run(|ctx| {
            let coll = Collectives::create(ctx);
            let forge = |rank, k, parent, children| {
                TreeMember::new(
                    Section {
                        id: SectionId::created(0, 5, 4),
                        rank,
                        size: 4,
                        k,
                        parent,
                        children,
                    },
                    0,
                )
            };
            let members = [
                forge(1, 2, None, vec![3]),
                forge(0, 2, None, vec![1]),
                forge(0, 0, None, vec![1, 2]),
                forge(7, 2, Some(3), vec![]),
            ];
            let errors: Vec<CollectiveError> = members
                .into_iter()
                .map(|m| {
                    coll.allreduce(ctx, m, 1u64, Reducer::Sum, Callback::Ignore)
                        .unwrap_err()
                })
                .collect();
            assert!(
                errors
                    .iter()
                    .all(|e| matches!(e, CollectiveError::BadSection { .. })),
                "{errors:?}"
            );
            assert_eq!(
                errors[1],
                CollectiveError::BadSection {
                    rank: 0,
                    size: 4,
                    k: 2,
                    has_parent: false,
                    children: 1,
                    want_children: 2,
                }
            );
            ctx.publish("refused", &errors.len());
            ctx.exit_on_quiescence();
        })
        .unwrap();
    assert_eq!(report.output::<usize>("refused"), Some(4));
}
