//! What a checkpoint carries besides groups and array elements: singleton chares
//! (restored on the PE they lived on, or on that PE modulo a smaller PE count, their
//! proxies still reaching them), deleted array elements (the restored array is the
//! smaller one, and messages to a deleted index are still dropped and reported),
//! array sections kept in user state (the tree rebuilt over the members' new
//! homes), and what it refuses, naming it, rather than drop it (an async task
//! still waiting among them).

use crate::config;
use chorus_core::{
    chare, ArrayMap, ArrayProxy, ArraySection, Callback, Chare, ChareProxy, CheckpointError,
    Checkpointable, Ctx, Entry, ErrorPolicy, Layer, Migratable, Pe, Reducer, Registry, ReplyTo,
    RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A singleton that sums what it is sent; it reaches itself through its own proxy.
#[derive(Serialize, Deserialize)]
struct Keeper {
    created_on: Pe,
    total: u64,
    me: Option<ChareProxy<Keeper>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum KeeperMsg {
    Add(u64),
    /// Send `Echo` to itself through the proxy it keeps.
    Report,
    /// Publish (PE created on, total, PE it runs on).
    Echo,
}

impl Chare for Keeper {
    type Init = u64;
    type Msg = KeeperMsg;
    fn create(total: u64, ctx: &mut Ctx) -> Self {
        Keeper {
            created_on: ctx.my_pe(),
            total,
            me: ctx.this_chare::<Keeper>(),
        }
    }
    fn handle(&mut self, msg: KeeperMsg, ctx: &mut Ctx) {
        match msg {
            KeeperMsg::Add(x) => self.total += x,
            KeeperMsg::Report => {
                let me = self.me.expect("its own proxy");
                me.send(ctx, KeeperMsg::Echo);
            }
            KeeperMsg::Echo => {
                let at = (self.created_on, self.total, ctx.my_pe());
                ctx.publish("keeper", &at);
            }
        }
    }
}

impl Checkpointable for Keeper {}

/// A singleton of a type no checkpoint can save (registered with `chare` only).
#[derive(Serialize, Deserialize)]
pub(crate) struct Plain;

impl Chare for Plain {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Plain
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// An array element holding its index.
#[derive(Serialize, Deserialize)]
struct Slot {
    i: usize,
    total: Entry<Slot, u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum SlotMsg {
    /// Contribute the index to a sum, to element 0's `Total`.
    Sum,
    /// Publish the index.
    Ping,
    /// The sum of the live elements' indices (to element 0).
    Total(u64),
}

impl Chare for Slot {
    type Init = Entry<Slot, u64>;
    type Msg = SlotMsg;
    fn create(total: Entry<Slot, u64>, ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().expect("a 1-D element");
        Slot { i, total }
    }
    fn handle(&mut self, msg: SlotMsg, ctx: &mut Ctx) {
        let me = ctx.this_array::<Slot, usize>().expect("in the array");
        match msg {
            SlotMsg::Sum => {
                let cb = Callback::array_element(&me, &0, self.total);
                ctx.contribute(self.i as u64, Reducer::Sum, cb);
            }
            SlotMsg::Ping => ctx.publish("pinged", &self.i),
            SlotMsg::Total(sum) => ctx.publish("sum", &sum),
        }
    }
}

impl Migratable for Slot {}

/// An array element keeping two sections of its array: `kept`, made before the
/// checkpoint, and `fresh`, made after the restart.
#[derive(Serialize, Deserialize)]
struct Member {
    i: usize,
    kept: Option<ArraySection<Member, usize>>,
    entries: (Entry<Member, u64>, Entry<Member, u64>),
}

#[derive(Clone, Serialize, Deserialize)]
enum MemberMsg {
    /// Keep the section made before the checkpoint.
    Keep(ArraySection<Member, usize>),
    /// Every fourth element contributes to this section's reduction, the other
    /// members do not (a reduction left open).
    Half(ArraySection<Member, usize>),
    /// The section made after the restart: contribute the index to both sections'
    /// reductions if a member; element 0 also multicasts `Hit` down `kept`.
    Fresh(ArraySection<Member, usize>),
    /// Publish the index.
    Hit,
    /// `kept`'s sum (to element 0).
    KeptSum(u64),
    /// `fresh`'s sum (to element 0).
    FreshSum(u64),
}

impl Chare for Member {
    type Init = (Entry<Member, u64>, Entry<Member, u64>);
    type Msg = MemberMsg;
    fn create(entries: Self::Init, ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().expect("a 1-D element");
        Member {
            i,
            kept: None,
            entries,
        }
    }
    fn handle(&mut self, msg: MemberMsg, ctx: &mut Ctx) {
        let me = ctx.this_array::<Member, usize>().expect("in the array");
        match msg {
            MemberMsg::Keep(s) => self.kept = Some(s),
            MemberMsg::Half(mut s) => {
                if self.i.is_multiple_of(4) {
                    let cb = Callback::array_element(&me, &0, self.entries.0);
                    s.contribute(ctx, 1u64, Reducer::Sum, cb).expect("a member");
                }
            }
            MemberMsg::Fresh(mut fresh) => {
                let kept = self.kept.as_mut().expect("kept before the checkpoint");
                if self.i == 0 {
                    kept.broadcast(ctx, MemberMsg::Hit);
                }
                let (i, v) = (self.i, self.i as u64);
                if kept.members().contains(&i) {
                    let cb = Callback::array_element(&me, &0, self.entries.0);
                    kept.contribute(ctx, v, Reducer::Sum, cb).expect("a member");
                }
                if fresh.members().contains(&i) {
                    let cb = Callback::array_element(&me, &0, self.entries.1);
                    fresh
                        .contribute(ctx, v, Reducer::Sum, cb)
                        .expect("a member");
                }
            }
            MemberMsg::Hit => ctx.publish("hit", &self.i),
            MemberMsg::KeptSum(sum) => ctx.publish("kept", &sum),
            MemberMsg::FreshSum(sum) => ctx.publish("fresh", &sum),
        }
    }
}

impl Migratable for Member {}

/// The entries of a `Member` array.
type MemberEntries = (Entry<Member, u64>, Entry<Member, u64>);

fn registry() -> (Registry, Entry<Slot, u64>) {
    let (reg, total, _) = registry_with_members();
    (reg, total)
}

fn registry_with_members() -> (Registry, Entry<Slot, u64>, MemberEntries) {
    let mut reg = Registry::new();
    reg.checkpointable::<Keeper>("Keeper")
        .chare::<Plain>("Plain")
        .migratable::<Slot>("Slot")
        .migratable::<Member>("Member");
    let total = reg.entry::<Slot, u64>("total", SlotMsg::Total);
    let kept = reg.entry::<Member, u64>("kept", MemberMsg::KeptSum);
    let fresh = reg.entry::<Member, u64>("fresh", MemberMsg::FreshSum);
    (reg, total, (kept, fresh))
}

/// A fresh directory for one test's checkpoint.
fn scratch(test: &str, layer: Layer) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "chorus-ckpt-state-{test}-{layer:?}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Run `main` on `p` PEs restarted from `dir`.
fn restart(
    layer: Layer,
    p: u32,
    dir: &Path,
    main: impl FnOnce(&mut Ctx) + Send + 'static,
) -> Result<RunReport, RuntimeError> {
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.restart = Some(dir.to_path_buf());
    Runtime::new(registry().0, cfg).run(main)
}

/// Keepers made on PEs 2 and 7 of 8 are checkpointed with their totals; restarted
/// on 8, 5 (PE 7's goes to PE 2, beside PE 2's) and 16 PEs, each is found by
/// `restored_chares`, reached through its old proxy, and holds its total; a keeper
/// made after the restart lives beside them.
pub fn singletons_are_restored_on_their_pe_modulo_the_new_count(layer: Layer) {
    let dir = scratch("singletons", layer);
    let d = dir.clone();
    Runtime::new(registry().0, config(layer, 8, ErrorPolicy::Abort))
        .run(move |ctx| {
            for (pe, adds) in [(2, [5, 6]), (7, [100, 200])] {
                let k = ctx.create_chare::<Keeper>(1, pe);
                for x in adds {
                    k.send(ctx, KeeperMsg::Add(x));
                }
            }
            ctx.checkpoint(&d, Callback::Exit);
        })
        .expect("a checkpointed run");
    for n in [8u32, 5, 16] {
        let report = restart(layer, n, &dir, |ctx| {
            let restored = ctx.restored_chares::<Keeper>();
            assert_eq!(restored.len(), 2, "both keepers are listed");
            for k in &restored {
                k.send(ctx, KeeperMsg::Add(1000));
                k.send(ctx, KeeperMsg::Report);
            }
            let fresh = ctx.create_chare::<Keeper>(3, 2);
            fresh.send(ctx, KeeperMsg::Report);
            ctx.exit_on_quiescence();
        })
        .unwrap_or_else(|e| panic!("a restart on {n} PEs: {e}"));
        let mut got: Vec<(Pe, u64, Pe)> = report
            .outputs::<(Pe, u64, Pe)>("keeper")
            .into_iter()
            .map(|o| o.1)
            .collect();
        got.sort_unstable();
        let want = vec![(2, 3, 2), (2, 1012, 2), (7, 1301, 7 % n)];
        assert_eq!(got, want, "restarted on {n} PEs");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checkpoint with a singleton of a type registered with `chare` alone fails the
/// job with a typed error naming it, and writes no manifest.
pub fn a_singleton_that_cannot_be_saved_is_named(layer: Layer) {
    let dir = scratch("plain", layer);
    let d = dir.clone();
    let failed = Runtime::new(registry().0, config(layer, 4, ErrorPolicy::Abort)).run(move |ctx| {
        ctx.create_chare::<Keeper>(0, 1);
        ctx.create_chare::<Plain>((), 3);
        ctx.checkpoint(&d, Callback::Exit);
    });
    match failed {
        Err(RuntimeError::Checkpoint(CheckpointError::Unsaveable { pe, what, why })) => {
            assert_eq!(pe, 3);
            assert!(
                what.contains("singleton") && what.contains("Plain"),
                "{what}"
            );
            assert!(why.contains("checkpointable"), "{why}");
        }
        r => panic!("a checkpoint with a Plain singleton: {:?}", r.map(|_| ())),
    }
    assert!(!dir.join("manifest.json").exists(), "nothing was committed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Elements 3 and 8 of 12 deleted before the checkpoint: restarted on 4, 3 and 6
/// PEs, the array sums the ten left (twice, each deleted element standing in at its
/// home), and a message to element 3 is dropped and reported, not an error.
pub fn deleted_elements_stay_deleted_after_a_restart(layer: Layer) {
    let dir = scratch("deleted", layer);
    let d = dir.clone();
    let (reg, total) = registry();
    Runtime::new(reg, config(layer, 4, ErrorPolicy::Abort))
        .run(move |ctx| {
            let a = ctx.create_array_1d::<Slot>(12, total, ArrayMap::Block);
            a.destroy(ctx, &3);
            a.destroy(ctx, &8);
            ctx.checkpoint(&d, Callback::Exit);
        })
        .expect("a checkpointed run");
    for n in [4u32, 3, 6] {
        let report = restart(layer, n, &dir, |ctx| {
            let arrays: Vec<ArrayProxy<Slot, usize>> = ctx.restored_arrays();
            let a = arrays.first().expect("the array");
            a.broadcast(ctx, SlotMsg::Sum);
            a.broadcast(ctx, SlotMsg::Sum);
            a.send(ctx, &3, SlotMsg::Ping);
            a.send(ctx, &5, SlotMsg::Ping);
            ctx.exit_on_quiescence();
        })
        .unwrap_or_else(|e| panic!("a restart on {n} PEs: {e}"));
        let sums: Vec<u64> = report.outputs("sum").into_iter().map(|o| o.1).collect();
        let live: u64 = (0..12).filter(|i| *i != 3 && *i != 8).sum();
        assert_eq!(sums, vec![live, live], "restarted on {n} PEs");
        let pinged: Vec<usize> = report.outputs("pinged").into_iter().map(|o| o.1).collect();
        assert_eq!(pinged, vec![5], "restarted on {n} PEs");
        assert_eq!(report.dropped_to_deleted(), 1, "restarted on {n} PEs");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The even elements of a 16-element array are a section each element keeps;
/// restarted on 8, 5 and 16 PEs from 8, the kept section's multicast reaches each
/// member once and its reduction sums them, beside a section made after the restart
/// whose reduction runs at the same time (its id is new: the PE's section count was
/// saved).
pub fn a_kept_array_section_works_after_a_restart(layer: Layer) {
    let dir = scratch("section", layer);
    let d = dir.clone();
    let (reg, _, entries) = registry_with_members();
    Runtime::new(reg, config(layer, 8, ErrorPolicy::Abort))
        .run(move |ctx| {
            let a = ctx.create_array_1d::<Member>(16, entries, ArrayMap::Block);
            let evens = a.section(ctx, (0..16).step_by(2)).expect("a section");
            a.broadcast(ctx, MemberMsg::Keep(evens));
            ctx.checkpoint(&d, Callback::Exit);
        })
        .expect("a checkpointed run");
    for n in [8u32, 5, 16] {
        let report = restart(layer, n, &dir, |ctx| {
            let arrays: Vec<ArrayProxy<Member, usize>> = ctx.restored_arrays();
            let a = arrays.first().expect("the array");
            let threes = a.section(ctx, (0..16).step_by(3)).expect("a section");
            a.broadcast(ctx, MemberMsg::Fresh(threes));
            ctx.exit_on_quiescence();
        })
        .unwrap_or_else(|e| panic!("a restart on {n} PEs: {e}"));
        let kept: Vec<u64> = report.outputs("kept").into_iter().map(|o| o.1).collect();
        let fresh: Vec<u64> = report.outputs("fresh").into_iter().map(|o| o.1).collect();
        assert_eq!(kept, vec![(0..16).step_by(2).sum::<u64>()], "on {n} PEs");
        assert_eq!(fresh, vec![(0..16).step_by(3).sum::<u64>()], "on {n} PEs");
        let mut hit: Vec<usize> = report.outputs("hit").into_iter().map(|o| o.1).collect();
        hit.sort_unstable();
        assert_eq!(hit, (0..16).step_by(2).collect::<Vec<_>>(), "on {n} PEs");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A section reduction some members contributed to and others not cannot be
/// saved: the checkpoint fails naming it, and writes no manifest.
pub fn an_open_section_reduction_is_named(layer: Layer) {
    let dir = scratch("open-section", layer);
    let d = dir.clone();
    let (reg, _, entries) = registry_with_members();
    let failed = Runtime::new(reg, config(layer, 4, ErrorPolicy::Abort)).run(move |ctx| {
        let a = ctx.create_array_1d::<Member>(8, entries, ArrayMap::Block);
        let evens = a.section(ctx, (0..8).step_by(2)).expect("a section");
        a.broadcast(ctx, MemberMsg::Half(evens));
        ctx.checkpoint(&d, Callback::Exit);
    });
    match failed {
        Err(RuntimeError::Checkpoint(CheckpointError::Unsaveable { what, why, .. })) => {
            assert!(what.contains("reduction 0 of array section"), "{what}");
            assert!(why.contains("between section reductions"), "{why}");
        }
        r => panic!(
            "a checkpoint with an open section reduction: {:?}",
            r.map(|_| ())
        ),
    }
    assert!(!dir.join("manifest.json").exists(), "nothing was committed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keeps the reply addresses of the asks it is sent, answering none: a task asking
/// it waits at every later quiescence.
#[derive(Default, Serialize, Deserialize)]
struct Silent {
    held: Vec<ReplyTo<u64>>,
}

#[chare]
impl Silent {
    /// Keep the reply address.
    #[entry]
    fn hold(&mut self, reply: ReplyTo<u64>) {
        self.held.push(reply);
    }
}

impl Checkpointable for Silent {}

/// A checkpoint taken while main's task waits for an answer (its ask delivered, so
/// the job is quiescent) fails the job naming the task, where it would otherwise
/// drop it, and commits nothing.
pub fn a_checkpoint_with_a_task_waiting_is_refused(layer: Layer) {
    let dir = scratch("task", layer);
    let d = dir.clone();
    let mut reg = Registry::new();
    reg.checkpointable::<Silent>("Silent");
    Silent::register(&mut reg);
    let failed = Runtime::new(reg, config(layer, 4, ErrorPolicy::Abort)).run(move |ctx| {
        let silent = ctx.create_chare::<Silent>((), 2);
        ctx.spawn(move |t| async move {
            let answer = t.ask(move |ctx, r| silent.hold(ctx, r)).await;
            t.with(move |ctx| ctx.publish("answered", &format!("{answer:?}")))
                .await;
        });
        ctx.checkpoint(&d, Callback::Exit);
    });
    match failed {
        Err(RuntimeError::Checkpoint(CheckpointError::Unsaveable { pe, what, why })) => {
            assert_eq!(pe, 0);
            assert!(
                what.contains("1 unfinished async tasks") && what.contains("Main"),
                "{what}"
            );
            assert!(why.contains("every spawned task has finished"), "{why}");
        }
        r => panic!("a checkpoint with a task waiting: {:?}", r.map(|_| ())),
    }
    assert!(!dir.join("manifest.json").exists(), "nothing was committed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every test of this module (threads and sim only, as `suite::checkpoint`'s).
pub const TESTS: &[crate::suite::Test] = &[
    (
        "singletons_are_restored_on_their_pe_modulo_the_new_count",
        singletons_are_restored_on_their_pe_modulo_the_new_count,
    ),
    (
        "a_singleton_that_cannot_be_saved_is_named",
        a_singleton_that_cannot_be_saved_is_named,
    ),
    (
        "deleted_elements_stay_deleted_after_a_restart",
        deleted_elements_stay_deleted_after_a_restart,
    ),
    (
        "a_kept_array_section_works_after_a_restart",
        a_kept_array_section_works_after_a_restart,
    ),
    (
        "an_open_section_reduction_is_named",
        an_open_section_reduction_is_named,
    ),
    (
        "a_checkpoint_with_a_task_waiting_is_refused",
        a_checkpoint_with_a_task_waiting_is_refused,
    ),
];
