//! What a checkpoint carries besides groups and array elements: singleton chares
//! (restored on the PE they lived on, or on that PE modulo a smaller PE count, their
//! proxies still reaching them), deleted array elements (the restored array is the
//! smaller one, and messages to a deleted index are still dropped and reported),
//! and what it refuses, naming it, rather than drop it.

use crate::config;
use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, ChareProxy, CheckpointError, Checkpointable, Ctx, Entry,
    ErrorPolicy, Layer, Migratable, Pe, Reducer, Registry, RunReport, Runtime, RuntimeError,
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
struct Plain;

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

fn registry() -> (Registry, Entry<Slot, u64>) {
    let mut reg = Registry::new();
    reg.checkpointable::<Keeper>("Keeper")
        .chare::<Plain>("Plain")
        .migratable::<Slot>("Slot");
    let total = reg.entry::<Slot, u64>("total", SlotMsg::Total);
    (reg, total)
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
];
