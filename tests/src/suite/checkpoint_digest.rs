//! A sim job checkpointed at a step, killed after the commit and restarted from the
//! checkpoint on as many PEs goes on bit for bit: the restarted job's main resumes
//! through the checkpoint's callback (`Ctx::resume_from_checkpoint`), and the
//! digest of its deliveries (virtual time, PE, chare, payload of every handler
//! run) equals the uninterrupted job's digest since its commit, over the same
//! number of deliveries, with the same final answer. Equality is a check that can
//! fail: the digest since the commit covers the whole rest of the run (every step
//! after the checkpoint), handlers charge drawn amounts of work so any shift in
//! time or order shows, and a restart that resumes by sending its own messages, or
//! one on another PE count, gives the same answer but another digest.

use crate::suite::checkpoint::{sum_to_zero, RingCell};
use chorus_core::{
    mix64, ArrayMap, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, KillSpec, Layer, Migratable,
    Registry, RunReport, Runtime, RuntimeError, SimStats,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The shape of one digest-checked ring job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Shape {
    /// Ring elements per PE.
    pub per_pe: usize,
    /// Steps of the whole computation.
    pub steps: u32,
    /// The step the checkpoint is taken at.
    pub at: u32,
    /// Most virtual nanoseconds of work a step charges (drawn per element and step).
    pub work_ns: u64,
}

/// One cell of the ring; element 0 takes the checkpoint and collects the answer.
#[derive(Serialize, Deserialize)]
struct Cell {
    cell: RingCell,
    shape: Shape,
    dir: String,
    entries: Entries,
}

/// The entries callbacks name: (every element reached the checkpoint step, go on
/// after it, the final sum).
type Entries = (Entry<Cell, u64>, Entry<Cell, ()>, Entry<Cell, u64>);

#[derive(Clone, Serialize, Deserialize)]
enum CellMsg {
    /// Send this step's value to both neighbours.
    Go,
    Value {
        step: u32,
        from_left: bool,
        v: u64,
    },
    /// Every element reached the checkpoint step (to element 0).
    Reached(u64),
    /// The sum of the final values (to element 0).
    Done(u64),
}

impl Chare for Cell {
    type Init = (Shape, usize, String, Entries);
    type Msg = CellMsg;
    fn create((shape, n, dir, entries): Self::Init, ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().unwrap_or_default();
        Cell {
            cell: RingCell::new(i, n),
            shape,
            dir,
            entries,
        }
    }

    fn handle(&mut self, msg: CellMsg, ctx: &mut Ctx) {
        match msg {
            CellMsg::Go => self.send_value(ctx),
            CellMsg::Value { step, from_left, v } => {
                self.cell.arrived(step, from_left, v);
                self.advance(ctx);
            }
            CellMsg::Reached(_) => {
                let Some(me) = ctx.this_array::<Cell, usize>() else {
                    return ctx.fail("Cell", "not in the ring");
                };
                ctx.checkpoint(&self.dir, Callback::array_all(&me, self.entries.1));
            }
            CellMsg::Done(sum) => {
                ctx.publish("answer", &sum);
                ctx.exit();
            }
        }
    }
}

impl Migratable for Cell {}

impl Cell {
    fn send_value(&mut self, ctx: &mut Ctx) {
        let Some(me) = ctx.this_array::<Cell, usize>() else {
            return ctx.fail("Cell", "not in the ring");
        };
        self.cell
            .send_to_neighbours(ctx, &me, |step, from_left, v| CellMsg::Value {
                step,
                from_left,
                v,
            });
        self.advance(ctx);
    }

    /// Take the step whose two values are in, charging its drawn work.
    fn advance(&mut self, ctx: &mut Ctx) {
        if !self.cell.try_step() {
            return;
        }
        let Some(me) = ctx.this_array::<Cell, usize>() else {
            return ctx.fail("Cell", "not in the ring");
        };
        let step = self.cell.step;
        let draw = mix64(ctx.seed() ^ mix64(self.cell.i as u64) ^ u64::from(step) << 40);
        ctx.work(std::time::Duration::from_nanos(
            draw % self.shape.work_ns.max(1),
        ));
        if step == self.shape.steps {
            sum_to_zero(ctx, &me, self.cell.value, self.entries.2);
        } else if step == self.shape.at {
            sum_to_zero(ctx, &me, u64::from(step), self.entries.0);
        } else {
            self.send_value(ctx);
        }
    }
}

fn registry() -> (Registry, Entries) {
    let mut reg = Registry::new();
    reg.migratable::<Cell>("DigestRing");
    let reached = reg.entry::<Cell, u64>("DigestRing::reached", CellMsg::Reached);
    let go = reg.entry::<Cell, ()>("DigestRing::go", |()| CellMsg::Go);
    let done = reg.entry::<Cell, u64>("DigestRing::done", CellMsg::Done);
    (reg, (reached, go, done))
}

/// The sim configuration of every run: `pes` PEs, digests on, jitter and link
/// contention as asked (both are network state a resume must take up).
pub fn sim_config(pes: u32, noisy: bool) -> Config {
    let mut cfg = crate::config(Layer::Sim, pes, ErrorPolicy::Abort);
    cfg.seed = 0x5eed_c4e7;
    cfg.sim.digest = true;
    if noisy {
        cfg.sim.jitter_us = Some(0.7);
        cfg.sim.contention = true;
    }
    cfg
}

/// How a restarted job goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Through the checkpoint's callback, as the saved job went on.
    Callback,
    /// By main broadcasting the callback's message itself: the same deliveries.
    OwnBroadcast,
    /// As `OwnBroadcast`, a microsecond of main's work later: the same answer, all
    /// deliveries a microsecond later.
    Late,
}

