//! callback: a coordinator sends a fresh random value through a callback to each kind
//! of target in turn (a chare's entry, one array element, one group member, a whole
//! array, a whole group), half the time firing it itself and half the time handing
//! the callback to a random group member that fires it; every target reports the
//! kind it is and the value it got, which must be the expected ones, as many times as
//! the target has members. Last, a task waits on a value reflected off every even PE
//! in turn (the original's threaded callback; here `ask`).

use super::{pe_counts, run_for};
use crate::splitmix64;
use chorus_core::{
    chare, ArrayMap, ArrayProxy, AskError, Callback, ChareProxy, Ctx, GroupProxy, Layer, Registry,
    ReplyTo,
};
use serde::{Deserialize, Serialize};

/// Which kind of target reported.
const CHARE: u32 = 1000;
const GROUP: u32 = 2000;
const ARRAY: u32 = 4000;

/// A singleton chare target.
#[derive(Serialize, Deserialize)]
struct CbChare {
    coord: ChareProxy<CbCoord>,
}

#[chare]
impl CbChare {
    #[init]
    fn new(coord: ChareProxy<CbCoord>) -> Self {
        CbChare { coord }
    }
    #[entry(callback)]
    fn accept(&mut self, v: u64, ctx: &mut Ctx) {
        self.coord.done(ctx, CHARE, v);
    }
}

/// An array of targets.
#[derive(Serialize, Deserialize)]
struct CbArray {
    coord: ChareProxy<CbCoord>,
}

#[chare]
impl CbArray {
    #[init]
    fn new(coord: ChareProxy<CbCoord>) -> Self {
        CbArray { coord }
    }
    #[entry(callback)]
    fn accept(&mut self, v: u64, ctx: &mut Ctx) {
        self.coord.done(ctx, ARRAY, v);
    }
}

/// A group of targets, which also fire callbacks they are handed.
#[derive(Serialize, Deserialize)]
struct CbGroup {
    coord: ChareProxy<CbCoord>,
}

#[chare]
impl CbGroup {
    #[init]
    fn new(coord: ChareProxy<CbCoord>) -> Self {
        CbGroup { coord }
    }
    #[entry(callback)]
    fn accept(&mut self, v: u64, ctx: &mut Ctx) {
        self.coord.done(ctx, GROUP, v);
    }
    /// Fire `cb` with `v`.
    #[entry]
    fn reflect(&mut self, cb: Callback, v: u64, ctx: &mut Ctx) {
        ctx.send_to_callback(&cb, v);
    }
    /// Answer a waiting task with `v`.
    #[entry]
    fn reflect_to(&mut self, v: u64, back: ReplyTo<u64>, ctx: &mut Ctx) {
        back.send(ctx, v);
    }
}

/// The coordinator's targets.
#[derive(Clone, Serialize, Deserialize)]
struct Targets {
    chare: ChareProxy<CbChare>,
    array: ArrayProxy<CbArray, usize>,
    n_arr: usize,
    group: GroupProxy<CbGroup>,
}

/// The coordinator: one step per kind of target, then the task.
#[derive(Serialize, Deserialize)]
struct CbCoord {
    targets: Option<Targets>,
    rng: u64,
    step: u32,
    expect: (u32, u64),
    count: usize,
    done: Callback,
}

#[chare]
impl CbCoord {
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<CbCoord>().expect("a chare");
        let n_arr = ctx.num_pes() * 2 + 1;
        let last = ctx.num_pes() as u32 - 1;
        let targets = Targets {
            chare: ctx.create_chare::<CbChare>(me, last),
            array: ctx.create_array_1d::<CbArray>(n_arr, me, ArrayMap::Block),
            n_arr,
            group: ctx.create_group::<CbGroup>(me),
        };
        let mut coord = CbCoord {
            targets: Some(targets),
            rng: 0xca11_bacc,
            step: 0,
            expect: (0, 0),
            count: 0,
            done,
        };
        coord.next(ctx);
        coord
    }
    /// A target reported: check what it is and what it got.
    #[entry]
    fn done(&mut self, kind: u32, v: u64, ctx: &mut Ctx) {
        assert_eq!(
            (kind, v),
            self.expect,
            "callback step {}: wrong target or value",
            self.step
        );
        self.count -= 1;
        if self.count == 0 {
            self.step += 1;
            self.next(ctx);
        }
    }
}

impl CbCoord {
    /// Send the next step's callback, or run the task after the last.
    fn next(&mut self, ctx: &mut Ctx) {
        let t = self.targets.clone().expect("targets");
        let pes = ctx.num_pes();
        let (kind, count, cb) = match self.step {
            0 => (CHARE, 1, t.chare.accept_callback(ctx)),
            1 => (ARRAY, 1, t.array.at(t.n_arr - 1).accept_callback(ctx)),
            2 => (GROUP, 1, t.group.at(pes as u32 - 1).accept_callback(ctx)),
            3 => (ARRAY, t.n_arr, t.array.accept_callback(ctx)),
            4 => (GROUP, pes, t.group.accept_callback(ctx)),
            _ => return self.threaded(t.group, ctx),
        };
        let v = splitmix64(&mut self.rng) >> 1;
        self.expect = (kind, v);
        self.count = count;
        if v & 0x100 != 0 {
            ctx.send_to_callback(&cb, v);
        } else {
            let pe = (splitmix64(&mut self.rng) % pes as u64) as u32;
            t.group.at(pe).reflect(ctx, cb, v);
        }
    }

    /// Wait on a value reflected off each even PE in turn.
    fn threaded(&mut self, group: GroupProxy<CbGroup>, ctx: &mut Ctx) {
        let done = self.done.clone();
        let pes = ctx.num_pes() as u32;
        ctx.spawn(move |t| async move {
            let mut reflected = 0u64;
            for pe in (0..pes).step_by(2) {
                let want = 237 + 13 * u64::from(pe);
                let got = t
                    .ask(move |ctx, r| group.at(pe).reflect_to(ctx, want, r))
                    .await?;
                assert_eq!(got, want, "threaded callback returned the wrong value");
                reflected += 1;
            }
            t.with(move |ctx| ctx.send_to_callback(&done, reflected))
                .await;
            Ok::<(), AskError>(())
        });
    }
}

fn register(reg: &mut Registry) -> &mut Registry {
    CbChare::register(reg);
    CbArray::register(reg);
    CbGroup::register(reg);
    CbCoord::register(reg)
}

/// Every step's targets report the expected value, then one task reflection per even
/// PE.
pub fn callback(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let reflected: u64 = run_for(layer, pes, register, |ctx, done| {
            ctx.create_chare::<CbCoord>(done, 0);
        });
        assert_eq!(reflected, u64::from(pes.div_ceil(2)), "{pes} PEs");
    }
}
