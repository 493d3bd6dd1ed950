//! sections: split the PEs by colour, even and odd PE numbers, as `MPI_Comm_split`
//! does, then sum the PE numbers of each colour with an allreduce over its section.
//!
//! ```sh
//! cargo run -p chorus-examples --bin sections -- --pes 8
//! cargo run --release -p chorus-examples --bin sections -- --layer sim --pes 100000
//! ```
//!
//! prints, once per colour (by the member of rank 0, so once under MPI too):
//! `colour 0: 4 members, sum 12` and `colour 1: 4 members, sum 16`.

use chorus_core::{Callback, Chare, Config, Ctx, Entry, GroupProxy, Reducer, Registry, Runtime};
use chorus_sections::{Section, Sections, Split};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// What every worker starts with: the sections handle and its two entries.
#[derive(Clone, Serialize, Deserialize)]
struct Init {
    sections: Sections,
    joined: Entry<Worker, Section>,
    summed: Entry<Worker, u64>,
}

/// One member per PE.
struct Worker {
    init: Init,
    /// The section this PE joined, once it has.
    section: Option<Section>,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Start,
    Joined(Section),
    Summed(u64),
}

impl Chare for Worker {
    type Init = Init;
    type Msg = Msg;

    fn create(init: Init, _: &mut Ctx) -> Self {
        Worker {
            init,
            section: None,
        }
    }

    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        let me: GroupProxy<Worker> = ctx.this_group().expect("Worker is a group");
        let pe = ctx.my_pe();
        let sections = self.init.sections;
        match msg {
            // MPI_Comm_split(world, pe % 2, pe): each PE says only its own colour and
            // key; a callback naming the group reaches this PE's member.
            Msg::Start => {
                let split = Split::new(2).colour(pe % 2).key(pe);
                let joined = Callback::group_all(&me, self.init.joined);
                if let Err(e) = sections.split(ctx, split, joined) {
                    ctx.fail("sections example", e);
                }
            }
            // MPI_Allreduce(pe, SUM) over the section just made.
            Msg::Joined(section) => {
                let summed = Callback::group_all(&me, self.init.summed);
                let value = u64::from(pe);
                if let Err(e) = sections.allreduce(ctx, &section, value, Reducer::Sum, summed) {
                    ctx.fail("sections example", e);
                }
                self.section = Some(section);
            }
            // Every member has the sum; the one of rank 0 prints it.
            Msg::Summed(sum) => {
                let section = self.section.as_ref().expect("joined before the sum");
                if section.rank == 0 {
                    println!("colour {}: {} members, sum {sum}", pe % 2, section.size);
                }
            }
        }
    }
}

fn main() -> ExitCode {
    // --pes, --layer, --seed, --trace, ... and the CHORUS_* variables.
    let config = Config::from_args();
    // Every process registers the same things in the same order.
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    reg.chare::<Worker>("Worker");
    let joined = reg.entry::<Worker, Section>("Worker::joined", Msg::Joined);
    let summed = reg.entry::<Worker, u64>("Worker::summed", Msg::Summed);
    let result = Runtime::new(reg, config).run(move |ctx| {
        // On PE 0: the section builder and collectives groups, once per job.
        let sections = sections.setup(ctx);
        let init = Init {
            sections,
            joined,
            summed,
        };
        ctx.create_group::<Worker>(init).broadcast(ctx, Msg::Start);
        ctx.exit_on_quiescence();
    });
    // The error, if any, printed once: `sections: …`.
    chorus_core::exit_status(result)
}
