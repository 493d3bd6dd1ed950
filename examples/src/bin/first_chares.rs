//! first_chares: the smallest complete chorus program. A main chare creates a group
//! (one member per PE), every member answers with its PE number, and a sum reduction
//! brings the total back to the main chare, which prints it and ends the job.
//!
//! ```sh
//! cargo run -p chorus-examples --bin first_chares -- --pes 4
//! cargo run -p chorus-examples --bin first_chares -- --layer sim --pes 1000
//! ```
//!
//! prints `4 members answered; their PE numbers add up to 6 (expected 6)`.

use chorus_core::{Callback, Chare, Config, Ctx, Entry, Reducer, Registry, Runtime};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// The main chare: one object, on PE 0, that starts the work and hears the result.
struct Main {
    /// The entry the reduction delivers to. Callbacks name a registered entry, never
    /// a closure, so they mean the same thing in every process of an MPI job.
    total: Entry<Main, u64>,
}

/// A chare's entry methods are the variants of its message type.
#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Start,
    Total(u64),
}

impl Chare for Main {
    type Init = Entry<Main, u64>;
    type Msg = MainMsg;

    fn create(total: Entry<Main, u64>, _: &mut Ctx) -> Self {
        Main { total }
    }

    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Start => {
                // Creating a group puts one Member on every PE; a broadcast reaches
                // them all. The callback tells them where the sum should go.
                let me = ctx.this_chare::<Main>().expect("Main is a singleton chare");
                let members = ctx.create_group::<Member>(());
                members.broadcast(ctx, MemberMsg::Answer(Callback::chare(&me, self.total)));
            }
            MainMsg::Total(sum) => {
                // Main lives on PE 0 only, so this prints once on every layer
                // (under mpirun too, where each rank runs some of the PEs).
                let n = ctx.num_pes() as u64;
                println!(
                    "{n} members answered; their PE numbers add up to {sum} (expected {})",
                    n * (n - 1) / 2
                );
                // Nothing else is going on, so the job can end here; a program with
                // work still in flight would use ctx.exit_on_quiescence() instead.
                ctx.exit();
            }
        }
    }
}

/// A group member: one per PE, with no state of its own.
struct Member;

#[derive(Clone, Serialize, Deserialize)]
enum MemberMsg {
    Answer(Callback),
}

impl Chare for Member {
    type Init = ();
    type Msg = MemberMsg;

    fn create(_: (), _: &mut Ctx) -> Self {
        Member
    }

    fn handle(&mut self, MemberMsg::Answer(done): MemberMsg, ctx: &mut Ctx) {
        // Every member contributes once; the runtime combines the values along a
        // tree of PEs and calls `done` once, with the sum, when all have arrived.
        ctx.contribute(u64::from(ctx.my_pe()), Reducer::Sum, done);
    }
}

fn main() -> ExitCode {
    // --pes, --layer, --seed, --trace, ... and the CHORUS_* variables.
    let config = Config::from_args();
    // Every process registers the same chares and entries in the same order: that
    // is how an entry named in one process is found in another.
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Member>("Member");
    let total = reg.entry::<Main, u64>("Main::total", MainMsg::Total);
    // The closure runs once, on PE 0, when every PE is up.
    let result = Runtime::new(reg, config).run(move |ctx| {
        let main = ctx.create_chare::<Main>(total, 0);
        main.send(ctx, MainMsg::Start);
    });
    // The error, if any, printed once: `first_chares: …`.
    chorus_core::exit_status(result)
}
