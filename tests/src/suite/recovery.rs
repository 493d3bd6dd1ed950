//! In-memory double checkpoints and the rollback after PE failures: a ring stencil
//! over a 1-D array takes an in-memory checkpoint every `EVERY` steps; PEs that fail
//! between two of them (sim `--sim-kill`) are recovered from their buddies' copies
//! and the run ends with the uninterrupted run's exact checksum, while a PE lost
//! together with its buddy ends the job with a typed error naming both.

use crate::config;
use crate::suite::checkpoint::{sum_to_zero, RingCell};
use chorus_core::{
    ArrayMap, Callback, Chare, CheckpointError, Config, Ctx, Entry, ErrorPolicy, InjectedFailure,
    KillSpec, Layer, Migratable, Pe, Registry, RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};

/// Elements of the ring.
const ELEMENTS: usize = 256;
/// Steps of the whole computation.
const STEPS: u32 = 30;
/// Steps between two in-memory checkpoints.
const EVERY: u32 = 10;

/// The entries an element's callbacks name: the step count to element 0, the
/// resume after a checkpoint (true after a recovery), the final checksum.
type Entries = (Entry<Cell, u64>, Entry<Cell, bool>, Entry<Cell, u64>);

/// One cell of the ring.
#[derive(Serialize, Deserialize)]
struct Cell {
    cell: RingCell,
    /// Checkpoint every `EVERY` steps.
    checkpoint: bool,
    entries: Entries,
}

#[derive(Clone, Serialize, Deserialize)]
enum CellMsg {
    /// Send this step's value to both neighbours.
    Go,
    Value {
        step: u32,
        from_left: bool,
        v: u64,
    },
    /// Every element reached a checkpoint step (to element 0).
    Reached(u64),
    /// The checkpoint is taken (false) or the job rolled back to it (true).
    Resume(bool),
    /// The sum of the final values (to element 0).
    Done(u64),
}

impl Chare for Cell {
    type Init = (bool, Entries);
    type Msg = CellMsg;
    fn create((checkpoint, entries): (bool, Entries), ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().expect("a 1-D element");
        Cell {
            cell: RingCell::new(i, ELEMENTS),
            checkpoint,
            entries,
        }
    }

    fn handle(&mut self, msg: CellMsg, ctx: &mut Ctx) {
        match msg {
            CellMsg::Go | CellMsg::Resume(_) => self.send_value(ctx),
            CellMsg::Value { step, from_left, v } => {
                self.cell.arrived(step, from_left, v);
                self.advance(ctx);
            }
            CellMsg::Reached(_) => {
                let me = ctx.this_array::<Cell, usize>().expect("in the ring");
                ctx.checkpoint_in_memory(Callback::array_all(&me, self.entries.1));
            }
            CellMsg::Done(sum) => {
                ctx.publish("checksum", &sum);
                ctx.exit();
            }
        }
    }
}

impl Migratable for Cell {}

impl Cell {
    fn send_value(&mut self, ctx: &mut Ctx) {
        let me = ctx.this_array::<Cell, usize>().expect("in the ring");
        self.cell
            .send_to_neighbours(ctx, &me, |step, from_left, v| CellMsg::Value {
                step,
                from_left,
                v,
            });
        self.advance(ctx);
    }

    /// Take the step whose two values are in, as often as they are.
    fn advance(&mut self, ctx: &mut Ctx) {
        if !self.cell.try_step() {
            return;
        }
        let me = ctx.this_array::<Cell, usize>().expect("in the ring");
        let step = self.cell.step;
        if step == STEPS {
            sum_to_zero(ctx, &me, self.cell.value, self.entries.2);
        } else if self.checkpoint && step.is_multiple_of(EVERY) {
            sum_to_zero(ctx, &me, u64::from(step), self.entries.0);
        } else {
            self.send_value(ctx);
        }
    }
}

fn registry() -> (Registry, Entries) {
    let mut reg = Registry::new();
    reg.migratable::<Cell>("Cell");
    let reached = reg.entry::<Cell, u64>("reached", CellMsg::Reached);
    let resume = reg.entry::<Cell, bool>("resume", CellMsg::Resume);
    let done = reg.entry::<Cell, u64>("done", CellMsg::Done);
    (reg, (reached, resume, done))
}

