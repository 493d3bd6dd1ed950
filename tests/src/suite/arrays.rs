//! Chare arrays: 1-D, 2-D and user index types, block, round-robin and custom maps,
//! point-to-point sends, broadcasts and insertion after creation.

use crate::{config, pes};
use chorus_core::{
    ArrayIndex, ArrayMap, ArrayProxy, Callback, Chare, Ctx, Entry, ErrorPolicy, Layer, Reducer,
    Registry, Runtime,
};
use serde::{Deserialize, Serialize};

/// Reports where it lives and what it was sent.
struct Cell;

#[derive(Clone, Serialize, Deserialize)]
enum CellMsg {
    Where(Callback),
    Ping(u64, Callback),
}

impl Chare for Cell {
    type Init = ();
    type Msg = CellMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Cell
    }
    fn handle(&mut self, msg: CellMsg, ctx: &mut Ctx) {
        match msg {
            CellMsg::Where(done) => ctx.contribute(u64::from(ctx.my_pe()), Reducer::Gather, done),
            CellMsg::Ping(x, done) => ctx.send_to_callback(&done, x),
        }
    }
}

/// Collects results into the report.
struct Sink {
    want: usize,
    got: Vec<u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum SinkMsg {
    Placement(Vec<u64>),
    Pong(u64),
}

impl Chare for Sink {
    type Init = usize;
    type Msg = SinkMsg;
    fn create(want: usize, _: &mut Ctx) -> Self {
        Sink {
            want,
            got: Vec::new(),
        }
    }
    fn handle(&mut self, msg: SinkMsg, ctx: &mut Ctx) {
        match msg {
            SinkMsg::Placement(pes) => {
                ctx.publish("placement", &pes);
                ctx.exit();
            }
            SinkMsg::Pong(x) => {
                self.got.push(x);
                if self.got.len() == self.want {
                    self.got.sort_unstable();
                    ctx.publish("pongs", &self.got);
                    ctx.exit();
                }
            }
        }
    }
}

fn registry() -> (Registry, Entry<Sink, Vec<u64>>, Entry<Sink, u64>) {
    let mut reg = Registry::new();
    reg.chare::<Cell>("Cell").chare::<Sink>("Sink");
    let placement = reg.entry("Sink::placement", SinkMsg::Placement);
    let pong = reg.entry("Sink::pong", SinkMsg::Pong);
    (reg, placement, pong)
}

/// Where the documentation says element `pos` (row-major) of `n` goes on `p` PEs.
fn documented_home(map: ArrayMap, pos: u64, n: u64, p: u64) -> u64 {
    match map {
        ArrayMap::Block => (pos * p / n).min(p - 1),
        _ => pos % p,
    }
}

/// Block and round-robin maps place 1-D and 2-D arrays as documented.
pub fn block_and_round_robin_place_1d_and_2d_arrays_as_documented(layer: Layer) {
    let p = pes(layer, 4);
    let homes = |map, n| -> Vec<u64> {
        (0..n)
            .map(|pos| documented_home(map, pos, n, u64::from(p)))
            .collect()
    };
    // The documented examples on 4 PEs, whatever the job's size.
    let on_4 = |map, n| -> Vec<u64> { (0..n).map(|pos| documented_home(map, pos, n, 4)).collect() };
    assert_eq!(
        on_4(ArrayMap::Block, 10),
        vec![0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    );
    assert_eq!(
        on_4(ArrayMap::RoundRobin, 10),
        vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    );
    assert_eq!(on_4(ArrayMap::Block, 6), vec![0, 0, 1, 2, 2, 3]);
    assert_eq!(on_4(ArrayMap::RoundRobin, 6), vec![0, 1, 2, 3, 0, 1]);
    let cases: Vec<(bool, ArrayMap, Vec<u64>)> = vec![
        (false, ArrayMap::Block, homes(ArrayMap::Block, 10)),
        (false, ArrayMap::RoundRobin, homes(ArrayMap::RoundRobin, 10)),
        (true, ArrayMap::Block, homes(ArrayMap::Block, 6)),
        (true, ArrayMap::RoundRobin, homes(ArrayMap::RoundRobin, 6)),
    ];
    for (two_d, map, want) in cases {
        let (reg, placement, _) = registry();
        let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
            .run(move |ctx| {
                let sink = ctx.create_chare::<Sink>(0, 0);
                let done = Callback::chare(&sink, placement);
                if two_d {
                    ctx.create_array_2d::<Cell>((2, 3), (), map)
                        .broadcast(ctx, CellMsg::Where(done));
                } else {
                    ctx.create_array_1d::<Cell>(10, (), map)
                        .broadcast(ctx, CellMsg::Where(done));
                }
            })
            .expect("run");
        assert_eq!(
            report.output::<Vec<u64>>("placement"),
            Some(want),
            "2-D: {two_d}, {map:?}, {p} PEs on {layer:?}"
        );
    }
}

/// A user index type: a named cell of a sparse grid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Site {
    name: String,
    id: u32,
}

impl ArrayIndex for Site {
    fn order_key(&self) -> u64 {
        u64::from(self.id)
    }
}

fn last_pe(_: &Site, npes: usize) -> u32 {
    npes as u32 - 1
}

/// A user index type placed by a custom map receives point-to-point sends.
pub fn user_index_types_with_a_custom_map_and_point_to_point_sends(layer: Layer) {
    let (mut reg, _, pong) = registry();
    let map = reg.map::<Site>("last-pe", last_pe);
    let sites: Vec<Site> = (0..5)
        .map(|id| Site {
            name: format!("s{id}"),
            id: id * 10,
        })
        .collect();
    let p = pes(layer, 3);
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let sink = ctx.create_chare::<Sink>(5, 1 % p);
            let arr = ctx.create_array::<Cell, Site>(sites.clone(), (), map);
            for s in &sites {
                arr.send(
                    ctx,
                    s,
                    CellMsg::Ping(u64::from(s.id) + 1, Callback::chare(&sink, pong)),
                );
            }
        })
        .expect("run");
    assert_eq!(
        report.output::<Vec<u64>>("pongs"),
        Some(vec![1, 11, 21, 31, 41])
    );
}

