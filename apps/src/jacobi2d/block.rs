//! One block of the grid: an array element that exchanges its edges with its four
//! neighbours, applies the stencil once it has them, and calls `at_sync` between
//! steps, going on (by a message to itself) in `resume_from_sync` wherever it then is.

use super::grid::{block_checksum, boundary, initial, is_hot, stencil};
use super::params::JacobiParams;
use crate::balancing::{resume_by_message, LoadLog, Results};
use crate::checkpointing::CheckpointPlan;
use chorus_core::{Callback, Chare, Ctx, Entry, Migratable, Reducer, Registry};
use serde::{Deserialize, Serialize};

/// A side of a block; a ghost named by a side holds the neighbour's cells there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// The row above.
    North = 0,
    /// The row below.
    South = 1,
    /// The column to the left.
    West = 2,
    /// The column to the right.
    East = 3,
}

const SIDES: [Side; 4] = [Side::North, Side::South, Side::West, Side::East];

impl Side {
    /// The side the neighbour there sees this block on.
    fn opposite(self) -> Side {
        match self {
            Side::North => Side::South,
            Side::South => Side::North,
            Side::West => Side::East,
            Side::East => Side::West,
        }
    }
}

/// What a block starts from.
#[derive(Clone, Serialize, Deserialize)]
pub struct BlockInit {
    /// The run's parameters.
    pub params: JacobiParams,
    /// Where the block's checksum and load go after the last step.
    pub results: Results,
    /// When the blocks checkpoint.
    pub plan: CheckpointPlan,
    /// The entries a checkpoint goes through.
    pub entries: BlockEntries,
}

/// The entries of a block that callbacks name: the checkpoint's.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct BlockEntries {
    /// Every block reached a checkpoint step (to block (0, 0)).
    reached: Entry<Block, u64>,
    /// The checkpoint is committed (to every block).
    saved: Entry<Block, ()>,
}

impl BlockEntries {
    /// Register the entries.
    pub fn register(reg: &mut Registry) -> Self {
        BlockEntries {
            reached: reg.entry::<Block, u64>("Block::reached", BlockMsg::Reached),
            saved: reg.entry::<Block, ()>("Block::saved", |()| BlockMsg::Saved),
        }
    }
}

/// Messages of a block.
#[derive(Clone, Serialize, Deserialize)]
pub enum BlockMsg {
    /// Begin the next step: the first, or the one after a balancing step.
    Step,
    /// A neighbour's edge for `step`, for this block's ghost at `side`.
    Ghost {
        /// The step the edge belongs to.
        step: u32,
        /// Which of this block's ghosts it fills.
        side: Side,
        /// The edge's cells, in row or column order.
        cells: Vec<f64>,
    },
    /// Every block reached the checkpoint step (the steps summed; to block (0, 0)).
    Reached(u64),
    /// The checkpoint is committed: go on.
    Saved,
    /// The job was restarted from a checkpoint: check its parameters, take the new
    /// job's plan, and go on.
    Restart {
        /// The new job's parameters (the saved ones must equal them).
        params: JacobiParams,
        /// The new job's checkpoint plan.
        plan: CheckpointPlan,
    },
}

/// One block's state; all of it travels when the block migrates.
#[derive(Serialize, Deserialize)]
pub struct Block {
    p: JacobiParams,
    results: Results,
    /// The step being computed: its ghosts are gathered, then it is applied.
    step: u32,
    /// The block's cells, row-major.
    cells: Vec<f64>,
    /// The ghosts of `step`, by side.
    ghosts: [Option<Vec<f64>>; 4],
    /// Ghosts of `step + 1` from a neighbour a step ahead (never further: it needs
    /// this block's edges of `step + 1` to go on).
    early: [Option<Vec<f64>>; 4],
    /// This block sent its edges of `step`.
    sent: bool,
    /// It called `at_sync` and waits for its resume: it holds its step until then,
    /// though its edges for it went out before the sync.
    syncing: bool,
    /// It has joined the balancing step before step 0 that predicted loads allow.
    synced_first: bool,
    load: LoadLog,
    plan: CheckpointPlan,
    entries: BlockEntries,
}

impl Chare for Block {
    type Init = BlockInit;
    type Msg = BlockMsg;

