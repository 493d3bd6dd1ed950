//! queens: the solutions of 9 queens counted by a tree of chares spread over the PEs
//! (each places one more queen; close to the bottom a chare searches sequentially),
//! each PE's solutions counted by its member of a counter group; at quiescence main
//! gathers the counts, which must sum to 352.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, ChareProxy, Ctx, GroupProxy, Layer, Reducer, Registry};
use serde::{Deserialize, Serialize};

/// The board's size.
const NUM_QUEENS: usize = 9;
/// Fewer rows than this left: search sequentially.
const GRAIN: usize = 6;
/// The solutions of 9 queens.
const EXPECT: u64 = 352;

/// Whether a queen in `row`, `col` is attacked by the queens in rows before it.
fn consistent(queens: &[usize], row: usize, col: usize) -> bool {
    queens[..row]
        .iter()
        .enumerate()
        .all(|(x, &y)| y != col && row - x != col.abs_diff(y))
}

/// Solutions below a board with `row` rows placed.
fn sequential(queens: &mut [usize], row: usize) -> u64 {
    if row == NUM_QUEENS {
        return 1;
    }
    let mut found = 0;
    for col in 0..NUM_QUEENS {
        if consistent(queens, row, col) {
            queens[row] = col;
            found += sequential(queens, row + 1);
        }
    }
    found
}

/// A partial board: places the next queen in each free column as a new chare.
#[derive(Default)]
struct Queens;

#[chare]
impl Queens {
    #[init]
    fn new(
        mut queens: Vec<usize>,
        row: usize,
        counter: GroupProxy<Counter>,
        ctx: &mut Ctx,
    ) -> Self {
        let me = ctx.my_pe();
        if NUM_QUEENS - row < GRAIN {
            let found = sequential(&mut queens, row);
            counter.at(me).increment(ctx, found);
            return Queens;
        }
        let pes = ctx.num_pes();
        for col in (0..NUM_QUEENS).filter(|&c| consistent(&queens, row, c)) {
            let mut next = queens.clone();
            next[row] = col;
            let pe = (me as usize + col * 7 + row) % pes;
            ctx.create_chare::<Queens>((next, row + 1, counter), pe as u32);
        }
        Queens
    }
}

/// One PE's count of solutions.
#[derive(Default)]
struct Counter {
    count: u64,
}

#[chare]
impl Counter {
    #[entry]
    fn increment(&mut self, found: u64) {
        self.count += found;
    }
    /// Contribute this PE's count to `cb` and start again from 0.
    #[entry]
    fn send_counts(&mut self, cb: Callback, ctx: &mut Ctx) {
        ctx.contribute(std::mem::take(&mut self.count), Reducer::Sum, cb);
    }
}

/// Starts the search and gathers the counts once all is quiet.
#[derive(Serialize, Deserialize)]
struct QueensMain {
    counter: GroupProxy<Counter>,
    done: Callback,
}

#[chare]
impl QueensMain {
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let counter = ctx.create_group::<Counter>(());
        ctx.create_chare::<Queens>((vec![0; NUM_QUEENS], 0, counter), 0);
        let me: ChareProxy<QueensMain> = ctx.this_chare().expect("a chare");
        let quiet = me.quiescence_callback(ctx);
        ctx.start_quiescence(quiet);
        QueensMain { counter, done }
    }
    /// No message in flight: every solution is counted somewhere.
    #[entry(callback)]
    fn quiescence(&mut self, ctx: &mut Ctx) {
        self.counter.send_counts(ctx, self.done.clone());
    }
}

fn register(reg: &mut Registry) -> &mut Registry {
    Queens::register(reg);
    Counter::register(reg);
    QueensMain::register(reg)
}

/// 352 solutions on every PE count.
pub fn queens(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let found: u64 = run_for(layer, pes, register, |ctx, done| {
            ctx.create_chare::<QueensMain>(done, 0);
        });
        assert_eq!(found, EXPECT, "{pes} PEs");
    }
}
