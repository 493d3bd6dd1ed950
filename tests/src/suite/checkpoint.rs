//! Disk checkpoint and restart: a ring stencil over a 1-D array checkpointed at a
//! step, stopped there, and finished by a fresh job restarted from the checkpoint on
//! the same, fewer or more PEs, gives the uninterrupted run's answer; groups restore
//! per PE; and a checkpoint that is damaged, incomplete, from another program or
//! another version, or whose group cannot take the new PE count, is refused whole
//! before any PE starts, with an error naming the file.

use crate::suite::checkpoint_state::Plain;
use crate::{config, pes};
use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, CheckpointError, Checkpointable, Ctx, Entry,
    ErrorPolicy, Layer, Migratable, Pe, Reducer, Registry, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Elements of the ring.
const ELEMENTS: usize = 24;
/// Steps of the whole computation.
const STEPS: u32 = 12;
/// The step the checkpoint is taken at.
const AT: u32 = 5;

/// What an element does when every element has reached step `AT`.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum AtStep {
    /// Nothing: the run is not checkpointed.
    Run,
    /// Checkpoint, then go on.
    Checkpoint,
    /// Checkpoint, then end the job (as if it were killed there).
    Stop,
}

/// The arithmetic of one cell of a ring of `elements` (this ring's and
/// `suite::recovery`'s): each step mixes its two neighbours' values of that step
/// into its own.
#[derive(Serialize, Deserialize)]
pub(crate) struct RingCell {
    pub(crate) i: usize,
    elements: usize,
    pub(crate) value: u64,
    pub(crate) step: u32,
    /// Neighbour values that arrived, by (step, from the left).
    inbox: Vec<(u32, bool, u64)>,
}

impl RingCell {
    /// Cell `i` of `elements`, at step 0.
    pub(crate) fn new(i: usize, elements: usize) -> Self {
        RingCell {
            i,
            elements,
            value: chorus_core::mix64(i as u64 + 1) % 1_000_003,
            step: 0,
            inbox: Vec::new(),
        }
    }

    /// The left and right neighbours.
    pub(crate) fn neighbours(&self) -> (usize, usize) {
        let n = self.elements;
        ((self.i + n - 1) % n, (self.i + 1) % n)
    }

    /// A neighbour's value of `step` arrived.
    pub(crate) fn arrived(&mut self, step: u32, from_left: bool, v: u64) {
        self.inbox.push((step, from_left, v));
    }

    /// Send this step's value to both neighbours in `ring`, as `value(step,
    /// from_left, v)` messages.
    pub(crate) fn send_to_neighbours<C: Chare>(
        &self,
        ctx: &mut Ctx,
        ring: &ArrayProxy<C, usize>,
        value: fn(u32, bool, u64) -> C::Msg,
    ) {
        let (left, right) = self.neighbours();
        for (to, from_left) in [(right, true), (left, false)] {
            ring.send(ctx, &to, value(self.step, from_left, self.value));
        }
    }

    /// Take the current step if both its values are in; true if it did.
    pub(crate) fn try_step(&mut self) -> bool {
        let step = self.step;
        let side = |from_left: bool| {
            self.inbox
                .iter()
                .position(|m| m.0 == step && m.1 == from_left)
        };
        let (Some(l), Some(r)) = (side(true), side(false)) else {
            return false;
        };
        let (lv, rv) = (self.inbox[l].2, self.inbox[r].2);
        self.inbox.retain(|m| m.0 != step);
        self.value =
            chorus_core::mix64(lv ^ self.value.rotate_left(7) ^ rv.wrapping_mul(3)) % 1_000_003;
        self.step += 1;
        true
    }
}

/// Contribute `v` to a sum delivered to `entry` of the ring's element 0.
pub(crate) fn sum_to_zero<C: Chare>(
    ctx: &mut Ctx,
    ring: &ArrayProxy<C, usize>,
    v: u64,
    entry: Entry<C, u64>,
) {
    ctx.contribute(v, Reducer::Sum, Callback::array_element(ring, &0, entry));
}

