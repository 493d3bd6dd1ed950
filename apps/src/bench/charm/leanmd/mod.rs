//! `chorus-bench charm-leanmd`: LeanMD (charmplusplus/leanmd), the Lennard-Jones
//! molecular-dynamics mini-app Charm++'s load balancers are shown on. The box is a
//! 3-D array of cells (3 x 3 x 3 by default, each 15 x 15 x 30 angstroms, starting
//! with 100 to 250 particles) and a 6-D array of computes, one per pair of cells
//! within the cutoff's reach (2, 2 and 1 cells along x, y and z: 38 per cell).
//! Each step a cell sends its positions to its 75 computes, each compute sends the
//! two cells their forces, and the cell moves its particles; every 20 steps
//! particles that left their cell move to their new one. From step
//! `--first-ldb-step` every `--ldb-period` steps the computes call `at_sync`, and
//! the `--array-lb` strategy (Charm++'s `+balancer GreedyLB` is `greedy`,
//! `RefineLB` is `refine`) moves them. At the end the kinetic and potential
//! energy of the first and last steps are summed and compared, as the original
//! does, and the particles counted (none may be lost or doubled).
//!
//! Unlike the original, sums (a cell's forces, its arrivals, the energies) are
//! taken in a fixed order, so a run's energies are the same bits on every layer,
//! PE count and balancing strategy.

pub mod cell;
pub mod compute;
pub mod physics;

use super::{output, show, CharmError};
use crate::bench::report::Report;
use cell::{Cell, CellInit, CellMsg};
use chorus_core::{ArrayMap, Chare, Config, Ctx, Entry, Registry, Runtime};
use compute::{Compute, ComputeIdx, ComputeInit};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The flags of `chorus-bench charm-leanmd` (the original's `dimX dimY dimZ steps
/// firstLBstep LBPeriod`, with its defaults).
#[derive(Debug, Clone, clap::Args)]
pub struct LeanmdArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi
    /// build); --array-lb greedy or refine as the original's +balancer.
    #[command(flatten)]
    pub config: Config,
    /// Cells along x.
    #[arg(long, default_value_t = 3)]
    pub dim_x: usize,
    /// Cells along y.
    #[arg(long, default_value_t = 3)]
    pub dim_y: usize,
    /// Cells along z.
    #[arg(long, default_value_t = 3)]
    pub dim_z: usize,
    /// Steps to simulate.
    #[arg(long, default_value_t = 1001)]
    pub steps: u64,
    /// The first step after which the computes are balanced.
    #[arg(long, default_value_t = 20)]
    pub first_ldb_step: u64,
    /// Steps between two balancing steps.
    #[arg(long, default_value_t = 20)]
    pub ldb_period: u64,
    /// Print one JSON object instead of the original's lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The run's shape, which every cell and compute knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// Cells per axis.
    pub dims: [usize; 3],
    /// Steps.
    pub steps: u64,
    /// First balancing step.
    pub first_ldb: u64,
    /// Steps between balancing steps (at least 1).
    pub ldb_period: u64,
}

impl Params {
    /// Cells in the box.
    pub fn cells(&self) -> usize {
        self.dims.iter().product()
    }
    /// The coordinates of cell `id`.
    pub fn coords(&self, id: usize) -> [usize; 3] {
        Self::coords_in(id, self.dims)
    }
    /// The coordinates of cell `id` in a box of `dims` (z fastest).
    pub fn coords_in(id: usize, dims: [usize; 3]) -> [usize; 3] {
        [
            id / (dims[1] * dims[2]),
            (id / dims[2]) % dims[1],
            id % dims[2],
        ]
    }
    /// The id of the cell at `at` in a box of `dims`.
    pub fn id_in(at: [usize; 3], dims: [usize; 3]) -> usize {
        at[2] + dims[2] * (at[1] + dims[1] * at[0])
    }
    /// The id of the cell `d` away from `at`, across the periodic box.
    pub fn neighbour(&self, at: [usize; 3], d: [i64; 3]) -> usize {
        let c =
            std::array::from_fn(|k| (at[k] as i64 + d[k]).rem_euclid(self.dims[k] as i64) as usize);
        Self::id_in(c, self.dims)
    }
    /// Whether the computes balance once `step` is done.
    pub fn balances_after(&self, step: u64) -> bool {
        step >= self.first_ldb && (step - self.first_ldb).is_multiple_of(self.ldb_period)
    }
    /// Particles in the box at the start.
    pub fn initial_particles(&self) -> usize {
        (0..self.cells())
            .map(|id| physics::initial_count(id, self.cells()))
            .sum()
    }
}