    fn create(init: BlockInit, ctx: &mut Ctx) -> Self {
        let (bi, bj) = ctx.this_index::<(usize, usize)>().unwrap_or((0, 0));
        let b = init.params.block;
        let cells = (0..b * b)
            .map(|k| initial(bi * b + k / b, bj * b + k % b))
            .collect();
        Block {
            p: init.params,
            results: init.results,
            step: 0,
            cells,
            ghosts: Default::default(),
            early: Default::default(),
            sent: false,
            syncing: false,
            synced_first: false,
            load: LoadLog::default(),
            plan: init.plan,
            entries: init.entries,
        }
    }

    fn handle(&mut self, msg: BlockMsg, ctx: &mut Ctx) {
        match msg {
            BlockMsg::Step => self.begin_step(ctx),
            BlockMsg::Ghost { step, side, cells } => {
                let slot = match step {
                    s if s == self.step => &mut self.ghosts[side as usize],
                    s if s == self.step + 1 => &mut self.early[side as usize],
                    s => {
                        let at = self.step;
                        return ctx.fail("jacobi2d", format!("a ghost of step {s} at step {at}"));
                    }
                };
                *slot = Some(cells);
                self.try_step(ctx);
            }
            BlockMsg::Reached(_) => {
                let Some(array) = ctx.this_array::<Block, (usize, usize)>() else {
                    return ctx.fail("jacobi2d", "a block is not an array element");
                };
                let after = Callback::array_all(&array, self.entries.saved);
                ctx.checkpoint(&self.plan.dir, after);
            }
            BlockMsg::Saved => {
                if Self::index(ctx) == (0, 0) {
                    self.plan.note_saved(self.step);
                }
                self.begin_step(ctx);
            }
            BlockMsg::Restart { params, plan } => self.restart(params, plan, ctx),
        }
    }
}

impl Migratable for Block {
    fn resume_from_sync(&mut self, ctx: &mut Ctx) {
        resume_by_message::<Block, (usize, usize)>(ctx, BlockMsg::Step);
    }

    /// With `--predict-load`, the compute of the step it will run next, hot or not:
    /// the hot spot's drift is known, so the balancer places the blocks for where the
    /// spot will be rather than where it was (the measured load lags a move by a
    /// period). The ghosts' handling, the same for every block, is left out.
    fn predict_load(&self, measured_s: f64, ctx: &Ctx) -> f64 {
        if !self.p.predict_load {
            return measured_s;
        }
        let (bi, bj) = Self::index(ctx);
        let hot = is_hot(&self.p, bi, bj, self.step);
        self.p.block_work(hot).as_secs_f64()
    }
}

impl Block {
    fn index(ctx: &Ctx) -> (usize, usize) {
        ctx.this_index::<(usize, usize)>().unwrap_or((0, 0))
    }

    /// The neighbour at `side`, if the grid goes on there.
    fn neighbour(&self, (bi, bj): (usize, usize), side: Side) -> Option<(usize, usize)> {
        let n = self.p.blocks_per_side();
        match side {
            Side::North => bi.checked_sub(1).map(|i| (i, bj)),
            Side::South => (bi + 1 < n).then_some((bi + 1, bj)),
            Side::West => bj.checked_sub(1).map(|j| (bi, j)),
            Side::East => (bj + 1 < n).then_some((bi, bj + 1)),
        }
    }

    /// This block's cells along `side`.
    fn edge(&self, side: Side) -> Vec<f64> {
        let b = self.p.block;
        match side {
            Side::North => self.cells[..b].to_vec(),
            Side::South => self.cells[(b - 1) * b..].to_vec(),
            Side::West => (0..b).map(|r| self.cells[r * b]).collect(),
            Side::East => (0..b).map(|r| self.cells[r * b + b - 1]).collect(),
        }
    }

    /// Begin a step: after a resume, compute it once its ghosts are in; otherwise
    /// send its edges (and, with predicted loads, sync before step 0 first).
    fn begin_step(&mut self, ctx: &mut Ctx) {
        if self.syncing {
            self.syncing = false;
            return self.try_step(ctx);
        }
        if self.sent || self.step >= self.p.steps {
            return;
        }
        if self.p.predict_load && !self.synced_first {
            // The loads of step 0 are known before it runs: balance them first.
            self.synced_first = true;
            return self.sync(ctx);
        }
        self.send_edges(ctx);
        self.try_step(ctx);
    }