/// The ring from step 0 under `cfg`, checkpointing into `dir`.
pub fn fresh(cfg: Config, shape: Shape, dir: &Path) -> Result<RunReport, RuntimeError> {
    let (reg, entries) = registry();
    let n = cfg.pes as usize * shape.per_pe;
    let dir = dir.to_string_lossy().into_owned();
    Runtime::new(reg, cfg).run(move |ctx| {
        let ring = ctx.create_array_1d::<Cell>(n, (shape, n, dir, entries), ArrayMap::Block);
        ring.broadcast(ctx, CellMsg::Go);
    })
}

/// The ring restarted under `cfg` from the checkpoint in `dir`, going on as `how` says.
pub fn restarted(cfg: Config, dir: &Path, how: Resume) -> Result<RunReport, RuntimeError> {
    let mut cfg = cfg;
    cfg.restart = Some(dir.to_path_buf());
    Runtime::new(registry().0, cfg).run(move |ctx| match how {
        Resume::Callback => {
            if let Err(e) = ctx.resume_from_checkpoint() {
                ctx.fail("main", e);
            }
        }
        Resume::OwnBroadcast | Resume::Late => {
            if how == Resume::Late {
                ctx.work(std::time::Duration::from_micros(1));
            }
            for ring in ctx.restored_arrays::<Cell, usize>() {
                ring.broadcast(ctx, CellMsg::Go);
            }
        }
    })
}

/// The run's sim statistics.
pub fn stats(r: &RunReport) -> &SimStats {
    r.sim.as_ref().expect("a sim run")
}

/// A fresh directory for one run's checkpoint.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-ckdigest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What the uninterrupted and the restarted job say, for a check or a print.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The uninterrupted job's answer, its digest since the commit, the deliveries
    /// in it and the commit's virtual time (us); then all its deliveries.
    pub whole: (u64, u64, u64, f64, u64),
    /// The restarted job's answer, digest since its resume, deliveries in it and the
    /// resume's virtual time; then all its deliveries.
    pub restarted: (u64, u64, u64, f64, u64),
}

impl Compared {
    /// True if the restarted job went on exactly as the uninterrupted one.
    pub fn same(&self) -> bool {
        self.whole.0 == self.restarted.0
            && self.whole.1 == self.restarted.1
            && self.whole.2 == self.restarted.2
            && self.whole.3 == self.restarted.3
    }
}

