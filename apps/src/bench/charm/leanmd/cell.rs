//! A cell of the box (the original's 3-D `Cell` array, here indexed by its id
//! z + Z (y + Y x)): it holds the particles inside it, sends their positions to
//! the 75 computes of its neighbourhood each step, sums the forces they send back
//! in neighbourhood order, moves its particles, and every 20 steps hands the ones
//! that left to the cells they entered. Cells do not move (the original pins them
//! with `setMigratable(false)`); their time is the balancer's background load.

use super::compute::{Compute, ComputeIdx, ComputeMsg, Positions};
use super::physics::{self, Particle, Vec3, NUM_NEIGHBORS};
use super::{Entries, Main, MainMsg, Params};
use chorus_core::{ArrayProxy, Callback, Chare, ChareProxy, Ctx, Reducer};
use serde::{Deserialize, Serialize};

/// What a cell starts from.
#[derive(Clone, Serialize, Deserialize)]
pub struct CellInit {
    /// The run's parameters.
    pub params: Params,
    /// Where the energies go at the end.
    pub main: ChareProxy<Main>,
    /// The entries of the end's reductions.
    pub entries: Entries,
}

/// Messages of a cell.
#[derive(Clone, Serialize, Deserialize)]
pub enum CellMsg {
    /// Start the first step, with the computes' array.
    Begin(ArrayProxy<Compute, ComputeIdx>),
    /// A compute's forces on this cell's particles, for the positions sent from `slot`.
    Forces {
        /// The step they are for.
        step: u64,
        /// The neighbourhood slot the positions went out on.
        slot: u32,
        /// One force per particle, in the order the positions were sent.
        forces: Vec<Vec3>,
    },
    /// Particles that entered this cell, from the neighbour at `slot` (as the
    /// neighbour numbers its neighbourhood).
    Particles {
        /// The step of the exchange.
        step: u64,
        /// The sender's slot for this cell.
        slot: u32,
        /// The particles, their positions already brought into the box.
        particles: Vec<Particle>,
    },
}

/// A cell: its particles and the step it is at.
pub struct Cell {
    p: Params,
    id: usize,
    at: [usize; 3],
    main: ChareProxy<Main>,
    entries: Entries,
    computes: Option<ArrayProxy<Compute, ComputeIdx>>,
    particles: Vec<Particle>,
    step: u64,
    /// This step's forces per neighbourhood slot, summed in slot order once all are
    /// in (so the sum does not depend on arrival order); one per slot at most.
    forces: Vec<Option<Vec<Vec3>>>,
    got_forces: usize,
    /// This exchange's incoming particles per slot, appended in slot order.
    arrivals: Vec<Option<Vec<Particle>>>,
    got_arrivals: usize,
    /// Kinetic energy at the first step and at the last.
    energy: [f64; 2],
}

impl Chare for Cell {
    type Init = CellInit;
    type Msg = CellMsg;
    fn create(init: CellInit, ctx: &mut Ctx) -> Self {
        let id = ctx.this_index::<usize>().unwrap_or(0);
        let at = init.params.coords(id);
        Cell {
            particles: physics::initial_particles(id, at, init.params.cells()),
            p: init.params,
            id,
            at,
            main: init.main,
            entries: init.entries,
            computes: None,
            step: 1,
            forces: vec![None; NUM_NEIGHBORS],
            got_forces: 0,
            arrivals: vec![None; NUM_NEIGHBORS],
            got_arrivals: 0,
            energy: [0.0; 2],
        }
    }

    fn handle(&mut self, msg: CellMsg, ctx: &mut Ctx) {
        match msg {
            CellMsg::Begin(computes) => {
                self.computes = Some(computes);
                self.send_positions(ctx);
            }
            CellMsg::Forces { step, slot, forces } => {
                if step != self.step || forces.len() != self.particles.len() {
                    return ctx.fail(
                        "charm-leanmd",
                        format!(
                            "cell {} at step {} got {} forces of step {step}",
                            self.id,
                            self.step,
                            forces.len()
                        ),
                    );
                }
                if put(&mut self.forces, slot, forces, &mut self.got_forces).is_err() {
                    return ctx.fail(
                        "charm-leanmd",
                        format!("cell {}: two forces for slot {slot}", self.id),
                    );
                }
                if self.got_forces == NUM_NEIGHBORS {
                    self.apply_forces(ctx);
                }
            }
            CellMsg::Particles {
                step,
                slot,
                particles,
            } => {
                if step != self.step {
                    return ctx.fail(
                        "charm-leanmd",
                        format!(
                            "cell {} at step {} got particles of step {step}",
                            self.id, self.step
                        ),
                    );
                }
                if put(&mut self.arrivals, slot, particles, &mut self.got_arrivals).is_err() {
                    return ctx.fail(
                        "charm-leanmd",
                        format!("cell {}: two exchanges from slot {slot}", self.id),
                    );
                }
                self.try_end_exchange(ctx);
            }
        }
    }
}

