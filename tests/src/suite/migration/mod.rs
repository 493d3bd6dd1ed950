//! Migration of array elements: messages streamed at elements that move at random
//! (seeded) each arrive exactly once; reductions and broadcasts count every element
//! once after moves and during them; quiescence waits for chains of moves; bad
//! requests are clear errors that lose nothing.

use crate::{config, pes, splitmix64};
use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, Ctx, Entry, ErrorPolicy, GroupProxy, Layer, Migratable,
    MigrateError, Reducer, Registry, RunReport, Runtime,
};
use serde::{Deserialize, Serialize};

mod refusals;
pub use refusals::{
    an_element_inserted_before_its_pe_knew_the_array_lives_at_home,
    an_element_lost_in_transit_is_reported_with_its_messages,
    an_index_is_never_inserted_twice_even_while_its_element_is_away,
    bad_moves_are_clear_errors_and_lose_nothing,
    moving_from_create_works_and_from_about_to_migrate_is_refused,
};
use refusals::{Census, CensusMsg, Fixed, Fragile, Planter, Restless};

/// An element that records what reaches it and moves where its seeded generator or
/// its route says. Its whole state travels with it.
#[derive(Serialize, Deserialize)]
struct Roamer {
    rng: u64,
    /// Ids of the items received, in arrival order.
    got: Vec<u64>,
    /// Moves made (counted on arrival by `migrated`).
    moves: u64,
    /// Broadcasts received.
    bcasts: u64,
    /// Hop messages handled.
    hops: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum RoamerMsg {
    /// Record `id`; then move to a random PE with probability 1/`roam` (never if 0).
    Item { id: u64, roam: u64 },
    /// Move to the first PE of the route and send the rest after itself.
    Hop(Vec<u32>),
    /// Contribute the index (sum), then move to `(index * mul + add) mod P`.
    SumThenMove {
        done: Callback,
        mul: usize,
        add: usize,
    },
    /// Contribute this PE (gather), then move as above unless `mul` is 0.
    Where {
        done: Callback,
        mul: usize,
        add: usize,
    },
    /// Count a broadcast and contribute the count (gather).
    Count(Callback),
    /// Contribute the items received (concat), then the moves made (sum).
    Report { ids: Callback, moves: Callback },
    /// Try to move to `to` and publish what `migrate_me` said.
    TryMove(u32),
}

impl Chare for Roamer {
    type Init = u64;
    type Msg = RoamerMsg;
    fn create(salt: u64, ctx: &mut Ctx) -> Self {
        let index = ctx.this_index::<usize>().unwrap_or(0) as u64;
        Roamer {
            rng: ctx.seed() ^ salt ^ index.wrapping_mul(0x9E37_79B9),
            got: Vec::new(),
            moves: 0,
            bcasts: 0,
            hops: 0,
        }
    }
    fn handle(&mut self, msg: RoamerMsg, ctx: &mut Ctx) {
        let index = ctx.this_index::<usize>().expect("a 1-D element");
        let p = ctx.num_pes();
        let go = |ctx: &mut Ctx, to: usize| ctx.migrate_me(to as u32).expect("a valid move");
        match msg {
            RoamerMsg::Item { id, roam } => {
                self.got.push(id);
                let r = splitmix64(&mut self.rng);
                if r.checked_rem(roam) == Some(0) {
                    go(ctx, (r >> 32) as usize % p);
                }
            }
            RoamerMsg::Hop(route) => {
                self.hops += 1;
                if let Some((&to, rest)) = route.split_first() {
                    go(ctx, to as usize);
                    // Sent while the element is leaving: it must follow it.
                    let me: ArrayProxy<Roamer, usize> = ctx.this_array().expect("an element");
                    me.send(ctx, &index, RoamerMsg::Hop(rest.to_vec()));
                }
            }
            RoamerMsg::SumThenMove { done, mul, add } => {
                ctx.contribute(index as u64, Reducer::Sum, done);
                go(ctx, (index * mul + add) % p);
            }
            RoamerMsg::Where { done, mul, add } => {
                self.bcasts += 1;
                ctx.contribute(u64::from(ctx.my_pe()), Reducer::Gather, done);
                if mul > 0 {
                    go(ctx, (index * mul + add) % p);
                }
            }
            RoamerMsg::Count(done) => {
                self.bcasts += 1;
                ctx.contribute(self.bcasts, Reducer::Gather, done);
            }
            RoamerMsg::Report { ids, moves } => {
                ctx.contribute(self.got.clone(), Reducer::Concat, ids);
                ctx.contribute(self.moves, Reducer::Sum, moves);
            }
            RoamerMsg::TryMove(to) => {
                let said = match ctx.migrate_me(to) {
                    Ok(()) => "ok".to_string(),
                    Err(e) => e.to_string(),
                };
                ctx.publish("try_move", &said);
            }
        }
    }
}

impl Migratable for Roamer {
    fn migrated(&mut self, _: &mut Ctx) {
        self.moves += 1;
    }
}

/// The entries a driver receives results at.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Entries {
    quiet: Entry<Driver, ()>,
    ids: Entry<Driver, Vec<u64>>,
    moves: Entry<Driver, u64>,
    sum: Entry<Driver, u64>,
    placement: Entry<Driver, Vec<u64>>,
    counts: Entry<Driver, Vec<u64>>,
    census_quiet: Entry<Census, ()>,
    census_placement: Entry<Census, Vec<u64>>,
}

