//! What the section collective tests share: the cases (every collective on range
//! and algorithm-style sections), the sinks and drivers that run them, and the
//! sequential computation each result is checked against.

pub(crate) use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, GroupProxy, Layer, Pe,
    RedData, Reducer, Registry, Runtime, RuntimeError,
};
pub(crate) use chorus_sections::collectives::{
    Allgather, Alltoall, CollectiveError, Collectives, Member, PerMember, RangeMember, Topology,
    TreeMember, REPORTER,
};
pub(crate) use chorus_sections::kary;
pub(crate) use chorus_sections::range::RangeSection;
pub(crate) use chorus_sections::section::{Section, SectionId};
pub(crate) use serde::{Deserialize, Serialize};
pub(crate) use std::collections::BTreeMap;
pub(crate) use std::time::{Duration, Instant};

/// The machine layers the tests run on (as chorus-tests' `layers()`).
pub(crate) fn layers() -> Vec<Layer> {
    vec![Layer::Threads, Layer::Sim]
}

pub(crate) fn config(layer: Layer, pes: u32) -> Config {
    Config {
        pes,
        layer,
        on_error: ErrorPolicy::Abort,
        ..Config::default()
    }
}

pub(crate) use chorus_core::mix64 as mix;

/// Element type and reducer of a reduction case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Kind {
    U64Sum,
    I64Min,
    F64Sum,
    BoolOr,
    U64Xor,
    F64Max,
    I64Product,
    U64Concat,
}