/// One cell of the ring: each step it takes its neighbours' values.
#[derive(Serialize, Deserialize)]
struct Ring {
    cell: RingCell,
    at_step: AtStep,
    dir: String,
    entries: (Entry<Ring, u64>, Entry<Ring, ()>, Entry<Ring, u64>),
}

#[derive(Clone, Serialize, Deserialize)]
enum RingMsg {
    /// Send this step's value to both neighbours.
    Go,
    Value {
        step: u32,
        from_left: bool,
        v: u64,
    },
    /// Every element reached step `AT` (to element 0).
    Reached(u64),
    /// The sum of the final values (to element 0).
    Done(u64),
}

type RingInit = (
    AtStep,
    String,
    (Entry<Ring, u64>, Entry<Ring, ()>, Entry<Ring, u64>),
);

impl Chare for Ring {
    type Init = RingInit;
    type Msg = RingMsg;
    fn create((at_step, dir, entries): RingInit, ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().expect("a 1-D element");
        Ring {
            cell: RingCell::new(i, ELEMENTS),
            at_step,
            dir,
            entries,
        }
    }

    fn handle(&mut self, msg: RingMsg, ctx: &mut Ctx) {
        match msg {
            RingMsg::Go => self.send_value(ctx),
            RingMsg::Value { step, from_left, v } => {
                self.cell.arrived(step, from_left, v);
                self.advance(ctx);
            }
            RingMsg::Reached(_) => {
                let me = ctx.this_array::<Ring, usize>().expect("in the ring");
                let after = match self.at_step {
                    AtStep::Stop => Callback::Exit,
                    _ => Callback::array_all(&me, self.entries.1),
                };
                ctx.checkpoint(&self.dir, after);
            }
            RingMsg::Done(sum) => {
                ctx.publish("answer", &sum);
                ctx.exit();
            }
        }
    }
}

impl Migratable for Ring {}

impl Ring {
    fn send_value(&mut self, ctx: &mut Ctx) {
        let me = ctx.this_array::<Ring, usize>().expect("in the ring");
        self.cell
            .send_to_neighbours(ctx, &me, |step, from_left, v| RingMsg::Value {
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
        let me = ctx.this_array::<Ring, usize>().expect("in the ring");
        let step = self.cell.step;
        if step == STEPS {
            sum_to_zero(ctx, &me, self.cell.value, self.entries.2);
        } else if step == AT && self.at_step != AtStep::Run {
            sum_to_zero(ctx, &me, u64::from(step), self.entries.0);
        } else {
            self.send_value(ctx);
        }
    }
}

fn registry() -> (Registry, RingInitEntries) {
    let mut reg = Registry::new();
    reg.migratable::<Ring>("Ring");
    let reached = reg.entry::<Ring, u64>("reached", RingMsg::Reached);
    let go = reg.entry::<Ring, ()>("go", |()| RingMsg::Go);
    let done = reg.entry::<Ring, u64>("done", RingMsg::Done);
    (reg, (reached, go, done))
}

type RingInitEntries = (Entry<Ring, u64>, Entry<Ring, ()>, Entry<Ring, u64>);

/// A fresh directory for one test's checkpoint.
fn scratch(test: &str, layer: Layer) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "chorus-ckpt-{test}-{layer:?}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The ring from the start on `p` PEs; the answer, if it got to one.
fn fresh(layer: Layer, p: u32, at_step: AtStep, dir: &Path) -> Result<Option<u64>, RuntimeError> {
    let (reg, entries) = registry();
    let dir = dir.to_string_lossy().into_owned();
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort)).run(move |ctx| {
        let ring = ctx.create_array_1d::<Ring>(ELEMENTS, (at_step, dir, entries), ArrayMap::Block);
        ring.broadcast(ctx, RingMsg::Go);
    })?;
    Ok(report.output("answer"))
}