/// What a driver does with the results it receives.
#[derive(Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
enum Script {
    /// At quiescence, collect every element's items and moves; end after `quiets`
    /// quiescence notices and both results.
    Report { quiets: u32 },
    /// Sum, then two placements, then broadcast counts, each started by the last;
    /// with `recount`, `done_inserting` right after the sum, while elements move.
    Collectives { recount: bool },
}

#[derive(Clone, Serialize, Deserialize)]
struct DriverInit {
    arr: ArrayProxy<Roamer, usize>,
    script: Script,
    e: Entries,
}

/// Runs a test's script on PE 0: publishes what it receives and ends the job.
struct Driver {
    init: DriverInit,
    quiets: u32,
    results: u32,
    placements: u32,
}

#[derive(Clone, Serialize, Deserialize)]
enum DriverMsg {
    Quiet(()),
    Ids(Vec<u64>),
    Moves(u64),
    Sum(u64),
    Placement(Vec<u64>),
    Counts(Vec<u64>),
}

impl Driver {
    fn cb<T: chorus_core::Reducible>(&self, ctx: &Ctx, entry: Entry<Driver, T>) -> Callback {
        Callback::chare(&ctx.this_chare::<Driver>().expect("a chare"), entry)
    }
}

impl Chare for Driver {
    type Init = DriverInit;
    type Msg = DriverMsg;
    fn create(init: DriverInit, _: &mut Ctx) -> Self {
        Driver {
            init,
            quiets: 0,
            results: 0,
            placements: 0,
        }
    }
    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        let (arr, e) = (self.init.arr, self.init.e);
        match msg {
            DriverMsg::Quiet(()) => {
                self.quiets += 1;
                if self.quiets == 1 {
                    let report = RoamerMsg::Report {
                        ids: self.cb(ctx, e.ids),
                        moves: self.cb(ctx, e.moves),
                    };
                    arr.broadcast(ctx, report);
                }
            }
            DriverMsg::Ids(mut ids) => {
                ids.sort_unstable();
                ctx.publish("ids", &ids);
                self.results += 1;
            }
            DriverMsg::Moves(m) => {
                ctx.publish("moves", &m);
                self.results += 1;
            }
            DriverMsg::Sum(s) => {
                ctx.publish("sum", &s);
                if self.init.script == (Script::Collectives { recount: true }) {
                    arr.done_inserting(ctx);
                }
                let done = self.cb(ctx, e.placement);
                arr.broadcast(
                    ctx,
                    RoamerMsg::Where {
                        done,
                        mul: 5,
                        add: 2,
                    },
                );
            }
            DriverMsg::Placement(p) => {
                self.placements += 1;
                ctx.publish(&format!("placement{}", self.placements), &p);
                if self.placements == 1 {
                    let done = self.cb(ctx, e.placement);
                    arr.broadcast(
                        ctx,
                        RoamerMsg::Where {
                            done,
                            mul: 0,
                            add: 0,
                        },
                    );
                } else {
                    let done = self.cb(ctx, e.counts);
                    arr.broadcast(ctx, RoamerMsg::Count(done));
                }
            }
            DriverMsg::Counts(c) => {
                ctx.publish("counts", &c);
                ctx.exit();
            }
        }
        if let Script::Report { quiets } = self.init.script {
            if self.results == 2 && self.quiets == quiets {
                ctx.publish("quiets", &self.quiets);
                ctx.exit();
            }
        }
    }
}