/// The entries the end's reductions reach.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct Entries {
    /// Each cell's kinetic energies and particle count, in cell order.
    pub cells: Entry<Main, Vec<f64>>,
    /// Each compute's potential energies, in compute order.
    pub computes: Entry<Main, Vec<f64>>,
}

/// What the run ends with.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Outcome {
    initial_energy: f64,
    final_energy: f64,
    particles: usize,
    total_s: f64,
}

/// Creates the arrays, times the run and sums the energies.
pub struct Main {
    params: Params,
    entries: Entries,
    compute_map: ArrayMap,
    start: f64,
    cells: Option<Vec<f64>>,
    computes: Option<Vec<f64>>,
}

/// Messages of the main chare.
#[derive(Clone, Serialize, Deserialize)]
pub enum MainMsg {
    /// Create the arrays and start.
    Go,
    /// The cells' energies and counts.
    Cells(Vec<f64>),
    /// The computes' energies.
    Computes(Vec<f64>),
    /// Cell 0 is done (the cells' reduction follows).
    CellsDone,
}

impl Chare for Main {
    /// Parameters, entries and the computes' placement map.
    type Init = (Params, Entries, ArrayMap);
    type Msg = MainMsg;
    fn create((params, entries, compute_map): Self::Init, _: &mut Ctx) -> Self {
        Main {
            params,
            entries,
            compute_map,
            start: 0.0,
            cells: None,
            computes: None,
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Go => self.start(ctx),
            MainMsg::Cells(v) => self.cells = Some(v),
            MainMsg::Computes(v) => self.computes = Some(v),
            MainMsg::CellsDone => {}
        }
        self.finish_when_both(ctx);
    }
}

impl Main {
    fn start(&mut self, ctx: &mut Ctx) {
        let Some(me) = ctx.this_chare::<Main>() else {
            return;
        };
        let (params, entries) = (self.params, self.entries);
        let cell_init = CellInit {
            params,
            main: me,
            entries,
        };
        // The original's CellMap: contiguous blocks of cell ids per PE.
        let cells = ctx.create_array_1d::<Cell>(params.cells(), cell_init, ArrayMap::Block);
        let compute_init = ComputeInit {
            params,
            cells,
            main: me,
            entries,
        };
        let computes = ctx.create_array::<Compute, ComputeIdx>(
            ComputeIdx::all(params.dims),
            compute_init,
            self.compute_map,
        );
        self.start = ctx.now();
        cells.broadcast(ctx, CellMsg::Begin(computes));
    }

    fn finish_when_both(&mut self, ctx: &mut Ctx) {
        let (Some(cells), Some(computes)) = (&self.cells, &self.computes) else {
            return;
        };
        let total_s = ctx.now() - self.start;
        let mut e = [0.0f64; 2];
        let mut particles = 0.0;
        for c in cells.chunks(3) {
            e[0] += c[0];
            e[1] += c[1];
            particles += c[2];
        }
        let (mut p0, mut p1) = (0.0, 0.0);
        for c in computes.chunks(2) {
            p0 += c[0];
            p1 += c[1];
        }
        let out = Outcome {
            initial_energy: e[0] + p0,
            final_energy: e[1] + p1,
            particles: particles as usize,
            total_s,
        };
        ctx.publish("result", &out);
        ctx.exit();
    }
}

/// The run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LeanmdReport {
    /// Cells per axis.
    pub dims: [usize; 3],
    /// Computes.
    pub computes: usize,
    /// Steps run.
    pub steps: u64,
    /// The first balancing step and the period.
    pub first_ldb_step: u64,
    /// Steps between balancing steps.
    pub ldb_period: u64,
    /// The array strategy (`--array-lb`).
    pub strategy: String,
    /// Kinetic plus potential energy at the first step.
    pub initial_energy: f64,
    /// The same at the last step.
    pub final_energy: f64,
    /// Particles at the end (as many as at the start).
    pub particles: usize,
    /// Seconds from the start of the first step to the energies' sum.
    pub total_s: f64,
    /// Milliseconds per step.
    pub ms_per_step: f64,
}

/// The most cells along an axis a run takes: 12 x 12 x 12 cells hold 65,664
/// computes and, during a step, up to 75 force lists of 250 particles per cell.
const MAX_DIM: usize = 12;