/// The ring on `cfg`, checkpointing in memory if `checkpoint`.
pub fn run_ring(cfg: Config, checkpoint: bool) -> Result<RunReport, RuntimeError> {
    let (reg, entries) = registry();
    Runtime::new(reg, cfg).run(move |ctx| {
        let ring = ctx.create_array_1d::<Cell>(ELEMENTS, (checkpoint, entries), ArrayMap::Block);
        ring.broadcast(ctx, CellMsg::Go);
    })
}

/// The checksum a finished ring published.
pub fn checksum(report: &RunReport) -> u64 {
    report.output("checksum").expect("the ring's checksum")
}

/// 64 simulated PEs with a fixed seed and jitter, so messages interleave.
fn sim(kill: &[Pe], at_ns: u64) -> Config {
    let mut cfg = config(Layer::Sim, 64, ErrorPolicy::Abort);
    cfg.seed = 0x5EED_0035;
    cfg.sim.jitter_us = Some(0.5);
    cfg.sim.kill = kill.iter().map(|&pe| KillSpec { pe, at_ns }).collect();
    cfg
}

/// The uninterrupted ring's checksum, and the virtual time half way through a run
/// that checkpoints.
fn uninterrupted() -> (u64, u64) {
    let plain = run_ring(sim(&[], 0), false).expect("a plain run");
    let with = run_ring(sim(&[], 0), true).expect("a checkpointing run");
    assert_eq!(
        checksum(&with),
        checksum(&plain),
        "a checkpoint changes nothing"
    );
    assert!(with.recoveries.is_empty());
    let makespan = with.sim.as_ref().expect("sim stats").makespan_us;
    (checksum(&plain), (makespan * 1e3 / 2.0) as u64)
}

/// Killing `kill` half way through (no two of them buddies) rolls the job back
/// once and ends with the uninterrupted checksum.
pub fn a_sim_job_survives_losing_pes_between_checkpoints(kill: &[Pe]) {
    let (want, half) = uninterrupted();
    let report = run_ring(sim(kill, half), true).expect("a recovered run");
    assert_eq!(checksum(&report), want, "the uninterrupted answer");
    assert_eq!(report.recoveries.len(), 1, "{:?}", report.recoveries);
    let r = &report.recoveries[0];
    assert_eq!(r.failed, kill);
    assert_eq!(r.pes, 64 - kill.len());
    assert_eq!(report.pes, 64 - kill.len());
    assert!(r.epoch >= 1, "{r:?}");
    assert!(
        r.discarded_in_flight + r.discarded_queued > 0,
        "half way through, the failed epoch had messages on the way: {r:?}"
    );
    let again = run_ring(sim(kill, half), true).expect("the same run");
    assert_eq!(
        again.sim.map(|s| s.digest),
        report.sim.map(|s| s.digest),
        "a recovered run replays identically"
    );
}

/// A PE lost with its buddy (the next PE) holds the only copies of its state: the
/// job ends with an error naming both, never a wrong answer.
pub fn losing_a_pe_and_its_buddy_is_a_typed_error_naming_both() {
    let (_, half) = uninterrupted();
    match run_ring(sim(&[9, 10], half), true) {
        Err(RuntimeError::Checkpoint(CheckpointError::BuddiesLost { pe, lost_with, .. })) => {
            assert_eq!((pe, lost_with), (9, vec![9, 10]));
        }
        other => panic!(
            "a PE lost with its buddy: {:?}",
            other.map(|r| r.output::<u64>("checksum"))
        ),
    }
}

/// On threads, PE 3 of 8 fails (the layer's test hook) after taking `after`
/// arrivals from its inbox: a job that rolled back ends with the uninterrupted
/// checksum; the run's result otherwise.
pub fn a_threads_job_survives_an_injected_failure(after: u64) -> Result<RunReport, RuntimeError> {
    let cfg = |fail: Option<InjectedFailure>| Config {
        inject_failure: fail,
        ..config(Layer::Threads, 8, ErrorPolicy::Abort)
    };
    let want = checksum(&run_ring(cfg(None), false).expect("a plain run"));
    let fail = InjectedFailure { pe: 3, after };
    let report = run_ring(cfg(Some(fail)), true)?;
    assert_eq!(checksum(&report), want, "the uninterrupted answer");
    Ok(report)
}