/// Sends `count` items, one per handler, to elements its generator picks.
struct Streamer {
    init: StreamInit,
    rng: u64,
}

#[derive(Clone, Serialize, Deserialize)]
struct StreamInit {
    arr: ArrayProxy<Roamer, usize>,
    elements: usize,
    count: u64,
    roam: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum StreamMsg {
    Step(u64),
}

impl Chare for Streamer {
    type Init = StreamInit;
    type Msg = StreamMsg;
    fn create(init: StreamInit, ctx: &mut Ctx) -> Self {
        let rng = ctx.seed().wrapping_add(u64::from(ctx.my_pe()) << 40);
        Streamer { init, rng }
    }
    fn handle(&mut self, StreamMsg::Step(i): StreamMsg, ctx: &mut Ctx) {
        let to = splitmix64(&mut self.rng) as usize % self.init.elements;
        let id = u64::from(ctx.my_pe()) << 32 | i;
        let roam = self.init.roam;
        self.init.arr.send(ctx, &to, RoamerMsg::Item { id, roam });
        if i + 1 < self.init.count {
            // One item per handler, so items interleave with the elements' moves.
            let me: GroupProxy<Streamer> = ctx.this_group().expect("a member");
            me.send(ctx, ctx.my_pe(), StreamMsg::Step(i + 1));
        }
    }
}

fn registry() -> (Registry, Entries) {
    let mut reg = Registry::new();
    reg.migratable::<Roamer>("Roamer")
        .chare::<Driver>("Driver")
        .chare::<Streamer>("Streamer")
        .chare::<Fixed>("Fixed")
        .migratable::<Fragile>("Fragile")
        .chare::<Planter>("Planter")
        .chare::<Census>("Census")
        .migratable::<Restless>("Restless");
    let e = Entries {
        quiet: reg.entry("Driver::quiet", DriverMsg::Quiet),
        ids: reg.entry("Driver::ids", DriverMsg::Ids),
        moves: reg.entry("Driver::moves", DriverMsg::Moves),
        sum: reg.entry("Driver::sum", DriverMsg::Sum),
        placement: reg.entry("Driver::placement", DriverMsg::Placement),
        counts: reg.entry("Driver::counts", DriverMsg::Counts),
        census_quiet: reg.entry("Census::quiet", CensusMsg::Quiet),
        census_placement: reg.entry("Census::placement", CensusMsg::Placement),
    };
    (reg, e)
}

/// Every item id the streamers of a `p`-PE job send.
fn all_ids(p: u32, count: u64) -> Vec<u64> {
    let mut ids: Vec<u64> = (0..p)
        .flat_map(|pe| (0..count).map(move |i| u64::from(pe) << 32 | i))
        .collect();
    ids.sort_unstable();
    ids
}

/// Items streamed from every PE at elements that move at random (one move per three
/// items, seeded) each arrive exactly once, and the elements' state moves with them.
pub fn items_streamed_at_randomly_moving_elements_each_arrive_exactly_once(layer: Layer) {
    let p = pes(layer, 4);
    let report = stream(layer, p, 1);
    assert_eq!(report.output::<Vec<u64>>("ids"), Some(all_ids(p, COUNT)));
    let moves = report.output::<u64>("moves").expect("moves");
    if p > 1 {
        assert!(moves > 10, "{moves} moves on {layer:?}");
    }
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    assert!(report.per_pe.iter().all(|pe| pe.unprocessed == 0));
}

/// Items each streamer sends in `stream`.
const COUNT: u64 = 60;

/// Stream `COUNT` items from every PE at 24 elements that move one item in three.
pub fn stream(layer: Layer, p: u32, seed: u64) -> RunReport {
    const ELEMENTS: usize = 24;
    let (reg, e) = registry();
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.seed = seed;
    // On sim, random extra latency reorders messages on purpose (no other layer has it).
    if layer == Layer::Sim {
        cfg.sim.jitter_us = Some(3.0);
    }
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Roamer>(ELEMENTS, 7, ArrayMap::Block);
            let script = Script::Report { quiets: 1 };
            let driver = ctx.create_chare::<Driver>(DriverInit { arr, script, e }, 0);
            let init = StreamInit {
                arr,
                elements: ELEMENTS,
                count: COUNT,
                roam: 3,
            };
            ctx.create_group::<Streamer>(init)
                .broadcast(ctx, StreamMsg::Step(0));
            ctx.start_quiescence(Callback::chare(&driver, e.quiet));
        })
        .expect("run")
}

