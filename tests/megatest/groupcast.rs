//! groupcast: a group is created with its main chare's handle; every member reports
//! its creation to main in a reduction, then main broadcasts a checked message to the
//! group twice and each time every member checks it and reports again. Main counts
//! three rounds, each with every member in it.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, ChareProxy, Ctx, Layer, Reducer};
use serde::{Deserialize, Serialize};

/// Rounds of reports main waits for: the creation and two broadcasts.
const ROUNDS: u32 = 3;

/// The broadcast message's fixed contents.
fn pattern() -> Vec<f64> {
    (0..8).map(|i| f64::from(i) * 1.5).collect()
}

/// The main chare: starts a broadcast after each complete round.
#[derive(Serialize, Deserialize)]
struct CastMain {
    group: Option<chorus_core::GroupProxy<CastMember>>,
    rounds: u32,
    done: Callback,
}

#[chare]
impl CastMain {
    /// Create the group, handing it this chare.
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<CastMain>().expect("a chare");
        let group = ctx.create_group::<CastMember>(me);
        CastMain {
            group: Some(group),
            rounds: 0,
            done,
        }
    }
    /// A round is complete: `members` reported in it.
    #[entry(callback)]
    fn group_ready(&mut self, members: u64, ctx: &mut Ctx) {
        assert_eq!(members, ctx.num_pes() as u64, "groupcast: a member missing");
        self.rounds += 1;
        let group = self.group.expect("created");
        if self.rounds < ROUNDS {
            group.do_broadcast(ctx, pattern());
        } else {
            ctx.send_to_callback(&self.done, self.rounds);
        }
    }
}

/// A member: reports to main when created and after each broadcast.
#[derive(Serialize, Deserialize)]
struct CastMember {
    main: ChareProxy<CastMain>,
}

#[chare]
impl CastMember {
    #[init]
    fn new(main: ChareProxy<CastMain>, ctx: &mut Ctx) -> Self {
        let cb = main.group_ready_callback(ctx);
        ctx.contribute(1u64, Reducer::Sum, cb);
        CastMember { main }
    }
    /// Check the broadcast and report.
    #[entry]
    fn do_broadcast(&mut self, data: Vec<f64>, ctx: &mut Ctx) {
        assert_eq!(data, pattern(), "groupcast: broadcast message corrupted");
        let cb = self.main.group_ready_callback(ctx);
        ctx.contribute(1u64, Reducer::Sum, cb);
    }
}

fn register(reg: &mut chorus_core::Registry) -> &mut chorus_core::Registry {
    CastMain::register(reg);
    CastMember::register(reg)
}

/// Three complete rounds on each PE count.
pub fn groupcast(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let rounds: u32 = run_for(layer, pes, register, |ctx, done| {
            ctx.create_chare::<CastMain>(done, 0);
        });
        assert_eq!(rounds, ROUNDS, "{pes} PEs");
    }
}