fn validate(a: &LeanmdArgs) -> Result<(), CharmError> {
    for (flag, v) in [
        ("--dim-x", a.dim_x),
        ("--dim-y", a.dim_y),
        ("--dim-z", a.dim_z),
    ] {
        if v == 0 {
            return Err(CharmError::Usage {
                bench: "charm-leanmd",
                what: format!("{flag} is 0; give 1 to {MAX_DIM} cells"),
            });
        }
        super::at_most("charm-leanmd", flag, v, MAX_DIM)?;
    }
    for (flag, v) in [("--steps", a.steps), ("--ldb-period", a.ldb_period)] {
        if v == 0 {
            return Err(CharmError::Usage {
                bench: "charm-leanmd",
                what: format!("{flag} is 0; give 1 or more"),
            });
        }
    }
    Ok(())
}

impl LeanmdArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self).map_err(|e| e.to_string())
    }
    /// The run's shape.
    pub fn params(&self) -> Params {
        Params {
            dims: [self.dim_x, self.dim_y, self.dim_z],
            steps: self.steps,
            first_ldb: self.first_ldb_step,
            ldb_period: self.ldb_period,
        }
    }
}

/// The original's compute placement (see [`ComputeIdx::home`]), as a registered map.
fn compute_home(idx: &ComputeIdx, npes: usize) -> chorus_core::Pe {
    idx.home(npes)
}

/// Run LeanMD on the job `config` describes; checks the energy and the particles.
pub fn run(config: &Config, args: &LeanmdArgs) -> Result<LeanmdReport, CharmError> {
    validate(args)?;
    let params = args.params();
    let mut reg = Registry::new();
    crate::balancing::register_array_strategies(&mut reg);
    reg.chare::<Main>("Main")
        .chare::<Cell>("Cell")
        .migratable::<Compute>("Compute");
    let map = reg.map::<ComputeIdx>("leanmd-computes", compute_home);
    let entries = Entries {
        cells: reg.entry::<Main, Vec<f64>>("Main::cells", MainMsg::Cells),
        computes: reg.entry::<Main, Vec<f64>>("Main::computes", MainMsg::Computes),
    };
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((params, entries, map), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    let out: Outcome = output(&report, "result", "the energies")?;
    check(&params, &out)?;
    Ok(LeanmdReport {
        dims: params.dims,
        computes: compute::count(params.dims),
        steps: params.steps,
        first_ldb_step: params.first_ldb,
        ldb_period: params.ldb_period,
        strategy: config.array_lb.clone(),
        initial_energy: out.initial_energy,
        final_energy: out.final_energy,
        particles: out.particles,
        total_s: out.total_s,
        ms_per_step: out.total_s * 1e3 / params.steps as f64,
    })
}

/// The original's energy test, and that every particle is still there once.
fn check(params: &Params, out: &Outcome) -> Result<(), CharmError> {
    let fail = |what: String| {
        Err(CharmError::Check {
            bench: "charm-leanmd",
            what,
        })
    };
    let want = params.initial_particles();
    if out.particles != want {
        return fail(format!(
            "{} particles at the end; {want} at the start",
            out.particles
        ));
    }
    let (i, f) = (out.initial_energy, out.final_energy);
    if !i.is_finite() || !f.is_finite() || (f - i).abs() > physics::ENERGY_VAR {
        return fail(format!(
            "Energy value has varied significantly from {i:E} to {f:E}; Energy conservation test failed for maximum allowed variation of {:E} units.",
            physics::ENERGY_VAR
        ));
    }
    Ok(())
}

/// `chorus-bench charm-leanmd`.
pub fn measure(args: &LeanmdArgs) -> Result<(), String> {
    show(&args.config, args.json, || run(&args.config, args))
}

impl Report for LeanmdReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        let [x, y, z] = self.dims;
        format!(
            "Cells: {x} X {y} X {z} .... created\nComputes: {} .... created\n\
             Steps: {}, first LB step {}, LB period {}, strategy {}\n\
             Energy at the first step {:E}, at the last {:E}; {} particles\n\n\
             Energy conservation test passed for maximum allowed variation of {:E} units.\n\
             SIMULATION SUCCESSFULL \nTotal application time {:.6} s\n",
            self.computes,
            self.steps,
            self.first_ldb_step,
            self.ldb_period,
            self.strategy,
            self.initial_energy,
            self.final_energy,
            self.particles,
            physics::ENERGY_VAR,
            self.total_s
        )
    }
}