/// The ring restarted on `p` PEs from `dir` with `reg`; its answer.
fn restarted(layer: Layer, p: u32, reg: Registry, dir: &Path) -> Result<Option<u64>, RuntimeError> {
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.restart = Some(dir.to_path_buf());
    let report = Runtime::new(reg, cfg).run(|ctx| {
        let info = ctx.restarted().expect("started with --restart");
        ctx.publish("epoch", &info.epoch);
        for ring in ctx.restored_arrays::<Ring, usize>() {
            ring.broadcast(ctx, RingMsg::Go);
        }
    })?;
    Ok(report.output("answer"))
}

/// Stopped at step `AT` and restarted on the same, fewer and more PEs, the ring ends
/// with the uninterrupted run's answer, as does a run that checkpoints and goes on.
pub fn a_restart_on_the_same_fewer_or_more_pes_gives_the_uninterrupted_answer(layer: Layer) {
    let p = pes(layer, 8);
    let dir = scratch("ring", layer);
    let whole = fresh(layer, p, AtStep::Run, &dir)
        .expect("a run")
        .expect("an answer");
    let with = fresh(layer, p, AtStep::Checkpoint, &dir).expect("a run");
    assert_eq!(with, Some(whole), "a checkpoint changes nothing");
    let stopped = fresh(layer, p, AtStep::Stop, &dir).expect("a run");
    assert_eq!(stopped, None, "the stopped run ends at the checkpoint");
    // The second checkpoint in the directory replaced the first: its files alone
    // remain, beside the manifest.
    let names = files_in(&dir);
    assert_eq!(names.len(), p as usize + 1, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n == "manifest.json" || n.ends_with(".e2.ckpt")),
        "{names:?}"
    );
    for now in [p, pes(layer, 5), pes(layer, 16)] {
        let answer = restarted(layer, now, registry().0, &dir).expect("a restart");
        assert_eq!(answer, Some(whole), "restarted on {now} PEs from {p}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The names of the files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the checkpoint directory")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A checkpoint of `p` PEs stopped at step `AT`, for the bad-input tests to damage.
fn stopped_checkpoint(test: &str, layer: Layer, p: u32) -> PathBuf {
    let dir = scratch(test, layer);
    fresh(layer, p, AtStep::Stop, &dir).expect("a checkpointed run");
    dir
}

/// The path of PE `pe`'s file in the checkpoint in `dir`.
fn pe_file(dir: &Path, pe: Pe) -> PathBuf {
    let name = format!("pe-{pe:05}.");
    std::fs::read_dir(dir)
        .expect("the checkpoint directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&name))
        })
        .expect("the PE's file")
}

/// The checkpoint error a restart from `dir` on `p` PEs ends in.
fn refusal(layer: Layer, p: u32, reg: Registry, dir: &Path) -> CheckpointError {
    match restarted(layer, p, reg, dir) {
        Err(RuntimeError::Checkpoint(e)) => e,
        other => panic!("a restart from a bad checkpoint: {other:?}"),
    }
}