/// Elements inserted after creation receive messages and join reductions.
pub fn elements_inserted_after_creation_receive_messages_and_join_reductions(layer: Layer) {
    let (reg, placement, _) = registry();
    let p = pes(layer, 4);
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let sink = ctx.create_chare::<Sink>(0, 2 % p);
            let arr: ArrayProxy<Cell, u64> = ctx.create_array(Vec::new(), (), ArrayMap::RoundRobin);
            for i in [3u64, 9, 4, 100, 7] {
                arr.insert(ctx, i, ());
            }
            arr.done_inserting(ctx);
            arr.broadcast(ctx, CellMsg::Where(Callback::chare(&sink, placement)));
        })
        .expect("run");
    // Gathered in index order 3, 4, 7, 9, 100, each on PE index mod P.
    let want: Vec<u64> = [3u64, 4, 7, 9, 100]
        .iter()
        .map(|i| i % u64::from(p))
        .collect();
    if p == 4 {
        assert_eq!(want, vec![3, 0, 3, 1, 0]);
    }
    assert_eq!(report.output::<Vec<u64>>("placement"), Some(want));
}

/// Once the job is quiet, asks every element of its array where it is.
#[derive(Clone, Serialize, Deserialize)]
struct AskWhenQuiet {
    arr: ArrayProxy<Cell, u64>,
    done: Callback,
}

impl Chare for AskWhenQuiet {
    type Init = AskWhenQuiet;
    type Msg = ();
    fn create(init: AskWhenQuiet, _: &mut Ctx) -> Self {
        init
    }
    fn handle(&mut self, (): (), ctx: &mut Ctx) {
        self.arr.broadcast(ctx, CellMsg::Where(self.done.clone()));
    }
}

/// Elements PE 0 inserts on the last PE count in the reductions after its
/// `done_inserting`, however their inserts and the recount's flood down the tree
/// interleave (on sim, jitter lets the flood overtake the inserts: before the fix
/// the last PE recounted without them and every later reduction missed them).
pub fn a_recount_waits_for_the_inserts_it_covers(layer: Layer) {
    let p = pes(layer, 8);
    let seeds = if layer == Layer::Sim { 0..16 } else { 0..1 };
    for seed in seeds {
        let (mut reg, placement, _) = registry();
        reg.chare::<AskWhenQuiet>("AskWhenQuiet");
        let quiet = reg.entry::<AskWhenQuiet, ()>("quiet", |()| ());
        let mut cfg = config(layer, p, ErrorPolicy::Abort);
        if layer == Layer::Sim {
            cfg.seed = seed;
            cfg.sim.jitter_us = Some(50.0);
        }
        let last = u64::from(p - 1);
        let newcomers: Vec<u64> = (1..=3).map(|k| last + k * u64::from(p)).collect();
        let inserted = newcomers.clone();
        let report = Runtime::new(reg, cfg)
            .run(move |ctx| {
                let sink = ctx.create_chare::<Sink>(0, 0);
                let done = Callback::chare(&sink, placement);
                let first: Vec<u64> = (0..u64::from(p)).collect();
                let arr: ArrayProxy<Cell, u64> = ctx.create_array(first, (), ArrayMap::RoundRobin);
                for &i in &inserted {
                    arr.insert(ctx, i, ());
                }
                arr.done_inserting(ctx);
                let asker = ctx.create_chare::<AskWhenQuiet>(AskWhenQuiet { arr, done }, 0);
                ctx.start_quiescence(Callback::chare(&asker, quiet));
            })
            .expect("run");
        let mut want: Vec<u64> = (0..u64::from(p)).collect();
        want.extend(newcomers.iter().map(|_| last));
        assert_eq!(
            report.output::<Vec<u64>>("placement"),
            Some(want),
            "{layer:?}, seed {seed}: every element's PE, the newcomers last"
        );
    }
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "block_and_round_robin_place_1d_and_2d_arrays_as_documented",
        block_and_round_robin_place_1d_and_2d_arrays_as_documented,
    ),
    (
        "user_index_types_with_a_custom_map_and_point_to_point_sends",
        user_index_types_with_a_custom_map_and_point_to_point_sends,
    ),
    (
        "elements_inserted_after_creation_receive_messages_and_join_reductions",
        elements_inserted_after_creation_receive_messages_and_join_reductions,
    ),
    (
        "a_recount_waits_for_the_inserts_it_covers",
        a_recount_waits_for_the_inserts_it_covers,
    ),
];