/// Start the collectives script on `arr`: a driver on PE 0, then a broadcast asking
/// every element to join a sum and move to PE `(index * mul + 1) % pes`.
fn start_collectives(
    ctx: &mut Ctx,
    arr: ArrayProxy<Roamer, usize>,
    e: Entries,
    recount: bool,
    mul: usize,
) {
    let script = Script::Collectives { recount };
    let driver = ctx.create_chare::<Driver>(DriverInit { arr, script, e }, 0);
    let done = Callback::chare(&driver, e.sum);
    arr.broadcast(ctx, RoamerMsg::SumThenMove { done, mul, add: 1 });
}

/// What the collectives script over `elements` elements on `p` PEs must publish:
/// the sum of the indices, both placements (the first by `mul`, the second by 5 and
/// 2) and three broadcasts received once by every element, without errors.
fn check_collectives(report: &RunReport, elements: usize, p: usize, mul: usize) {
    let n = elements as u64;
    assert_eq!(report.output::<u64>("sum"), Some(n * (n - 1) / 2));
    let placed = |mul: usize, add: usize| -> Vec<u64> {
        (0..elements)
            .map(|i| ((i * mul + add) % p) as u64)
            .collect()
    };
    assert_eq!(
        report.output::<Vec<u64>>("placement1"),
        Some(placed(mul, 1))
    );
    assert_eq!(report.output::<Vec<u64>>("placement2"), Some(placed(5, 2)));
    // Three broadcasts, each received once by every element.
    assert_eq!(report.output::<Vec<u64>>("counts"), Some(vec![3; elements]));
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// Reductions started just before elements move, broadcasts that overtake moves and
/// those after them count every element exactly once, at its new PE.
pub fn reductions_and_broadcasts_count_each_element_once_across_moves(layer: Layer) {
    const ELEMENTS: usize = 10;
    let p = pes(layer, 4) as usize;
    let (reg, e) = registry();
    let report = Runtime::new(reg, config(layer, p as u32, ErrorPolicy::Abort))
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Roamer>(ELEMENTS, 1, ArrayMap::Block);
            start_collectives(ctx, arr, e, false, 3);
        })
        .expect("run");
    check_collectives(&report, ELEMENTS, p, 3);
}