/// A truncated file, a corrupted one, a missing one, a manifest of another format
/// version and one of another program are each refused with the file named.
pub fn a_damaged_incomplete_or_foreign_checkpoint_is_refused_naming_the_file(layer: Layer) {
    let p = pes(layer, 4);
    let dir = stopped_checkpoint("bad", layer, p);
    let file = pe_file(&dir, 2);
    let good = std::fs::read(&file).expect("PE 2's file");

    std::fs::write(&file, &good[..good.len() / 2]).expect("truncate");
    let e = refusal(layer, p, registry().0, &dir);
    assert!(
        matches!(&e, CheckpointError::Truncated { file: f, .. } if *f == file),
        "{e}"
    );

    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x40;
    std::fs::write(&file, &flipped).expect("corrupt");
    let e = refusal(layer, p, registry().0, &dir);
    assert!(
        matches!(&e, CheckpointError::Corrupt { file: f, .. } if *f == file),
        "{e}"
    );
    assert!(e.to_string().contains("checksum"), "{e}");

    std::fs::remove_file(&file).expect("remove");
    let e = refusal(layer, p, registry().0, &dir);
    assert!(
        matches!(&e, CheckpointError::MissingFile { pe: 2, .. }),
        "{e}"
    );
    std::fs::write(&file, &good).expect("restore");

    let (mut other, _) = registry();
    other.chare::<Tally>("Tally");
    let e = refusal(layer, p, other, &dir);
    assert!(matches!(e, CheckpointError::OtherProgram { .. }), "{e}");

    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).expect("the manifest");
    // Whatever version this one is, 99 is another.
    let key = "\"version\": ";
    let at = text.find(key).expect("a version") + key.len();
    let end = at + text[at..].find(',').expect("more fields");
    let edited = format!("{}99{}", &text[..at], &text[end..]);
    std::fs::write(&manifest, edited).expect("edit");
    let e = refusal(layer, p, registry().0, &dir);
    assert!(
        matches!(&e, CheckpointError::Version { found: 99, file: f, .. } if *f == manifest),
        "{e}"
    );
    std::fs::write(&manifest, text).expect("restore");

    // What a checkpoint that crashed before its manifest leaves: a half-written
    // temporary file and a whole file of the next epoch. The manifest names neither.
    std::fs::write(dir.join("pe-00000.e2.ckpt.partial-1-0"), b"half").expect("stray");
    std::fs::write(dir.join("pe-00001.e2.ckpt"), b"never committed").expect("stray");
    let answer = restarted(layer, p, registry().0, &dir).expect("the repaired checkpoint");
    assert!(answer.is_some(), "the intact checkpoint restarts");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A group member holding a count: restored per PE on the same count, refused on
/// another.
#[derive(Serialize, Deserialize)]
struct Tally(u64);

impl Chare for Tally {
    type Init = ();
    type Msg = ();
    fn create(_: (), ctx: &mut Ctx) -> Self {
        Tally(u64::from(ctx.my_pe()) * 10 + 1)
    }
    fn handle(&mut self, _: (), ctx: &mut Ctx) {
        ctx.publish("tally", &self.0);
    }
}

impl Checkpointable for Tally {}

/// A group of pooled counts: its `restore` gives all of them to the new PE 0.
#[derive(Serialize, Deserialize)]
struct Pool(u64);

impl Chare for Pool {
    type Init = ();
    type Msg = ();
    fn create(_: (), ctx: &mut Ctx) -> Self {
        Pool(u64::from(ctx.my_pe()) + 1)
    }
    fn handle(&mut self, _: (), ctx: &mut Ctx) {
        ctx.publish("pool", &self.0);
    }
}

impl Checkpointable for Pool {
    const ANY_PE_COUNT: bool = true;
    fn restore(saved: Vec<Self>, pe: Pe, _npes: usize) -> Result<Self, String> {
        Ok(Pool(if pe == 0 {
            saved.iter().map(|p| p.0).sum()
        } else {
            0
        }))
    }
}

fn group_registry() -> Registry {
    let mut reg = Registry::new();
    reg.checkpointable::<Tally>("Tally")
        .checkpointable::<Pool>("Pool")
        .chare::<Plain>("Plain");
    reg
}