    /// Send this step's edges, then call `at_sync`: the edges travel while the
    /// balancing step runs (an element that moves takes the ghosts it got with it),
    /// so each block resumes with its ghosts in hand, and the runtime has seen
    /// which elements talk before it moves them, even before step 0.
    fn sync(&mut self, ctx: &mut Ctx) {
        self.send_edges(ctx);
        self.syncing = true;
        if let Err(e) = ctx.at_sync() {
            ctx.fail("jacobi2d", e);
        }
    }

    /// Send this step's edges to the neighbours (the grid's own boundary needs none).
    fn send_edges(&mut self, ctx: &mut Ctx) {
        let Some(array) = ctx.this_array::<Block, (usize, usize)>() else {
            return ctx.fail("jacobi2d", "a block is not an array element");
        };
        let me = Self::index(ctx);
        for side in SIDES {
            if let Some(n) = self.neighbour(me, side) {
                let msg = BlockMsg::Ghost {
                    step: self.step,
                    side: side.opposite(),
                    cells: self.edge(side),
                };
                array.send(ctx, &n, msg);
            }
        }
        self.sent = true;
    }

    /// Apply the stencil once the edges are sent and every ghost is here, then
    /// `at_sync` (or, after the last step, contribute the result).
    fn try_step(&mut self, ctx: &mut Ctx) {
        let me = Self::index(ctx);
        let ready = SIDES
            .iter()
            .all(|&s| self.neighbour(me, s).is_none() || self.ghosts[s as usize].is_some());
        if !self.sent || !ready || self.syncing {
            return;
        }
        self.apply(me);
        let hot = is_hot(&self.p, me.0, me.1, self.step);
        self.load.charge(ctx, self.p.block_work(hot));
        self.step += 1;
        self.ghosts = std::mem::take(&mut self.early);
        self.sent = false;
        let last = self.p.blocks_per_side() - 1;
        self.plan.die_if_due(self.step, me == (last, last));
        if me == (0, 0) {
            self.plan.note_progress(self.step);
        }
        if self.step == self.p.steps {
            let sum = block_checksum(me.0, me.1, &self.cells);
            self.results.contribute(ctx, sum, &self.load);
        } else if self.plan.due(self.step, self.p.steps) {
            let Some(array) = ctx.this_array::<Block, (usize, usize)>() else {
                return ctx.fail("jacobi2d", "a block is not an array element");
            };
            let zero = Callback::array_element(&array, &(0, 0), self.entries.reached);
            ctx.contribute(u64::from(self.step), Reducer::Sum, zero);
        } else {
            self.sync(ctx);
        }
    }

    /// Go on in a restarted job, if it asks for the computation that was saved.
    fn restart(&mut self, params: JacobiParams, plan: CheckpointPlan, ctx: &mut Ctx) {
        if params != self.p {
            let why = format!(
                "the checkpoint holds a run of {:?}, the restarted job asks for {params:?}: \
                 restart with the flags of the run that wrote it",
                self.p
            );
            return ctx.fail("jacobi2d", why);
        }
        self.plan = plan;
        // The loads were charged on the saved job's PEs.
        self.load.clear();
        self.begin_step(ctx);
    }

    /// One stencil step over the block, reading the ghosts (or the fixed boundary).
    fn apply(&mut self, me: (usize, usize)) {
        let b = self.p.block;
        let ghost = |s: Side, k: usize| -> f64 {
            match (self.neighbour(me, s), &self.ghosts[s as usize]) {
                (Some(_), Some(g)) => g[k],
                _ => boundary(s == Side::North),
            }
        };
        let c = &self.cells;
        let mut next = vec![0.0; b * b];
        for r in 0..b {
            for col in 0..b {
                let north = if r == 0 {
                    ghost(Side::North, col)
                } else {
                    c[(r - 1) * b + col]
                };
                let south = if r + 1 == b {
                    ghost(Side::South, col)
                } else {
                    c[(r + 1) * b + col]
                };
                let west = if col == 0 {
                    ghost(Side::West, r)
                } else {
                    c[r * b + col - 1]
                };
                let east = if col + 1 == b {
                    ghost(Side::East, r)
                } else {
                    c[r * b + col + 1]
                };
                next[r * b + col] = stencil(c[r * b + col], north, south, west, east);
            }
        }
        self.cells = next;
    }
}
