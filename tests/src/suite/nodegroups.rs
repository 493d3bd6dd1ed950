//! Nodegroups (`ctx.create_node_group`): one member per node, on the node's first PE
//! (a rank on mpi, a block of `--pes-per-node` PEs on threads and sim); a broadcast
//! reaches each member once, `at(node)` and `local` reach one member, a reduction
//! counts one contribution per node; callbacks to a nodegroup, to one member and to
//! an array section deliver where they name.

use crate::{config, pes};
use chorus_core::{
    chare, ArrayMap, ArraySection, Callback, ChareProxy, Ctx, ErrorPolicy, GroupProxy, Layer,
    NodeGroupProxy, Reducer, RunReport, Runtime, This,
};
use serde::{Deserialize, Serialize};

/// A nodegroup member: counts the messages its node's PEs send it.
struct Hub {
    hits: u64,
    broadcasts: u64,
}

#[chare]
impl Hub {
    #[init]
    fn new(_: (), ctx: &mut Ctx) -> Self {
        let first = ctx.my_node() * node_size(ctx);
        if ctx.my_pe() as usize != first {
            ctx.fail(
                "Hub::new",
                format!("built on PE {}, not {first}", ctx.my_pe()),
            );
        }
        Hub {
            hits: 0,
            broadcasts: 0,
        }
    }
    /// A PE of this node says hello.
    #[entry]
    fn hit(&mut self, from: u32, ctx: &mut Ctx) {
        if from as usize / node_size(ctx) != ctx.my_node() {
            ctx.fail(
                "Hub::hit",
                format!("PE {from} is not on node {}", ctx.my_node()),
            );
        }
        self.hits += 1;
    }
    /// Counted once per broadcast.
    #[entry(callback)]
    fn ping(&mut self, _: u64, _ctx: &mut Ctx) {
        self.broadcasts += 1;
    }
    /// Ping every member through `This` (Charm++'s `thisProxy`), by a send and by a
    /// callback.
    #[entry]
    fn relay(&mut self, ctx: &mut Ctx) {
        This::<Hub>::new().ping(ctx, 4);
        let all = Self::ping_callback(ctx);
        ctx.send_to_callback(&all, 5u64);
    }
    /// Contribute (PE, node, hits, broadcasts) to `done`.
    #[entry]
    fn report(&mut self, done: Callback, ctx: &mut Ctx) {
        let row = vec![
            u64::from(ctx.my_pe()),
            ctx.my_node() as u64,
            self.hits,
            self.broadcasts,
        ];
        ctx.contribute(row, Reducer::Concat, done);
    }
}

fn node_size(ctx: &Ctx) -> usize {
    ctx.pes_per_node()
}

/// One per PE: each says hello to its node's hub.
struct Caller;

#[chare]
impl Caller {
    #[init]
    fn new(hubs: NodeGroupProxy<Hub>, ctx: &mut Ctx) -> Self {
        let me = ctx.my_pe();
        hubs.local(ctx).hit(ctx, me);
        Caller
    }
}

/// PE 0's script: once the callers have said hello, three broadcasts (proxy,
/// callback to all, a member callback per node) and two from the last node's member
/// (`This`); at the next quiescence, the report.
#[derive(Serialize, Deserialize)]
struct Boss {
    hubs: NodeGroupProxy<Hub>,
    quiets: u32,
}

#[chare]
impl Boss {
    #[init]
    fn new(hubs: NodeGroupProxy<Hub>, ctx: &mut Ctx) -> Self {
        let quiet = Self::quiet_callback(ctx);
        ctx.start_quiescence(quiet);
        Boss { hubs, quiets: 0 }
    }
    #[entry(callback)]
    fn quiet(&mut self, ctx: &mut Ctx) {
        self.quiets += 1;
        if self.quiets == 2 {
            let done = Self::reported_callback(ctx);
            return self.hubs.report(ctx, done);
        }
        self.hubs.ping(ctx, 1);
        let all = self.hubs.ping_callback(ctx);
        ctx.send_to_callback(&all, 2u64);
        for node in 0..ctx.num_nodes() {
            let one = self.hubs.at(node).ping_callback(ctx);
            ctx.send_to_callback(&one, 3u64);
        }
        self.hubs.at(ctx.num_nodes() - 1).relay(ctx);
        let quiet = Self::quiet_callback(ctx);
        ctx.start_quiescence(quiet);
    }
    #[entry(callback)]
    fn reported(&mut self, rows: Vec<u64>, ctx: &mut Ctx) {
        ctx.publish("rows", &rows);
        ctx.exit();
    }
}

fn run_hubs(layer: Layer, wanted: u32, per_node: u32) -> RunReport {
    let mut reg = chorus_core::Registry::new();
    Hub::register(&mut reg);
    Caller::register(&mut reg);
    Boss::register(&mut reg);
    let mut cfg = config(layer, pes(layer, wanted), ErrorPolicy::Drop);
    if layer != Layer::Mpi {
        cfg.pes_per_node = per_node;
    }
    Runtime::new(reg, cfg)
        .run(|ctx| {
            let hubs = ctx.create_node_group::<Hub>(());
            let _: GroupProxy<Caller> = ctx.create_group::<Caller>(hubs);
            let _: ChareProxy<Boss> = ctx.create_chare::<Boss>(hubs, 0);
        })
        .expect("the job runs")
}

