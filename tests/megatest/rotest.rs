//! rotest: values fixed before the run (Charm++'s readonly variables, arrays and
//! message) must read the same on every PE. chorus has no readonly globals: such
//! values are the group's creation argument, set once on PE 0 and the same on every
//! member, which checks them and reports to member 0.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, Ctx, Layer};
use serde::{Deserialize, Serialize};

/// The larger readonly array's length.
const SIZE: usize = 1000;

/// What the original's readonlies hold: two int arrays and a message.
#[derive(Clone, Serialize, Deserialize)]
pub struct Readonly {
    num: [i32; 10],
    sized: Vec<i32>,
    msg: Vec<u8>,
}

impl Readonly {
    fn new() -> Self {
        Readonly {
            num: std::array::from_fn(|i| (i * i) as i32 + 1023),
            sized: (0..SIZE as i32).map(|i| i * i + 511).collect(),
            msg: (0..1024).map(|i| (i % 256) as u8).collect(),
        }
    }
    fn intact(&self) -> bool {
        let want = Readonly::new();
        self.num == want.num && self.sized == want.sized && self.msg == want.msg
    }
}

/// A member: checks the values, then member 0 counts the reports.
#[derive(Serialize, Deserialize)]
struct RoGroup {
    values: Readonly,
    done: Callback,
    numdone: u32,
}

#[chare]
impl RoGroup {
    #[init]
    fn new(values: Readonly, done: Callback) -> Self {
        RoGroup {
            values,
            done,
            numdone: 0,
        }
    }
    #[entry]
    fn start(&mut self, ctx: &mut Ctx) {
        assert!(self.values.intact(), "rotest failed on PE {}", ctx.my_pe());
        let group = ctx.this_group::<RoGroup>().expect("a group");
        group.at(0).done(ctx);
    }
    #[entry]
    fn done(&mut self, ctx: &mut Ctx) {
        self.numdone += 1;
        if self.numdone == ctx.num_pes() as u32 {
            ctx.send_to_callback(&self.done, self.numdone);
        }
    }
}

/// Every PE reads the same values.
pub fn rotest(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let n: u32 = run_for(layer, pes, RoGroup::register, |ctx, done| {
            let group = ctx.create_group::<RoGroup>((Readonly::new(), done));
            group.start(ctx);
        });
        assert_eq!(n, pes, "{pes} PEs");
    }
}
