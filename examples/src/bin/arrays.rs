//! arrays: a 2-D chare array whose elements do some work, the even rows move to the
//! next PE (`ctx.migrate_me`), and a sum reduction shows that every element was
//! counted exactly once, the moved ones from the PE they moved to.
//!
//! ```sh
//! cargo run -p chorus-examples --bin arrays -- --pes 4
//! cargo run -p chorus-examples --bin arrays -- --layer sim --pes 16
//! ```
//!
//! The first prints `6 x 4 = 24 elements, 24 counted, 12 moves`, `index sum 276
//! (expected 276)`, `elements per PE after the moves: [4, 6, 8, 6]` (6 each before).

use chorus_core::{ArrayMap, Callback, Chare, Config, Ctx, Entry, Migratable, Reducer};
use chorus_core::{Registry, Runtime};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;
use std::time::Duration;

/// The array's shape: rows (first index) by columns.
const ROWS: usize = 6;
const COLS: usize = 4;

/// One element. Its whole state travels when it moves, so it derives serde and is
/// registered with `Registry::migratable` (plain `chare` types cannot move).
#[derive(Serialize, Deserialize)]
struct Cell {
    /// Where the count goes (the main chare).
    done: Callback,
    /// Arrivals on a new PE, counted there: a count that survives the trip is
    /// proof that the state came along.
    moves: u64,
}

impl Cell {
    /// Contribute to the count from the PE this element is on now: one vector,
    /// summed element-wise over the array: [1 per element, its moves, its
    /// row-major index, then a 1 in the slot of its PE].
    fn count_me(&self, ctx: &mut Ctx) {
        let (row, col) = ctx.this_index_2d().expect("a 2-D element");
        let mut v = vec![1, self.moves, (row * COLS + col) as u64];
        v.extend((0..ctx.num_pes()).map(|p| u64::from(p == ctx.my_pe() as usize)));
        ctx.contribute(v, Reducer::Sum, self.done.clone());
    }
}

impl Chare for Cell {
    type Init = Callback;
    /// The one entry: do the work, then maybe move.
    type Msg = ();

    fn create(done: Callback, _: &mut Ctx) -> Self {
        Cell { done, moves: 0 }
    }

    fn handle(&mut self, _step: (), ctx: &mut Ctx) {
        // The work: a stand-in, its cost declared to the runtime (threads sleep
        // for it, sim advances virtual time by it).
        ctx.work(Duration::from_micros(50));
        // Even rows move one PE up. The move happens once this handler returns; an
        // Err means it was refused and the element stayed.
        let (row, _) = ctx.this_index_2d().expect("a 2-D element");
        let (pe, npes) = (ctx.my_pe(), ctx.num_pes() as u32);
        if row % 2 == 0 && npes > 1 {
            match ctx.migrate_me((pe + 1) % npes) {
                Ok(()) => return, // counted on arrival, in `migrated`
                Err(e) => ctx.fail("arrays example", e),
            }
        }
        self.count_me(ctx);
    }
}

impl Migratable for Cell {
    // Runs on the new PE, before any message reaches the element there. The
    // reduction counts the element once wherever it contributes from.
    fn migrated(&mut self, ctx: &mut Ctx) {
        self.moves += 1;
        self.count_me(ctx);
    }
}

/// Starts the array and prints the count.
struct Main;

impl Chare for Main {
    /// The entry the count arrives at.
    type Init = Entry<Main, Vec<u64>>;
    type Msg = Vec<u64>;

    fn create(counted: Self::Init, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<Main>().expect("Main is a singleton chare");
        // Block places a contiguous run of elements on each PE (6 each on 4 PEs).
        let done = Callback::chare(&me, counted);
        let cells = ctx.create_array_2d::<Cell>((ROWS, COLS), done, ArrayMap::Block);
        cells.broadcast(ctx, ());
        Main
    }

    fn handle(&mut self, v: Vec<u64>, ctx: &mut Ctx) {
        // Counts and sums that match the array mean no element was missed or
        // counted twice, moved or not.
        let n = (ROWS * COLS) as u64;
        println!(
            "{ROWS} x {COLS} = {n} elements, {} counted, {} moves",
            v[0], v[1]
        );
        println!("index sum {} (expected {})", v[2], n * (n - 1) / 2);
        println!("elements per PE after the moves: {:?}", &v[3..]);
        ctx.exit();
    }
}

fn main() -> ExitCode {
    // --pes, --layer, --seed, --trace, ... and the CHORUS_* variables.
    let config = Config::from_args();
    let mut reg = Registry::new();
    reg.migratable::<Cell>("Cell").chare::<Main>("Main");
    let counted = reg.entry::<Main, Vec<u64>>("Main::counted", |v| v);
    let result = Runtime::new(reg, config).run(move |ctx| {
        ctx.create_chare::<Main>(counted, 0);
    });
    // The error, if any, printed once: `arrays: …`.
    chorus_core::exit_status(result)
}
