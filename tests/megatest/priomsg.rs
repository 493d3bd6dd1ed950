//! priomsg: a message sent with a priority reaches its chare with its contents
//! intact (the priority travels beside the data, never over it).

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, Ctx, Layer, SendOpts};

/// The priority the message is sent with.
const PRIO: i32 = 100;

/// Checks the prioritized message.
#[derive(Default)]
struct PrioTest;

#[chare]
impl PrioTest {
    /// Check the squares and report.
    #[entry]
    fn donow(&mut self, data: Vec<i32>, done: Callback, ctx: &mut Ctx) {
        let intact = data.len() == 10 && data.iter().zip(0i32..).all(|(&v, i)| v == i * i);
        assert!(intact, "priomsg: message corrupted: {data:?}");
        ctx.send_to_callback(&done, true);
    }
}

/// The prioritized message arrives intact, on the last PE.
pub fn priomsg(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let ok: bool = run_for(layer, pes, PrioTest::register, move |ctx, done| {
            let chare = ctx.create_chare::<PrioTest>((), pes - 1);
            let data: Vec<i32> = (0..10).map(|i| i * i).collect();
            chare.send_with(ctx, PrioTestMsg::Donow(data, done), SendOpts::prio(PRIO));
        });
        assert!(ok, "{pes} PEs");
    }
}
