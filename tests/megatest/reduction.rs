//! reduction: two arrays of 5 elements and a group each contribute twice, the pair
//! (1, 0) then (1, 2), summed; every result must be (members, 0) or (members,
//! 2 * members), each collection must deliver both, and the three collections send
//! their results to three kinds of callback (a chare, a group member, an array
//! element).

use super::{pe_counts, run_for};
use chorus_core::{chare, ArrayMap, Callback, Ctx, Layer, Reducer, Registry};
use serde::{Deserialize, Serialize};

/// Elements of each array.
const N: u64 = 5;

/// A contributor of the arrays or the group: two contributions to `cb`.
#[derive(Default)]
struct Contributor;

#[chare]
impl Contributor {
    #[entry]
    fn start(&mut self, cb: Callback, ctx: &mut Ctx) {
        ctx.contribute(vec![1i64, 0], Reducer::Sum, cb.clone());
        ctx.contribute(vec![1i64, 2], Reducer::Sum, cb);
    }
}

/// Where results go: checks each and forwards it, tagged, to the tally.
#[derive(Serialize, Deserialize)]
struct Client {
    which: u64,
    members: i64,
    tally: Callback,
}

#[chare]
impl Client {
    #[init]
    fn new(which: u64, members: i64, tally: Callback) -> Self {
        Client {
            which,
            members,
            tally,
        }
    }
    /// Check a result's fields; tell the tally which of the two it was.
    #[entry(callback)]
    fn result(&mut self, v: Vec<i64>, ctx: &mut Ctx) {
        let n = self.members;
        assert_eq!(v.len(), 2, "reduction: result of unexpected size");
        assert_eq!(v[0], n, "reduction: corrupted first field");
        assert!(
            v[1] == 0 || v[1] == 2 * n,
            "reduction: corrupted second field"
        );
        let second = u64::from(v[1] != 0);
        ctx.send_to_callback(&self.tally, 1u64 << (2 * self.which + second));
    }
}

/// Collects the six results: one bit each, all six must be set once.
#[derive(Serialize, Deserialize)]
struct Tally {
    bits: u64,
    done: Callback,
}

#[chare]
impl Tally {
    #[init]
    fn new(done: Callback) -> Self {
        Tally { bits: 0, done }
    }
    #[entry(callback)]
    fn got(&mut self, bit: u64, ctx: &mut Ctx) {
        assert_eq!(self.bits & bit, 0, "reduction: result {bit:#x} twice");
        self.bits |= bit;
        if self.bits == 0b11_1111 {
            ctx.send_to_callback(&self.done, self.bits);
        }
    }
}

fn register(reg: &mut Registry) -> &mut Registry {
    Contributor::register(reg);
    Client::register(reg);
    Tally::register(reg)
}

/// Both results of each of the three collections, each exactly once.
pub fn reduction(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let bits: u64 = run_for(layer, pes, register, move |ctx, done| {
            let tally = ctx.create_chare::<Tally>(done, 0).got_callback(ctx);
            let last = pes - 1;
            let (n, p) = (N as i64, i64::from(pes));
            let arr = ctx.create_array_1d::<Contributor>(N as usize, (), ArrayMap::Block);
            let grp = ctx.create_group::<Contributor>(());
            let arr2 = ctx.create_array_1d::<Contributor>(N as usize, (), ArrayMap::RoundRobin);
            let to_chare = ctx.create_chare::<Client>((0, n, tally.clone()), last);
            let to_member = ctx.create_group::<Client>((1, p, tally.clone()));
            let to_elt = ctx.create_array_1d::<Client>(2, (2, n, tally), ArrayMap::Block);
            let cb = to_chare.result_callback(ctx);
            arr.start(ctx, cb);
            let cb = to_member.at(last).result_callback(ctx);
            grp.start(ctx, cb);
            let cb = to_elt.at(1).result_callback(ctx);
            arr2.start(ctx, cb);
        });
        assert_eq!(bits, 0b11_1111, "{pes} PEs");
    }
}