pub(crate) const KINDS: [Kind; 8] = [
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
    pub(crate) fn reducer(self) -> Reducer {
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
    pub(crate) fn value(self, seed: u64, count: u32) -> RedData {
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
    pub(crate) fn combine(self, a: &RedData, b: &RedData) -> RedData {
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
    pub(crate) fn identity(self, count: u32) -> RedData {
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
pub(crate) enum Coll {
    Broadcast,
    Reduce(Kind),
    Allreduce(Kind),
    Barrier,
    Scan(Kind),
    Exscan(Kind),
    Gather,
    Gatherv,
    Allgather(Allgather),
    Scatter,
    ReduceScatter(Kind),
    Alltoall(Alltoall),
}

/// How the members of a case see their section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Shape {
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
    pub(crate) fn size(&self) -> u32 {
        match self {
            Shape::Range(s) => s.size(),
            Shape::Tree { roster, .. } => roster.len() as u32,
        }
    }

    pub(crate) fn member_pe(&self, rank: u32) -> Pe {
        match self {
            Shape::Range(s) => s.pe(rank).expect("a rank of the range"),
            Shape::Tree { roster, .. } => roster[rank as usize],
        }
    }

    pub(crate) fn member(&self, pe: Pe) -> Option<Member> {
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
pub(crate) struct Case {
    pub(crate) shape: Shape,
    pub(crate) coll: Coll,
    pub(crate) count: u32,
    pub(crate) root: u32,
    pub(crate) seed: u64,
    pub(crate) base: usize,
}

impl Case {
    pub(crate) fn value(&self, rank: u32) -> RedData {
        let seed = self.seed ^ (u64::from(rank) << 40);
        match self.coll {
            Coll::Reduce(k) | Coll::Allreduce(k) | Coll::Scan(k) | Coll::Exscan(k) => {
                k.value(seed, self.count)
            }
            Coll::Gatherv => Kind::U64Sum.value(seed, self.count + rank % 3),
            Coll::ReduceScatter(k) => k.value(seed, self.counts().iter().sum()),
            Coll::Allgather(_) if self.seed % 2 == 1 => Kind::I64Min.value(seed, self.count),
            _ => Kind::U64Sum.value(seed, self.count),
        }
    }

    /// The block rank `from` gives rank `to` in a scatter (from the root) or an
    /// alltoall: lengths differ (scatterv, alltoallv).
    pub(crate) fn block(&self, from: u32, to: u32) -> RedData {
        let seed = self.seed ^ (u64::from(from) << 40) ^ (u64::from(to) << 20);
        Kind::U64Sum.value(seed, self.count + (from + to) % 3)
    }

    /// Each rank's elements in a reduce-scatter.
    pub(crate) fn counts(&self) -> Vec<u32> {
        (0..self.shape.size())
            .map(|j| (self.count + j) % 3)
            .collect()
    }

    /// What each rank's callback must receive (None: nothing).
    pub(crate) fn expected(&self) -> Vec<Option<RedData>> {
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
            Coll::Scatter => (0..n).map(|j| Some(self.block(self.root, j))).collect(),
            Coll::Alltoall(_) => (0..n)
                .map(|j| {
                    let mut acc = self.block(0, j);
                    for r in 1..n {
                        acc = Kind::U64Concat.combine(&acc, &self.block(r, j));
                    }
                    Some(acc)
                })
                .collect(),
            Coll::ReduceScatter(k) => cut(fold(k, n as usize), &self.counts())
                .into_iter()
                .map(Some)
                .collect(),
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
    pub(crate) fn start(&self, ctx: &mut Ctx, coll: &Collectives, sink: &Sinks) -> bool {
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
            Coll::Scatter => {
                let n = member.size();
                let blocks =
                    (rank == self.root).then(|| (0..n).map(|j| self.block(self.root, j)).collect());
                coll.scatter(ctx, member, self.root, blocks, cb)
            }
            Coll::ReduceScatter(k) => {
                coll.reduce_scatter(ctx, member, v, self.counts(), k.reducer(), cb)
            }
            Coll::Alltoall(a) => {
                let blocks = (0..member.size()).map(|j| self.block(rank, j)).collect();
                coll.alltoall(ctx, member, blocks, a, cb)
            }
        };
        r.unwrap_or_else(|e| panic!("starting {self:?}: {e}"));
        true
    }
}

/// Receives one result of one member of one case.
pub(crate) struct Sink;

#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum SinkMsg {
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
pub(crate) struct Sinks {
    pub(crate) array: ArrayProxy<Sink, usize>,
    pub(crate) got: Entry<Sink, RedData>,
}

/// A run's plan, as every driver gets it.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub(crate) cases: Vec<Case>,
    pub(crate) coll: Collectives,
    pub(crate) sinks: Sinks,
    /// Members on PEs `p` with `p % stagger.0 == stagger.1` compute this long first, so
    /// their peers' messages arrive before their start.
    pub(crate) stagger: (u32, u32, Duration),
}

/// One per PE: starts its members' collectives, in plan order.
pub(crate) struct Driver;

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

pub(crate) fn registry() -> (Registry, Entry<Sink, RedData>) {
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Sink>("sink").chare::<Driver>("driver");
    let got = reg.entry::<Sink, RedData>("got", SinkMsg::Got);
    (reg, got)
}

/// Run `cases` on `pes` PEs of `layer`, check every result against the sequential
/// computation, and return the wall time.
pub(crate) fn run(
    layer: Layer,
    pes: u32,
    cases: Vec<Case>,
    stagger: (u32, u32, Duration),
) -> Duration {
    run_timed(layer, pes, cases, stagger).0
}

/// As `run`, also returning the layer's clock when the last result arrived (virtual
/// time on sim).
pub(crate) fn run_timed(
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
pub(crate) const COUNTS: [u32; 12] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17];

/// A range section of `size` members out of `world` PEs, of the variety `v`: plain,
/// strided, nested (a range of a range), or from the top.
pub(crate) fn range_of(world: u32, size: u32, k: u32, v: u64) -> RangeSection {
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
pub(crate) fn tree_of(world: u32, size: u32, k: u32, seed: u64, shared: bool) -> Shape {
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

pub(crate) fn all_colls(i: u64) -> Vec<Coll> {
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
    let element_wise = match kind(4) {
        Kind::U64Concat => Kind::U64Sum,
        k => k,
    };
    v.extend([
        Coll::Scatter,
        Coll::ReduceScatter(element_wise),
        Coll::Alltoall(Alltoall::Pairwise),
        Coll::Alltoall(Alltoall::Bruck),
        Coll::Alltoall(Alltoall::Auto),
    ]);
    v
}

/// `v` cut into blocks of `counts` elements (a reduce-scatter's blocks).
fn cut(v: RedData, counts: &[u32]) -> Vec<RedData> {
    fn blocks<T>(xs: Vec<T>, counts: &[u32], wrap: fn(Vec<T>) -> RedData) -> Vec<RedData> {
        let mut it = xs.into_iter();
        let mut take = |c: u32| wrap(it.by_ref().take(c as usize).collect());
        counts.iter().map(|&c| take(c)).collect()
    }
    match v {
        RedData::I64(x) => blocks(x, counts, RedData::I64),
        RedData::U64(x) => blocks(x, counts, RedData::U64),
        RedData::F64(x) => blocks(x, counts, RedData::F64),
        RedData::Bool(x) => blocks(x, counts, RedData::Bool),
        other => unreachable!("a reduce-scatter of {other:?}"),
    }
}

pub(crate) fn needs_roster(c: Coll) -> bool {
    matches!(
        c,
        Coll::Allgather(Allgather::Bruck(_) | Allgather::StandardExchange(_) | Allgather::Ring)
            | Coll::Alltoall(_)
    )
}

/// Every collective on range sections of sizes 1..=20 with every element count.
pub(crate) fn range_sweep(
    world: u32,
    sizes: impl Iterator<Item = u32>,
    counts: &[u32],
) -> Vec<Case> {
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
pub(crate) fn tree_sweep(
    world: u32,
    sizes: impl Iterator<Item = u32>,
    counts: &[u32],
) -> Vec<Case> {
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

pub(crate) const NO_STAGGER: (u32, u32, Duration) = (0, 0, Duration::ZERO);