/// Groups checkpointed from main: on the same count each PE gets its member back, a
/// type with a `restore` takes another count, and one without is refused.
pub fn groups_restore_per_pe_and_a_fixed_count_group_refuses_another_count(layer: Layer) {
    let p = pes(layer, 4);
    let (both, pool) = (scratch("groups", layer), scratch("pool", layer));
    checkpoint_groups(layer, p, &both, true);
    checkpoint_groups(layer, p, &pool, false);
    let report = restart_groups(layer, p, &both).expect("a restart on the same count");
    let mut tallies: Vec<(Pe, u64)> = report.outputs("tally");
    tallies.sort_unstable();
    let want: Vec<(Pe, u64)> = (0..p).map(|pe| (pe, u64::from(pe) * 10 + 1)).collect();
    assert_eq!(tallies, want, "each PE has its own member back");
    let other = pes(layer, 6);
    if other != p {
        match restart_groups(layer, other, &both) {
            Err(RuntimeError::Checkpoint(CheckpointError::GroupPeCount {
                chare,
                saved,
                now,
                ..
            })) => {
                assert_eq!(
                    (chare.as_str(), saved, now),
                    ("Tally", p as usize, other as usize)
                );
            }
            r => panic!("Tally on another PE count: {:?}", r.map(|_| ())),
        }
        let report = restart_groups(layer, other, &pool).expect("Pool takes another count");
        let mut pooled: Vec<(Pe, u64)> = report.outputs("pool");
        pooled.sort_unstable();
        let total: u64 = (1..=u64::from(p)).sum();
        let want: Vec<(Pe, u64)> = (0..other)
            .map(|pe| (pe, if pe == 0 { total } else { 0 }))
            .collect();
        assert_eq!(pooled, want, "Pool::restore ran on every new PE");
    }
    // A checkpoint that cannot be taken (a singleton of a type registered with
    // `chare` alone) fails the job with a typed error and leaves the one in the
    // directory as it was.
    let before = files_in(&pool);
    let manifest = std::fs::read(pool.join("manifest.json")).expect("the manifest");
    let d = pool.clone();
    let failed =
        Runtime::new(group_registry(), config(layer, p, ErrorPolicy::Abort)).run(move |ctx| {
            ctx.create_group::<Pool>(());
            ctx.create_chare::<Plain>((), 0);
            ctx.checkpoint(&d, Callback::Exit);
        });
    match failed {
        Err(RuntimeError::Checkpoint(CheckpointError::Unsaveable { what, .. })) => {
            assert!(
                what.contains("singleton") && what.contains("Plain"),
                "{what}"
            );
        }
        r => panic!("a checkpoint with a singleton: {:?}", r.map(|_| ())),
    }
    let after: Vec<String> = files_in(&pool)
        .into_iter()
        .filter(|n| before.contains(n))
        .collect();
    assert_eq!(
        after, before,
        "the previous checkpoint's files are all there"
    );
    let now = std::fs::read(pool.join("manifest.json")).expect("the manifest");
    assert_eq!(now, manifest, "the previous manifest is untouched");
    restart_groups(layer, p, &pool).expect("the previous checkpoint restarts");
    let _ = std::fs::remove_dir_all(&both);
    let _ = std::fs::remove_dir_all(&pool);
}

/// Create a `Pool` group (and a `Tally` one if `tally`) and checkpoint them to `dir`
/// from main.
fn checkpoint_groups(layer: Layer, p: u32, dir: &Path, tally: bool) {
    let d = dir.to_path_buf();
    Runtime::new(group_registry(), config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            if tally {
                ctx.create_group::<Tally>(());
            }
            ctx.create_group::<Pool>(());
            ctx.checkpoint(&d, Callback::Exit);
        })
        .expect("a checkpointed run");
}

/// Restart the groups of `dir` on `p` PEs; every member publishes what it holds.
fn restart_groups(
    layer: Layer,
    p: u32,
    dir: &Path,
) -> Result<chorus_core::RunReport, RuntimeError> {
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.restart = Some(dir.to_path_buf());
    Runtime::new(group_registry(), cfg).run(|ctx| {
        for g in ctx.restored_groups::<Tally>() {
            g.broadcast(ctx, ());
        }
        for g in ctx.restored_groups::<Pool>() {
            g.broadcast(ctx, ());
        }
        ctx.exit_on_quiescence();
    })
}

/// Every checkpoint test (not in `suite::all`: threads and sim only, see there).
pub const TESTS: &[crate::suite::Test] = &[
    (
        "a_restart_on_the_same_fewer_or_more_pes_gives_the_uninterrupted_answer",
        a_restart_on_the_same_fewer_or_more_pes_gives_the_uninterrupted_answer,
    ),
    (
        "a_damaged_incomplete_or_foreign_checkpoint_is_refused_naming_the_file",
        a_damaged_incomplete_or_foreign_checkpoint_is_refused_naming_the_file,
    ),
    (
        "groups_restore_per_pe_and_a_fixed_count_group_refuses_another_count",
        groups_restore_per_pe_and_a_fixed_count_group_refuses_another_count,
    ),
];