/// Fill `slots[slot]` and count it; an error if it was full or out of range.
fn put<T>(slots: &mut [Option<T>], slot: u32, v: T, got: &mut usize) -> Result<(), ()> {
    match slots.get_mut(slot as usize) {
        Some(s @ None) => {
            *s = Some(v);
            *got += 1;
            Ok(())
        }
        _ => Err(()),
    }
}

impl Cell {
    /// Send this step's positions to every compute of the neighbourhood.
    fn send_positions(&mut self, ctx: &mut Ctx) {
        let Some(computes) = self.computes else {
            return ctx.fail("charm-leanmd", "a cell began without the computes");
        };
        let pos: Vec<Vec3> = self.particles.iter().map(|p| p.pos).collect();
        for (slot, to) in ComputeIdx::of_cell(self.at, self.p.dims).iter().enumerate() {
            let msg = Positions {
                step: self.step,
                slot: slot as u32,
                cell: self.id as u32,
                pos: pos.clone(),
            };
            computes.send(ctx, to, ComputeMsg::Positions(msg));
        }
    }

    /// Sum the step's forces in slot order and move every particle by them.
    fn apply_forces(&mut self, ctx: &mut Ctx) {
        let mut total = vec![[0.0; 3]; self.particles.len()];
        for f in self.forces.iter_mut().map(Option::take) {
            for (t, f) in total.iter_mut().zip(f.unwrap_or_default()) {
                for a in 0..3 {
                    t[a] += f[a];
                }
            }
        }
        self.got_forces = 0;
        let which = if self.step == 1 {
            Some(0)
        } else if self.step == self.p.steps {
            Some(1)
        } else {
            None
        };
        for (p, f) in self.particles.iter_mut().zip(total) {
            if let Some(w) = which {
                self.energy[w] += physics::kinetic(p);
            }
            physics::integrate(p, f);
        }
        if self.step.is_multiple_of(u64::from(physics::MIGRATE_STEPS)) {
            self.send_leavers(ctx);
            self.try_end_exchange(ctx);
        } else {
            self.end_step(ctx);
        }
    }

    /// Hand every particle outside this cell to the neighbour it entered (each
    /// neighbour gets a list, empty or not, so it knows when it has them all).
    fn send_leavers(&mut self, ctx: &mut Ctx) {
        let mut out: Vec<Vec<Particle>> = vec![Vec::new(); NUM_NEIGHBORS];
        let mut stay = Vec::with_capacity(self.particles.len());
        for mut p in self.particles.drain(..) {
            let d = physics::cell_offset(p.pos, self.at);
            if d == [0, 0, 0] {
                stay.push(p);
            } else if physics::in_reach(d) {
                physics::wrap_into_box(&mut p.pos, self.p.dims);
                out[physics::slot(d)].push(p);
            } else {
                // At most 0.1 angstrom a step per axis, 20 steps between exchanges:
                // a particle cannot pass a whole cell of 15.
                return ctx.fail(
                    "charm-leanmd",
                    format!("a particle of cell {} left its neighbourhood", self.id),
                );
            }
        }
        self.particles = stay;
        let Some(cells) = ctx.this_array::<Cell, usize>() else {
            return ctx.fail("charm-leanmd", "a cell is not an array element");
        };
        for (num, particles) in out.into_iter().enumerate() {
            let to = self.p.neighbour(self.at, physics::offset(num));
            let msg = CellMsg::Particles {
                step: self.step,
                slot: num as u32,
                particles,
            };
            cells.send(ctx, &to, msg);
        }
    }

    /// Once every neighbour's particles are in, take them (in slot order) and end the step.
    fn try_end_exchange(&mut self, ctx: &mut Ctx) {
        // Slot 37 comes from this cell itself, sent after its forces were applied,
        // so all 75 in means this step's own part is done too.
        if self.got_arrivals < NUM_NEIGHBORS {
            return;
        }
        for a in self.arrivals.iter_mut().map(Option::take) {
            self.particles.extend(a.unwrap_or_default());
        }
        self.got_arrivals = 0;
        self.end_step(ctx);
    }

    /// Go on to the next step, or after the last one report the energies.
    fn end_step(&mut self, ctx: &mut Ctx) {
        if self.step == self.p.steps {
            let values = vec![self.energy[0], self.energy[1], self.particles.len() as f64];
            let cb = Callback::chare(&self.main, self.entries.cells);
            ctx.contribute(values, Reducer::Concat, cb);
            if self.id == 0 {
                self.main.send(ctx, MainMsg::CellsDone);
            }
            return;
        }
        self.step += 1;
        self.send_positions(ctx);
    }
}
