//! Chare arrays: 1-D, 2-D and user index types, block, round-robin and custom maps,
//! point-to-point sends, broadcasts and insertion after creation.

use chorus_core::{
    ArrayIndex, ArrayMap, ArrayProxy, Callback, Chare, Ctx, Entry, ErrorPolicy, Reducer, Registry,
    Runtime,
};
use chorus_tests::{config, layers};
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

#[test]
fn block_and_round_robin_place_1d_and_2d_arrays_as_documented() {
    for layer in layers() {
        let cases: Vec<(bool, ArrayMap, Vec<u64>)> = vec![
            (false, ArrayMap::Block, vec![0, 0, 0, 1, 1, 2, 2, 2, 3, 3]),
            (
                false,
                ArrayMap::RoundRobin,
                vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1],
            ),
            (true, ArrayMap::Block, vec![0, 0, 1, 2, 2, 3]),
            (true, ArrayMap::RoundRobin, vec![0, 1, 2, 3, 0, 1]),
        ];
        for (two_d, map, want) in cases {
            let (reg, placement, _) = registry();
            let report = Runtime::new(reg, config(layer, 4, ErrorPolicy::Abort))
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
                "2-D: {two_d}, {map:?}"
            );
        }
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

#[test]
fn user_index_types_with_a_custom_map_and_point_to_point_sends() {
    for layer in layers() {
        let (mut reg, _, pong) = registry();
        let map = reg.map::<Site>("last-pe", last_pe);
        let sites: Vec<Site> = (0..5)
            .map(|id| Site {
                name: format!("s{id}"),
                id: id * 10,
            })
            .collect();
        let report = Runtime::new(reg, config(layer, 3, ErrorPolicy::Abort))
            .run(move |ctx| {
                let sink = ctx.create_chare::<Sink>(5, 1);
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
}

#[test]
fn elements_inserted_after_creation_receive_messages_and_join_reductions() {
    for layer in layers() {
        let (reg, placement, _) = registry();
        let report = Runtime::new(reg, config(layer, 4, ErrorPolicy::Abort))
            .run(move |ctx| {
                let sink = ctx.create_chare::<Sink>(0, 2);
                let arr: ArrayProxy<Cell, u64> =
                    ctx.create_array(Vec::new(), (), ArrayMap::RoundRobin);
                for i in [3u64, 9, 4, 100, 7] {
                    arr.insert(ctx, i, ());
                }
                arr.done_inserting(ctx);
                arr.broadcast(ctx, CellMsg::Where(Callback::chare(&sink, placement)));
            })
            .expect("run");
        // Gathered in index order 3, 4, 7, 9, 100, each on PE index mod 4.
        assert_eq!(
            report.output::<Vec<u64>>("placement"),
            Some(vec![3, 0, 3, 1, 0])
        );
    }
}
