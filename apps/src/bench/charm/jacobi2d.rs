//! `chorus-bench charm-jacobi2d`: Charm++'s `examples/charm++/jacobi2d-2d-decomposition`.
//! A `--size` square grid (edges held at 1.0, the rest starting at 0.0) split into
//! `--block` square blocks of a 2-D array; each iteration a block sends its four
//! edges to its neighbours, applies the 5-point stencil once all ghosts are in, and
//! joins a logical-and reduction of "my largest change is at most 0.004" whose
//! result every block receives; the run stops on convergence or after
//! `--max-iterations`. Prints the original's "Finish due to ..." line. Checks the
//! final grid bit for bit (an xor of every cell's bits) and the iteration count
//! against a serial run of the same stencil.

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{mix64, Reducer, Registry, Runtime};
use chorus_core::{ArrayMap, ArrayProxy, Callback, Chare, ChareProxy, Config, Ctx, Entry};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The original's convergence threshold.
pub const THRESHOLD: f64 = 0.004;

/// The flags of `chorus-bench charm-jacobi2d` (the original's `[array_size]
/// [block_size] maxiterations`; its Makefile's test runs 32 16).
#[derive(Debug, Clone, clap::Args)]
pub struct JacobiArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi build).
    #[command(flatten)]
    pub config: Config,
    /// Cells along each side of the grid.
    #[arg(long, default_value_t = 32)]
    pub size: usize,
    /// Cells along each side of a block (must divide --size).
    #[arg(long, default_value_t = 16)]
    pub block: usize,
    /// Iterations at most.
    #[arg(long, default_value_t = 100)]
    pub max_iterations: u32,
    /// Print one JSON object instead of the original's line.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The run measured.
#[derive(Debug, Clone, Serialize)]
pub struct JacobiReport {
    /// Iterations run.
    pub iterations: u32,
    /// Whether it stopped by convergence.
    pub converged: bool,
    /// Seconds from the array's creation to the end.
    pub total_s: f64,
    /// The xor of every cell's bits, equal to the serial run's.
    pub checksum: u64,
}

/// Where a ghost row or column came from, seen from its receiver.
#[derive(Clone, Copy, Serialize, Deserialize)]
enum Side {
    Left,
    Right,
    Top,
    Bottom,
}

/// A block of `b` x `b` cells with a ring of ghosts, as the original's.
struct Block {
    grid: Grid,
    main: ChareProxy<Main>,
    entries: Entries,
    max: u32,
    iteration: u32,
    ghosts: u32,
    /// Ghosts of the next iteration that came early (at most one per side).
    early: Vec<(u32, Side, Vec<f64>)>,
}

/// The block's cells (x, y), 0 and b + 1 being ghosts, and which of its sides are
/// the grid's edges.
struct Grid {
    b: usize,
    t: Vec<f64>,
    next: Vec<f64>,
    at: (usize, usize),
    chares: usize,
}

