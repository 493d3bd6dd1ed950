//! A compute (the original's 6-D `Compute` array): the forces between one pair of
//! neighbouring cells, or within one cell. Each step it waits for both cells'
//! positions, computes the forces and sends each cell its share; at the load
//! balancing steps it calls `at_sync` and may move, the work the balancer spreads.

use super::cell::{Cell, CellMsg};
use super::physics::{self, Vec3, COMPUTES_PER_CELL, KAWAY, NUM_NEIGHBORS};
use super::{Entries, Main, Params};
use crate::balancing::resume_by_message;
use chorus_core::Reducer;
use chorus_core::{ArrayIndex, ArrayProxy, Callback, Chare, ChareProxy, Ctx, Migratable, Pe};
use serde::{Deserialize, Serialize};

/// A compute's index: the two cells' coordinates shifted by the reach (so none is
/// negative), as the original's six integers, and the box's cells per axis (which
/// the placement map reads; the same for every compute of a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ComputeIdx {
    /// The creating cell's coordinates plus the reach.
    pub a: [u8; 3],
    /// The other cell's coordinates plus the reach, as seen from `a`.
    pub b: [u8; 3],
    /// Cells per axis.
    pub dims: [u8; 3],
}

impl ArrayIndex for ComputeIdx {
    fn order_key(&self) -> u64 {
        let [a0, a1, a2] = self.a.map(u64::from);
        let [b0, b1, b2] = self.b.map(u64::from);
        (a0 << 40) | (a1 << 32) | (a2 << 24) | (b0 << 16) | (b1 << 8) | b2
    }
}

impl ComputeIdx {
    /// The 75 computes of the cell at `at`, by neighbourhood slot: from its own
    /// offset on a cell creates them, below it they are its neighbours'.
    pub fn of_cell(at: [usize; 3], dims: [usize; 3]) -> Vec<ComputeIdx> {
        (0..NUM_NEIGHBORS)
            .map(|num| {
                let d = physics::offset(num);
                let (a, b): ([i64; 3], [i64; 3]) = if num >= NUM_NEIGHBORS / 2 {
                    let a = std::array::from_fn(|k| at[k] as i64 + KAWAY[k]);
                    (a, std::array::from_fn(|k| a[k] + d[k]))
                } else {
                    let a = std::array::from_fn(|k| {
                        (at[k] as i64 + d[k]).rem_euclid(dims[k] as i64) + KAWAY[k]
                    });
                    (a, std::array::from_fn(|k| a[k] - d[k]))
                };
                ComputeIdx {
                    a: a.map(|v| v as u8),
                    b: b.map(|v| v as u8),
                    dims: dims.map(|v| v as u8),
                }
            })
            .collect()
    }

    /// Every compute of the box, each once (those the cells create).
    pub fn all(dims: [usize; 3]) -> Vec<ComputeIdx> {
        let cells = dims[0] * dims[1] * dims[2];
        (0..cells)
            .flat_map(|id| {
                let at = Params::coords_in(id, dims);
                ComputeIdx::of_cell(at, dims).split_off(NUM_NEIGHBORS / 2)
            })
            .collect()
    }

    /// Whether both cells are the same one (a self compute).
    fn is_self(&self) -> bool {
        self.a == self.b
    }

    /// The original's placement: cell c's computes go round robin from the PE after
    /// c's (the cells lie in contiguous blocks of ids per PE).
    pub fn home(&self, npes: usize) -> Pe {
        let dims = self.dims.map(usize::from);
        let creator: [usize; 3] =
            std::array::from_fn(|k| usize::from(self.a[k]) - KAWAY[k] as usize);
        let id = Params::id_in(creator, dims);
        let cells = (dims[0] * dims[1] * dims[2]).max(1);
        let cell_pe = id * npes / cells;
        let d = std::array::from_fn(|k| i64::from(self.b[k]) - i64::from(self.a[k]));
        let k = physics::slot(d) - NUM_NEIGHBORS / 2;
        ((cell_pe + 1 + k) % npes.max(1)) as Pe
    }
}

/// A cell's positions for one step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Positions {
    /// The step.
    pub step: u64,
    /// The cell's neighbourhood slot this compute is at (its forces come back with it).
    pub slot: u32,
    /// The cell's id.
    pub cell: u32,
    /// Its particles' positions.
    pub pos: Vec<Vec3>,
}

/// Messages of a compute.
#[derive(Clone, Serialize, Deserialize)]
pub enum ComputeMsg {
    /// A cell's positions.
    Positions(Positions),
    /// Go on after a balancing step.
    Resume,
}

/// What a compute starts from.
#[derive(Clone, Serialize, Deserialize)]
pub struct ComputeInit {
    /// The run's parameters.
    pub params: Params,
    /// The cells.
    pub cells: ArrayProxy<Cell, usize>,
    /// Where the energies go at the end.
    pub main: ChareProxy<Main>,
    /// The entries of the end's reductions.
    pub entries: Entries,
}

/// A compute and the step it is at.
#[derive(Serialize, Deserialize)]
pub struct Compute {
    init: ComputeInit,
    step: u64,
    /// The step's positions so far: at most two (a cell sends the next step's only
    /// after this compute's forces of this one reached it).
    inbox: Vec<Positions>,
    /// Between its `at_sync` and its resume (positions wait in the inbox).
    syncing: bool,
    /// Potential energy at the first step and at the last.
    energy: [f64; 2],
}