/// Elements hop along routes that leave home, come back and go on (so old PEs
/// forward to PEs that forward again) while items stream at them; quiescence,
/// asked for twice at the start, fires once per request and only after the last hop.
pub fn quiescence_waits_for_chains_of_moves_and_forwarding(layer: Layer) {
    const ELEMENTS: usize = 3;
    const HOPS: usize = 9;
    const COUNT: u64 = 40;
    let p = pes(layer, 4);
    let (reg, e) = registry();
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    if layer == Layer::Sim {
        cfg.sim.jitter_us = Some(2.0);
    }
    // Element i starts at home i % p and visits home + 1, + 2, ..., wrapping around.
    let route =
        move |i: usize| -> Vec<u32> { (1..=HOPS).map(|h| ((i + h) % p as usize) as u32).collect() };
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Roamer>(ELEMENTS, 3, ArrayMap::RoundRobin);
            let script = Script::Report { quiets: 2 };
            let driver = ctx.create_chare::<Driver>(DriverInit { arr, script, e }, 0);
            for i in 0..ELEMENTS {
                arr.send(ctx, &i, RoamerMsg::Hop(route(i)));
            }
            let init = StreamInit {
                arr,
                elements: ELEMENTS,
                count: COUNT,
                roam: 0,
            };
            ctx.create_group::<Streamer>(init)
                .broadcast(ctx, StreamMsg::Step(0));
            ctx.start_quiescence(Callback::chare(&driver, e.quiet));
            ctx.start_quiescence(Callback::chare(&driver, e.quiet));
        })
        .expect("run");
    assert_eq!(report.output::<u32>("quiets"), Some(2));
    assert_eq!(report.output::<Vec<u64>>("ids"), Some(all_ids(p, COUNT)));
    // A hop to the PE an element is on is no move.
    let moves: u64 = (0..ELEMENTS)
        .map(|i| {
            let mut at = (i % p as usize) as u32;
            route(i)
                .into_iter()
                .filter(|&to| std::mem::replace(&mut at, to) != to)
                .count() as u64
        })
        .sum();
    assert_eq!(report.output::<u64>("moves"), Some(moves));
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// Elements inserted after creation move like any other, and a `done_inserting`
/// while they move still counts each exactly once (at its home).
pub fn inserted_elements_move_and_a_recount_while_moving_counts_each_once(layer: Layer) {
    const ELEMENTS: usize = 7;
    let p = pes(layer, 3) as usize;
    let (reg, e) = registry();
    let report = Runtime::new(reg, config(layer, p as u32, ErrorPolicy::Abort))
        .run(move |ctx| {
            let arr: ArrayProxy<Roamer, usize> =
                ctx.create_array(Vec::new(), 5, ArrayMap::RoundRobin);
            for i in 0..ELEMENTS {
                arr.insert(ctx, i, 5);
            }
            arr.done_inserting(ctx);
            start_collectives(ctx, arr, e, true, 2);
        })
        .expect("run");
    check_collectives(&report, ELEMENTS, p, 2);
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "items_streamed_at_randomly_moving_elements_each_arrive_exactly_once",
        items_streamed_at_randomly_moving_elements_each_arrive_exactly_once,
    ),
    (
        "reductions_and_broadcasts_count_each_element_once_across_moves",
        reductions_and_broadcasts_count_each_element_once_across_moves,
    ),
    (
        "inserted_elements_move_and_a_recount_while_moving_counts_each_once",
        inserted_elements_move_and_a_recount_while_moving_counts_each_once,
    ),
    (
        "quiescence_waits_for_chains_of_moves_and_forwarding",
        quiescence_waits_for_chains_of_moves_and_forwarding,
    ),
    (
        "bad_moves_are_clear_errors_and_lose_nothing",
        bad_moves_are_clear_errors_and_lose_nothing,
    ),
    (
        "an_element_lost_in_transit_is_reported_with_its_messages",
        an_element_lost_in_transit_is_reported_with_its_messages,
    ),
    (
        "an_element_inserted_before_its_pe_knew_the_array_lives_at_home",
        an_element_inserted_before_its_pe_knew_the_array_lives_at_home,
    ),
    (
        "an_index_is_never_inserted_twice_even_while_its_element_is_away",
        an_index_is_never_inserted_twice_even_while_its_element_is_away,
    ),
    (
        "moving_from_create_works_and_from_about_to_migrate_is_refused",
        moving_from_create_works_and_from_about_to_migrate_is_refused,
    ),
];