impl Grid {
    fn new(b: usize, at: (usize, usize), chares: usize) -> Self {
        let mut g = Grid {
            b,
            t: vec![0.0; (b + 2) * (b + 2)],
            next: Vec::new(),
            at,
            chares,
        };
        for x in 1..=b {
            for y in 1..=b {
                if g.fixed(x, y) {
                    let c = g.i(x, y);
                    g.t[c] = 1.0;
                }
            }
        }
        g.next = g.t.clone();
        g
    }
    fn i(&self, x: usize, y: usize) -> usize {
        x * (self.b + 2) + y
    }
    /// A cell on the grid's edge (held at 1.0, never computed).
    fn fixed(&self, x: usize, y: usize) -> bool {
        let last = self.chares - 1;
        (self.at.0 == 0 && x == 1)
            || (self.at.0 == last && x == self.b)
            || (self.at.1 == 0 && y == 1)
            || (self.at.1 == last && y == self.b)
    }
    fn neighbours(&self) -> u32 {
        let last = self.chares - 1;
        [
            self.at.0 > 0,
            self.at.0 < last,
            self.at.1 > 0,
            self.at.1 < last,
        ]
        .iter()
        .filter(|&&b| b)
        .count() as u32
    }
    fn edge(&self, side: Side) -> Vec<f64> {
        let b = self.b;
        (1..=b)
            .map(|k| match side {
                Side::Left => self.t[self.i(1, k)],
                Side::Right => self.t[self.i(b, k)],
                Side::Top => self.t[self.i(k, 1)],
                Side::Bottom => self.t[self.i(k, b)],
            })
            .collect()
    }
    /// Put a neighbour's edge into the ghost ring on `side` (the receiver's side).
    fn ghost(&mut self, side: Side, g: &[f64]) {
        let b = self.b;
        for (k, &v) in (1..=b).zip(g) {
            let at = match side {
                Side::Left => self.i(0, k),
                Side::Right => self.i(b + 1, k),
                Side::Top => self.i(k, 0),
                Side::Bottom => self.i(k, b + 1),
            };
            self.t[at] = v;
        }
    }
    /// One stencil step over the computed cells; the largest change.
    fn step(&mut self) -> f64 {
        let mut max = 0.0f64;
        for x in 1..=self.b {
            for y in 1..=self.b {
                if self.fixed(x, y) {
                    continue;
                }
                let (c, w) = (self.i(x, y), self.b + 2);
                let v = (self.t[c] + self.t[c - w] + self.t[c + w] + self.t[c - 1] + self.t[c + 1])
                    * 0.2;
                max = max.max((v - self.t[c]).abs());
                self.next[c] = v;
            }
        }
        std::mem::swap(&mut self.t, &mut self.next);
        max
    }
    fn checksum(&self) -> u64 {
        let mut x = 0;
        for i in 1..=self.b {
            for j in 1..=self.b {
                let (gx, gy) = (self.at.0 * self.b + i, self.at.1 * self.b + j);
                x ^= cell_hash(gx, gy, self.t[self.i(i, j)]);
            }
        }
        x
    }
}

/// One cell's part of the checksum: its value's bits hashed with its place, so
/// that the xor over the grid is order-free yet does not cancel across the grid's
/// symmetries.
fn cell_hash(gx: usize, gy: usize, v: f64) -> u64 {
    mix64(v.to_bits() ^ mix64((gx as u64) << 32 | gy as u64))
}

/// The entries the blocks' reductions reach.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Entries {
    converged: Entry<Block, bool>,
    checksum: Entry<Main, u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum BlockMsg {
    Begin,
    Ghost {
        iteration: u32,
        side: Side,
        cells: Vec<f64>,
    },
    Converged(bool),
}

impl Block {
    fn begin(&mut self, ctx: &mut Ctx) {
        let Some(arr) = ctx.this_array::<Block, (usize, usize)>() else {
            return;
        };
        self.iteration += 1;
        self.ghosts = 0;
        let (x, y) = self.grid.at;
        let last = self.grid.chares - 1;
        let it = self.iteration;
        let sends = [
            (x > 0, (x.wrapping_sub(1), y), Side::Left, Side::Right),
            (x < last, (x + 1, y), Side::Right, Side::Left),
            (y > 0, (x, y.wrapping_sub(1)), Side::Top, Side::Bottom),
            (y < last, (x, y + 1), Side::Bottom, Side::Top),
        ];
        for (exists, to, mine, theirs) in sends {
            if exists {
                let cells = self.grid.edge(mine);
                arr.send(
                    ctx,
                    &to,
                    BlockMsg::Ghost {
                        iteration: it,
                        side: theirs,
                        cells,
                    },
                );
            }
        }
        for (_, side, cells) in std::mem::take(&mut self.early) {
            self.take_ghost(side, &cells);
        }
        self.compute_if_ready(ctx);
    }

    fn take_ghost(&mut self, side: Side, cells: &[f64]) {
        self.grid.ghost(side, cells);
        self.ghosts += 1;
    }