/// Every node has one member, on its first PE; each PE's `local` reaches its own
/// node's member; a broadcast, a callback to all, one to each member, and a send and
/// a callback to `This` from a member reach each member once; the reduction has one
/// row per node.
pub fn nodegroups_have_one_member_per_node(layer: Layer) {
    let cases: &[(u32, u32)] = match layer {
        Layer::Mpi => &[(4, 1)],
        _ => &[(8, 1), (8, 3), (6, 2), (1, 1)],
    };
    for &(wanted, per_node) in cases {
        let report = run_hubs(layer, wanted, per_node);
        assert!(report.errors().is_empty(), "{:?}", report.errors());
        let npes = pes(layer, wanted) as u64;
        let size = match layer {
            Layer::Mpi => u64::from(crate::pes_per_rank(layer)),
            _ => u64::from(per_node),
        };
        let nodes = npes.div_ceil(size);
        let rows: Vec<u64> = report.output("rows").expect("the script ends");
        let mut expect = Vec::new();
        for node in 0..nodes {
            let hits = size.min(npes - node * size);
            expect.extend([node * size, node, hits, 5]);
        }
        assert_eq!(rows, expect, "{npes} PEs, {size} per node");
    }
}

/// An element of the array sections are taken from: records what reaches it.
#[derive(Default, Serialize, Deserialize)]
struct Cell {
    got: Vec<u64>,
}

#[chare]
impl Cell {
    #[entry(callback)]
    fn take(&mut self, v: u64, _ctx: &mut Ctx) {
        self.got.push(v);
    }
    /// Contribute what it got, in order, to `done`.
    #[entry]
    fn show(&mut self, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element") as u64;
        let mut row = vec![i, self.got.len() as u64];
        row.extend(&self.got);
        ctx.contribute(row, Reducer::Concat, done);
    }
    /// Contribute its index to a section reduction whose result goes to the section.
    #[entry]
    fn sum_into(&mut self, mut section: ArraySection<Cell, usize>, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element") as u64;
        let back = section.take_callback(ctx);
        section
            .contribute(ctx, i, Reducer::Sum, back)
            .expect("a member contributes");
    }
}

/// Elements in the section test's array, and which of them are the section.
const CELLS: usize = 24;
fn in_section(i: usize) -> bool {
    i.is_multiple_of(3)
}

/// A callback to an array section delivers to each member once and to no other
/// element: fired directly, and as the target of the members' own section reduction.
pub fn callbacks_to_a_section_reach_each_member_once(layer: Layer) {
    let mut reg = chorus_core::Registry::new();
    Cell::register(&mut reg);
    Shower::register(&mut reg);
    let cfg = config(layer, pes(layer, 4), ErrorPolicy::Drop);
    let report = Runtime::new(reg, cfg)
        .run(|ctx| {
            let cells = ctx.create_array_1d::<Cell>(CELLS, (), ArrayMap::RoundRobin);
            let section = cells
                .section(ctx, (0..CELLS).filter(|&i| in_section(i)))
                .expect("a section");
            let direct = section.take_callback(ctx);
            ctx.send_to_callback(&direct, 7u64);
            section.sum_into(ctx, section.clone());
            let shower = ctx.create_chare::<Shower>(cells, 0);
            let quiet = shower.quiet_callback(ctx);
            ctx.start_quiescence(quiet);
        })
        .expect("the job runs");
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    let rows: Vec<u64> = report.output("cells").expect("the script ends");
    let sum: u64 = (0..CELLS)
        .filter(|&i| in_section(i))
        .map(|i| i as u64)
        .sum();
    let mut got = Vec::new();
    let mut rest = rows.as_slice();
    while let [i, n, tail @ ..] = rest {
        let (vals, after) = tail.split_at(*n as usize);
        let mut vals = vals.to_vec();
        vals.sort_unstable();
        got.push((*i as usize, vals));
        rest = after;
    }
    got.sort();
    let expect: Vec<(usize, Vec<u64>)> = (0..CELLS)
        .map(|i| {
            let mut v = if in_section(i) { vec![7, sum] } else { vec![] };
            v.sort_unstable();
            (i, v)
        })
        .collect();
    assert_eq!(got, expect);
}

/// At quiescence, gathers what every cell got.
#[derive(Serialize, Deserialize)]
struct Shower {
    cells: chorus_core::ArrayProxy<Cell, usize>,
}

#[chare]
impl Shower {
    #[init]
    fn new(cells: chorus_core::ArrayProxy<Cell, usize>, _ctx: &mut Ctx) -> Self {
        Shower { cells }
    }
    #[entry(callback)]
    fn quiet(&mut self, ctx: &mut Ctx) {
        let done = Self::shown_callback(ctx);
        self.cells.show(ctx, done);
    }
    #[entry(callback)]
    fn shown(&mut self, rows: Vec<u64>, ctx: &mut Ctx) {
        ctx.publish("cells", &rows);
        ctx.exit();
    }
}

/// This module's tests.
pub const TESTS: &[crate::suite::Test] = &[
    (
        "nodegroups_have_one_member_per_node",
        nodegroups_have_one_member_per_node,
    ),
    (
        "callbacks_to_a_section_reach_each_member_once",
        callbacks_to_a_section_reach_each_member_once,
    ),
];