impl Chare for Compute {
    type Init = ComputeInit;
    type Msg = ComputeMsg;
    fn create(init: ComputeInit, _: &mut Ctx) -> Self {
        Compute {
            init,
            step: 1,
            inbox: Vec::with_capacity(2),
            syncing: false,
            energy: [0.0; 2],
        }
    }

    fn handle(&mut self, msg: ComputeMsg, ctx: &mut Ctx) {
        match msg {
            ComputeMsg::Positions(p) => {
                if p.step != self.step || self.inbox.len() >= 2 {
                    let at = self.step;
                    return ctx.fail(
                        "charm-leanmd",
                        format!("a compute at step {at} got positions of step {}", p.step),
                    );
                }
                self.inbox.push(p);
            }
            ComputeMsg::Resume => self.syncing = false,
        }
        self.try_compute(ctx);
    }
}

impl Migratable for Compute {
    fn resume_from_sync(&mut self, ctx: &mut Ctx) {
        resume_by_message::<Compute, ComputeIdx>(ctx, ComputeMsg::Resume);
    }
}

impl Compute {
    /// Once this step's positions are in, send each cell its forces.
    fn try_compute(&mut self, ctx: &mut Ctx) {
        let Some(me) = ctx.this_index::<ComputeIdx>() else {
            return ctx.fail("charm-leanmd", "a compute is not an array element");
        };
        let need = if me.is_self() { 1 } else { 2 };
        if self.syncing || self.inbox.len() < need {
            return;
        }
        let mut got = std::mem::take(&mut self.inbox);
        // The same order whatever came first, so every run gives the same sums.
        got.sort_by_key(|p| (p.cell, p.slot));
        let with_energy = self.step == 1 || self.step == self.init.params.steps;
        let energy = if let [one] = got.as_slice() {
            let (f, e) = physics::self_forces(&one.pos, with_energy);
            self.send(ctx, one, f);
            e
        } else {
            let dims = self.init.params.dims;
            let (c1, c2) = (
                Params::coords_in(got[0].cell as usize, dims),
                Params::coords_in(got[1].cell as usize, dims),
            );
            let mut first = got[0].pos.clone();
            physics::to_nearest_image(&mut first, c1, c2, dims);
            let (f1, f2, e) = physics::pair_forces(&first, &got[1].pos, with_energy);
            self.send(ctx, &got[0], f1);
            self.send(ctx, &got[1], f2);
            e
        };
        self.end_step(ctx, energy);
    }

    fn send(&self, ctx: &mut Ctx, to: &Positions, forces: Vec<Vec3>) {
        let msg = CellMsg::Forces {
            step: to.step,
            slot: to.slot,
            forces,
        };
        self.init.cells.send(ctx, &(to.cell as usize), msg);
    }

    /// Keep the energy of the first and last steps, then balance, go on or finish.
    fn end_step(&mut self, ctx: &mut Ctx, energy: f64) {
        let p = self.init.params;
        if self.step == 1 {
            self.energy[0] = energy;
        } else if self.step == p.steps {
            self.energy[1] = energy;
        }
        if self.step == p.steps {
            let cb = Callback::chare(&self.init.main, self.init.entries.computes);
            ctx.contribute(self.energy.to_vec(), Reducer::Concat, cb);
            return;
        }
        let balance = p.balances_after(self.step);
        self.step += 1;
        if balance {
            self.syncing = true;
            if let Err(e) = ctx.at_sync() {
                ctx.fail("charm-leanmd", e);
            }
        }
    }
}

/// Computes per cell (38) times the cells.
pub fn count(dims: [usize; 3]) -> usize {
    COMPUTES_PER_CELL * dims[0] * dims[1] * dims[2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn each_compute_is_named_by_its_two_cells_slots() {
        let dims = [3, 3, 3];
        let all = ComputeIdx::all(dims);
        assert_eq!(all.len(), count(dims));
        let mut uses: HashMap<ComputeIdx, usize> = all.iter().map(|&c| (c, 0)).collect();
        for id in 0..27 {
            for c in ComputeIdx::of_cell(Params::coords_in(id, dims), dims) {
                *uses.get_mut(&c).expect("a compute the cells create") += 1;
            }
        }
        // A self compute is one cell's; every other is its two cells'.
        assert!(uses
            .iter()
            .all(|(c, &n)| n == if c.is_self() { 1 } else { 2 }));
        let keys: std::collections::HashSet<u64> = all.iter().map(ArrayIndex::order_key).collect();
        assert_eq!(keys.len(), all.len());
    }

    #[test]
    fn computes_go_round_robin_from_the_pe_after_their_cell() {
        let dims = [3, 3, 3];
        let first = ComputeIdx::of_cell([0, 0, 0], dims)[NUM_NEIGHBORS / 2];
        assert!(first.is_self());
        assert_eq!(first.home(2), 1);
        let next = ComputeIdx::of_cell([0, 0, 0], dims)[NUM_NEIGHBORS / 2 + 1];
        assert_eq!(next.home(2), 0);
        // The last cell is on the last PE; its first compute wraps to PE 0.
        let last = ComputeIdx::of_cell([2, 2, 2], dims)[NUM_NEIGHBORS / 2];
        assert_eq!(last.home(4), 0);
    }
}