    fn compute_if_ready(&mut self, ctx: &mut Ctx) {
        if self.ghosts < self.grid.neighbours() {
            return;
        }
        self.ghosts = u32::MAX;
        let conv = self.grid.step() <= THRESHOLD;
        if let Some(arr) = ctx.this_array::<Block, (usize, usize)>() {
            let cb = Callback::array_all(&arr, self.entries.converged);
            ctx.contribute(conv, Reducer::And, cb);
        }
    }
}

/// Block side, blocks per side, max iterations, the main chare, the entries.
type BlockInit = (usize, usize, u32, ChareProxy<Main>, Entries);

impl Chare for Block {
    type Init = BlockInit;
    type Msg = BlockMsg;
    fn create((b, chares, max, main, entries): Self::Init, ctx: &mut Ctx) -> Self {
        let at = ctx.this_index_2d().unwrap_or((0, 0));
        let grid = Grid::new(b, at, chares);
        Block {
            grid,
            main,
            entries,
            max,
            iteration: 0,
            ghosts: 0,
            early: Vec::new(),
        }
    }
    fn handle(&mut self, msg: BlockMsg, ctx: &mut Ctx) {
        match msg {
            BlockMsg::Begin => self.begin(ctx),
            BlockMsg::Ghost {
                iteration,
                side,
                cells,
            } if iteration == self.iteration && self.ghosts != u32::MAX => {
                self.take_ghost(side, &cells);
                self.compute_if_ready(ctx);
            }
            BlockMsg::Ghost {
                iteration,
                side,
                cells,
            } => self.early.push((iteration, side, cells)),
            BlockMsg::Converged(done) => {
                if done || self.iteration >= self.max {
                    if self.grid.at == (0, 0) {
                        self.main.send(
                            ctx,
                            MainMsg::Done {
                                iterations: self.iteration,
                                converged: done,
                            },
                        );
                    }
                    let cb = Callback::chare(&self.main, self.entries.checksum);
                    ctx.contribute(self.grid.checksum(), Reducer::BitXor, cb);
                } else {
                    self.begin(ctx);
                }
            }
        }
    }
}

/// Creates the array, times the run, and keeps the end's figures.
struct Main {
    init: (usize, usize, u32, Entries),
    start: f64,
    done: Option<(u32, bool, f64)>,
    checksum: Option<u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Go,
    Done { iterations: u32, converged: bool },
    Checksum(u64),
}

impl Main {
    fn finish_when_both(&mut self, ctx: &mut Ctx) {
        if let (Some((iterations, converged, s)), Some(x)) = (self.done, self.checksum) {
            ctx.publish("result", &(iterations, converged, s, x));
            ctx.exit();
        }
    }
}

impl Chare for Main {
    /// Block side, blocks per side, max iterations, the entries.
    type Init = (usize, usize, u32, Entries);
    type Msg = MainMsg;
    fn create(init: Self::Init, _: &mut Ctx) -> Self {
        Main {
            init,
            start: 0.0,
            done: None,
            checksum: None,
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Go => {
                let Some(me) = ctx.this_chare::<Main>() else {
                    return;
                };
                let (b, chares, max, entries) = self.init;
                self.start = ctx.now();
                let init = (b, chares, max, me, entries);
                let arr: ArrayProxy<Block, (usize, usize)> =
                    ctx.create_array_2d((chares, chares), init, ArrayMap::Block);
                arr.broadcast(ctx, BlockMsg::Begin);
            }
            MainMsg::Done {
                iterations,
                converged,
            } => {
                self.done = Some((iterations, converged, ctx.now() - self.start));
                self.finish_when_both(ctx);
            }
            MainMsg::Checksum(x) => {
                self.checksum = Some(x);
                self.finish_when_both(ctx);
            }
        }
    }
}

