//! groupring: a message travels round the group's members, PE after PE, ten times;
//! PE 0 counts the rings, and every member must see it once per ring.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, Ctx, Layer};
use serde::{Deserialize, Serialize};

/// Rings the message makes.
const RINGS: u32 = 10;

/// The travelling message.
#[derive(Clone, Serialize, Deserialize)]
pub struct Lap {
    rings: u32,
    done: Callback,
}

/// A member of the ring: counts the times the message passed it.
#[derive(Default)]
struct RingMember {
    seen: u32,
}

#[chare]
impl RingMember {
    /// Pass the message to the next PE; PE 0 counts rings and stops after the last,
    /// then asks every member for its count.
    #[entry]
    fn start(&mut self, mut lap: Lap, ctx: &mut Ctx) {
        self.seen += 1;
        let group = ctx.this_group::<RingMember>().expect("a group");
        let me = ctx.my_pe();
        if me == 0 && lap.rings == RINGS {
            group.report(ctx, lap.done);
            return;
        }
        if me == 0 {
            lap.rings += 1;
        }
        let next = (me + 1) % ctx.num_pes() as u32;
        group.at(next).start(ctx, lap);
    }
    /// Contribute how many times the message passed: the least over the group.
    #[entry]
    fn report(&mut self, done: Callback, ctx: &mut Ctx) {
        let want = if ctx.my_pe() == 0 { RINGS + 1 } else { RINGS };
        assert_eq!(self.seen, want, "groupring: PE {}", ctx.my_pe());
        ctx.contribute(u64::from(self.seen), chorus_core::Reducer::Sum, done);
    }
}

/// Ten rings: PE 0 sees the message eleven times, every other PE ten.
pub fn groupring(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let total: u64 = run_for(layer, pes, RingMember::register, |ctx, done| {
            let group = ctx.create_group::<RingMember>(());
            group.at(0).start(ctx, Lap { rings: 0, done });
        });
        assert_eq!(total, u64::from(RINGS) * u64::from(pes) + 1, "{pes} PEs");
    }
}
