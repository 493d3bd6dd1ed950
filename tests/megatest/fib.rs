//! fib: Fibonacci of 20 by a tree of chares, each created on a PE the runtime's user
//! picks by spreading the tree: a chare for n above the grain creates two children
//! for n - 1 and n - 2 and adds their answers; at or below the grain it computes
//! sequentially. The root's answer must be 6765.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, ChareProxy, Ctx, Layer};
use serde::{Deserialize, Serialize};

/// The Fibonacci number computed.
const N: u32 = 20;
/// At or below this, a chare computes sequentially.
const GRAIN: u32 = 10;

/// Where a chare's answer goes.
#[derive(Clone, Serialize, Deserialize)]
pub enum Parent {
    /// The root's answer: main's callback.
    Main(Callback),
    /// Another chare of the tree.
    Chare(ChareProxy<Fib>),
}

impl Parent {
    fn send(&self, ctx: &mut Ctx, x: u64) {
        match self {
            Parent::Main(cb) => ctx.send_to_callback(cb, x),
            Parent::Chare(p) => p.send_parent(ctx, x),
        }
    }
}

fn sequential(n: u32) -> u64 {
    if n < 2 {
        u64::from(n)
    } else {
        sequential(n - 1) + sequential(n - 2)
    }
}

/// One node of the tree.
#[derive(Serialize, Deserialize)]
pub struct Fib {
    parent: Parent,
    sum: u64,
    count: u32,
}

#[chare]
impl Fib {
    /// Answer at once at or below the grain, else create the two children.
    #[init]
    fn new(n: u32, parent: Parent, ctx: &mut Ctx) -> Self {
        if n <= GRAIN {
            parent.send(ctx, sequential(n));
        } else {
            let me = Parent::Chare(ctx.this_chare::<Fib>().expect("a chare"));
            let pes = ctx.num_pes() as u32;
            let spread = |k: u32| (ctx.my_pe() * 3 + k + n) % pes;
            let (a, b) = (spread(1), spread(2));
            ctx.create_chare::<Fib>((n - 1, me.clone()), a);
            ctx.create_chare::<Fib>((n - 2, me), b);
        }
        Fib {
            parent,
            sum: 0,
            count: 0,
        }
    }
    /// A child's answer; with both in, answer the parent.
    #[entry]
    fn send_parent(&mut self, x: u64, ctx: &mut Ctx) {
        self.sum += x;
        self.count += 1;
        assert!(self.count <= 2, "fib: a third answer");
        if self.count == 2 {
            self.parent.send(ctx, self.sum);
        }
    }
}

/// fib(20) = 6765 on every PE count.
pub fn fib(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let x: u64 = run_for(layer, pes, Fib::register, |ctx, done| {
            ctx.create_chare::<Fib>((N, Parent::Main(done)), 0);
        });
        assert_eq!(x, 6765, "{pes} PEs");
    }
}
