//! priotest: a chare sends itself messages in falling priority order (the lowest
//! priority value last) before it handles any; they must be handled in priority
//! order, smallest value first, as Charm++'s integer FIFO queueing does.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, Ctx, Layer, SendOpts};
use serde::{Deserialize, Serialize};

/// Messages the chare sends itself.
const NMSG: i32 = 100;

/// Receives its own prioritized messages and checks their order.
#[derive(Serialize, Deserialize)]
struct PrioChare {
    last: i32,
    done: Callback,
}

#[chare]
impl PrioChare {
    /// Queue `NMSG` messages to itself, priority `NMSG - 1` first and 0 last.
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<PrioChare>().expect("a chare");
        for prio in (0..NMSG).rev() {
            me.send_with(ctx, PrioChareMsg::Recv(prio), SendOpts::prio(prio));
        }
        PrioChare { last: -1, done }
    }
    /// Check that no message comes after one of larger priority value.
    #[entry]
    fn recv(&mut self, prio: i32, ctx: &mut Ctx) {
        assert!(
            prio > self.last,
            "priotest: priority {prio} handled after {}",
            self.last
        );
        self.last = prio;
        if prio == NMSG - 1 {
            ctx.send_to_callback(&self.done, true);
        }
    }
}

/// All `NMSG` messages, handled in priority order on each PE count.
pub fn priotest(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let ok: bool = run_for(layer, pes, PrioChare::register, move |ctx, done| {
            ctx.create_chare::<PrioChare>(done, pes - 1);
        });
        assert!(ok, "{pes} PEs");
    }
}