/// The figures `Compared` holds of one run.
fn figures(r: &RunReport) -> (u64, u64, u64, f64, u64) {
    let s = stats(r);
    (
        r.output("answer").unwrap_or_default(),
        s.digest_since_commit.unwrap_or_default(),
        s.delivered_since_commit,
        s.since_commit_us.unwrap_or(-1.0),
        s.delivered,
    )
}

/// How the restarted job differs from the one that wrote its checkpoint.
#[derive(Debug, Clone, Copy)]
pub struct Restart {
    /// Its PE count.
    pub pes: u32,
    /// How it goes on.
    pub how: Resume,
    /// Added to the seed (the drawn work of every step after the checkpoint changes).
    pub reseed: u64,
}

/// Run the ring uninterrupted, run it again killed (PE `pes / 2` fails 2 us after
/// the commit), restart the killed run's checkpoint as `r` says; what the
/// uninterrupted and the restarted job say.
pub fn killed_and_restarted(
    pes: u32,
    noisy: bool,
    shape: Shape,
    r: Restart,
    name: &str,
) -> Compared {
    let dir = scratch(name);
    let whole = fresh(sim_config(pes, noisy), shape, &dir).expect("the uninterrupted run");
    let commit_us = stats(&whole).since_commit_us.expect("a commit");
    let _ = std::fs::remove_dir_all(&dir);
    let mut killed_cfg = sim_config(pes, noisy);
    killed_cfg.sim.kill = vec![KillSpec {
        pe: pes / 2,
        at_ns: (commit_us * 1e3) as u64 + 2_000,
    }];
    let killed = fresh(killed_cfg, shape, &dir);
    assert!(killed.is_err(), "the killed run ends in an error");
    let mut cfg = sim_config(r.pes, noisy);
    cfg.seed += r.reseed;
    let again = restarted(cfg, &dir, r.how).expect("the restart");
    let _ = std::fs::remove_dir_all(&dir);
    Compared {
        whole: figures(&whole),
        restarted: figures(&again),
    }
}

/// On as many PEs, resuming through the callback (or main's own broadcast of the
/// callback's message), the restarted job's digest from its resume equals the
/// uninterrupted job's since its commit (plain network, and with jitter and
/// contention); resuming a microsecond late, with another seed (other drawn work)
/// or on another PE count gives the same answer and another digest.
pub fn a_restarted_sim_job_replays_the_rest_of_the_run_bit_for_bit(pes: u32) {
    let shape = Shape {
        per_pe: 2,
        steps: 12,
        at: 5,
        work_ns: 3_000,
    };
    let same = Restart {
        pes,
        how: Resume::Callback,
        reseed: 0,
    };
    for noisy in [false, true] {
        let c = killed_and_restarted(pes, noisy, shape, same, "same");
        assert!(c.same(), "noisy {noisy}: {c:?}");
        // A proper, busy suffix: every element delivered after the commit, and the
        // whole run delivered more.
        assert!(c.whole.2 >= u64::from(pes) * 2 * 7, "{c:?}");
        assert!(c.whole.4 > c.whole.2 && c.whole.3 > 0.0, "{c:?}");
        assert_eq!(
            c.restarted.2, c.restarted.4,
            "the restart digests from its start"
        );
    }
    let own = Restart {
        how: Resume::OwnBroadcast,
        ..same
    };
    let c = killed_and_restarted(pes, false, shape, own, "own");
    assert!(c.same(), "{c:?}");
    let others = [
        Restart {
            how: Resume::Late,
            ..same
        },
        Restart { reseed: 1, ..same },
        Restart {
            pes: pes / 2 + 3,
            ..same
        },
    ];
    for r in others {
        let c = killed_and_restarted(pes, false, shape, r, "other");
        assert_eq!(c.whole.0, c.restarted.0, "{r:?}: {c:?}");
        assert_ne!(c.whole.1, c.restarted.1, "{r:?}: {c:?}");
        assert!(!c.same(), "{r:?}: {c:?}");
    }
}
