//! The sections crate's one rule for a callback naming a whole group: a result for a
//! member goes to the group's member on that member's PE, once.

use chorus_core::{Callback, Chare, Config, Ctx, Entry, GroupProxy, Layer, Reducer, Registry};
use chorus_core::{RunReport, Runtime};
use chorus_sections::collectives::{Collectives, RangeMember};
use chorus_sections::range::RangeSection;
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    coll: Collectives,
    sum: Entry<Member, u64>,
}

struct Member {
    init: Init,
    heard: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Go,
    Sum(u64),
}

impl Chare for Member {
    type Init = Init;
    type Msg = Msg;
    fn create(init: Init, _: &mut Ctx) -> Self {
        Member { init, heard: 0 }
    }
    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        let me: GroupProxy<Member> = ctx.this_group().expect("a group member");
        match msg {
            Msg::Go => {
                let world = RangeSection::world(ctx.num_pes() as u32, 2).expect("a world");
                let member = RangeMember::new(world, ctx.my_pe()).expect("a member");
                let cb = Callback::group_all(&me, self.init.sum);
                let pe = u64::from(ctx.my_pe());
                self.init
                    .coll
                    .allreduce(ctx, member, pe, Reducer::Sum, cb)
                    .expect("starts");
            }
            Msg::Sum(s) => {
                self.heard += 1;
                ctx.publish("heard", &(ctx.my_pe(), self.heard, s));
            }
        }
    }
}

fn run(layer: Layer, pes: u32) -> RunReport {
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Member>("Member");
    let sum = reg.entry::<Member, u64>("Member::sum", Msg::Sum);
    let cfg = Config {
        layer,
        ..Config::with_pes(pes)
    };
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let coll = Collectives::create(ctx);
            let g = ctx.create_group::<Member>(Init { coll, sum });
            g.broadcast(ctx, Msg::Go);
            ctx.exit_on_quiescence();
        })
        .expect("the job runs")
}

/// An allreduce whose callback names the whole group: each PE's member hears the
/// result once (each member's result went to every PE, so each heard it 6 times).
#[test]
fn a_group_callback_reaches_the_members_own_pe_once() {
    for layer in [Layer::Threads, Layer::Sim] {
        let report = run(layer, 6);
        let mut heard: Vec<(u32, u64, u64)> = report
            .outputs("heard")
            .into_iter()
            .map(|(_, h)| h)
            .collect();
        heard.sort_unstable();
        let last: Vec<(u32, u64, u64)> = (0..6)
            .map(|pe| *heard.iter().rfind(|h| h.0 == pe).expect("heard"))
            .collect();
        assert_eq!(
            last,
            (0..6).map(|pe| (pe, 1, 15)).collect::<Vec<_>>(),
            "{layer:?}"
        );
    }
}