/// The same stencil over the whole grid in one thread: iterations and checksum.
pub fn serial(size: usize, max: u32) -> (u32, u64) {
    let w = size + 2;
    let fixed = |x: usize, y: usize| x == 1 || y == 1 || x == size || y == size;
    let mut t = vec![0.0f64; w * w];
    for x in 1..=size {
        for y in 1..=size {
            if fixed(x, y) {
                t[x * w + y] = 1.0;
            }
        }
    }
    let mut next = t.clone();
    let mut it = 0;
    loop {
        it += 1;
        let mut err = 0.0f64;
        for x in 2..size {
            for y in 2..size {
                let c = x * w + y;
                let v = (t[c] + t[c - w] + t[c + w] + t[c - 1] + t[c + 1]) * 0.2;
                err = err.max((v - t[c]).abs());
                next[c] = v;
            }
        }
        std::mem::swap(&mut t, &mut next);
        if err <= THRESHOLD || it >= max {
            break;
        }
    }
    let mut x = 0;
    for i in 1..=size {
        for j in 1..=size {
            x ^= cell_hash(i, j, t[i * w + j]);
        }
    }
    (it, x)
}

/// The largest grid side a run takes.
const MAX_SIZE: usize = 1 << 14;

/// The parameters the original refuses too, and sizes beyond memory.
fn validate(size: usize, block: usize, max: u32) -> Result<(), CharmError> {
    if block == 0 || size < block || !size.is_multiple_of(block) || max == 0 {
        return Err(CharmError::Usage {
            bench: "charm-jacobi2d",
            what: "give --block dividing --size, and --max-iterations above 0".into(),
        });
    }
    // Two grids of doubles (the blocks and the serial check): 4 GiB at 16,384.
    super::at_most("charm-jacobi2d", "--size", size, MAX_SIZE)
}

impl JacobiArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.size, self.block, self.max_iterations).map_err(|e| e.to_string())
    }
}

/// Run the stencil on the job `config` describes and check it against [`serial`].
pub fn run(
    config: &Config,
    size: usize,
    block: usize,
    max: u32,
) -> Result<JacobiReport, CharmError> {
    validate(size, block, max)?;
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Block>("Block");
    let entries = Entries {
        converged: reg.entry::<Block, bool>("Block::converged", BlockMsg::Converged),
        checksum: reg.entry::<Main, u64>("Main::checksum", MainMsg::Checksum),
    };
    let chares = size / block;
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((block, chares, max, entries), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    let (iterations, converged, total_s, checksum): (u32, bool, f64, u64) =
        output(&report, "result", "the run's end")?;
    let (want_it, want_sum) = serial(size, max);
    if (iterations, checksum) != (want_it, want_sum) {
        return Err(CharmError::Check {
            bench: "charm-jacobi2d",
            what: format!("{iterations} iterations and checksum {checksum:016x}; the serial run gives {want_it} and {want_sum:016x}"),
        });
    }
    Ok(JacobiReport {
        iterations,
        converged,
        total_s,
        checksum,
    })
}

/// `chorus-bench charm-jacobi2d`.
pub fn measure(args: &JacobiArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(&args.config, args.size, args.block, args.max_iterations)
    })
}

impl Report for JacobiReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        if self.converged {
            format!(
                "Finish due to convergence, iterations {}, total time {:.3} seconds. \n",
                self.iterations, self.total_s
            )
        } else {
            format!(
                "Finish due to max iterations {}, total time {:.3} seconds. \n",
                self.iterations, self.total_s
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_steps_as_the_serial_grid() {
        let mut g = Grid::new(12, (0, 0), 1);
        let mut it = 0;
        while it < 500 {
            it += 1;
            if g.step() <= THRESHOLD {
                break;
            }
        }
        assert_eq!(serial(12, 500), (it, g.checksum()));
    }

    #[test]
    fn a_different_grid_gives_a_different_checksum() {
        assert_ne!(serial(12, 5).1, serial(12, 6).1);
    }

    #[test]
    fn a_corner_block_has_two_neighbours_and_fixed_edges() {
        let g = Grid::new(4, (0, 0), 3);
        assert_eq!(g.neighbours(), 2);
        assert!(g.fixed(1, 3) && g.fixed(3, 1) && !g.fixed(4, 4));
        assert_eq!(Grid::new(4, (1, 1), 3).neighbours(), 4);
    }
}
