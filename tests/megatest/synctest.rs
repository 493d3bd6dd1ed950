//! synctest: main creates ten chares, each with a value (1 to 10), and an array of
//! ten elements made with 23; with every chare's handle back, main calls each one's
//! method and waits for its return value (Charm++'s `[sync]` entries from a
//! `[threaded]` one; here an async task's `ask`). The chares' values must sum to 55
//! and every element must answer 23.

use super::{pe_counts, run_for};
use chorus_core::{chare, AskError, Callback, ChareProxy, Ctx, Layer, Registry, ReplyTo};
use serde::{Deserialize, Serialize};

/// Chares (and elements) main calls.
const CHILDREN: usize = 10;
/// What every element is made with.
const ARRAY_VALUE: u64 = 23;

/// What a `test` call carries, checked on arrival.
fn payload() -> Vec<u32> {
    (0..16).map(|i| i * 3).collect()
}

/// A chare or element holding a value; answers `test` with it.
#[derive(Serialize, Deserialize)]
struct SyncChild {
    value: u64,
}

#[chare]
impl SyncChild {
    /// A chare tells main its handle; an element does not.
    #[init]
    fn new(value: u64, main: Option<ChareProxy<SyncMain>>, ctx: &mut Ctx) -> Self {
        if let Some(main) = main {
            let me = ctx.this_chare::<SyncChild>().expect("a chare");
            main.reply(ctx, me);
        }
        SyncChild { value }
    }
    /// The called method: check the argument, return the value.
    #[entry]
    fn test(&mut self, data: Vec<u32>, back: ReplyTo<u64>, ctx: &mut Ctx) {
        assert_eq!(
            data,
            payload(),
            "synctest: message to a sync method corrupted"
        );
        back.send(ctx, self.value);
    }
}

/// Main: creates the children, then calls each in turn from a task.
#[derive(Serialize, Deserialize)]
struct SyncMain {
    children: Vec<ChareProxy<SyncChild>>,
    done: Callback,
}

#[chare]
impl SyncMain {
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<SyncMain>().expect("a chare");
        let pes = ctx.num_pes() as u32;
        for i in 0..CHILDREN as u32 {
            ctx.create_chare::<SyncChild>((u64::from(i) + 1, Some(me)), i % pes);
        }
        SyncMain {
            children: Vec::new(),
            done,
        }
    }
    /// A child's handle; with all in, run the calls.
    #[entry]
    fn reply(&mut self, child: ChareProxy<SyncChild>, ctx: &mut Ctx) {
        self.children.push(child);
        if self.children.len() < CHILDREN {
            return;
        }
        let children = std::mem::take(&mut self.children);
        let done = self.done.clone();
        let arr = ctx.create_array_1d::<SyncChild>(
            CHILDREN,
            (ARRAY_VALUE, None),
            chorus_core::ArrayMap::RoundRobin,
        );
        ctx.spawn(move |t| async move {
            let mut sum = 0;
            for c in children {
                sum += t.ask(move |ctx, r| c.test(ctx, payload(), r)).await?;
            }
            assert_eq!(
                sum,
                (CHILDREN * (CHILDREN + 1) / 2) as u64,
                "chare synctest failed"
            );
            for i in 0..CHILDREN {
                let v = t
                    .ask(move |ctx, r| arr.at(i).test(ctx, payload(), r))
                    .await?;
                assert_eq!(v, ARRAY_VALUE, "array synctest failed");
            }
            t.with(move |ctx| ctx.send_to_callback(&done, sum)).await;
            Ok::<(), AskError>(())
        });
    }
}

fn register(reg: &mut Registry) -> &mut Registry {
    SyncChild::register(reg);
    SyncMain::register(reg)
}

/// The chares' values sum to 55 and every element answers 23.
pub fn synctest(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let sum: u64 = run_for(layer, pes, register, |ctx, done| {
            ctx.create_chare::<SyncMain>(done, 0);
        });
        assert_eq!(sum, 55, "{pes} PEs");
    }
}
