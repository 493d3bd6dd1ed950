//! Misusing a freed section on sim: each misuse is a typed error, reported under
//! `--on-error`, and never a panic, a hang or a message kept for ever.

use chorus_core::{Callback, Chare, Config, Ctx, Entry, ErrorPolicy, GroupProxy, Layer, Pe};
use chorus_core::{Reducer, Registry, RunReport, Runtime, RuntimeError};
use chorus_sections::collectives::TreeMember;
use chorus_sections::host::{HostError, Parent};
use chorus_sections::section::{SectionId, WORLD_CREATOR};
use chorus_sections::{Section, Sections, SectionsStats, Split};
use serde::{Deserialize, Serialize};

/// What the members of each half of a split of the world do with their section.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Misuse {
    /// Free it, then free it again.
    FreeTwice,
    /// Free it, and once freed start an allreduce on it.
    CollectiveAfterFree,
    /// Rank 0 broadcasts over it, then frees it; the others only free it, so the
    /// broadcast's messages reach members that freed the section.
    MessageAfterFree,
    /// Rank 0 splits it, then frees it; the others only free it.
    SplitNotCalledEverywhere,
    /// Free a section this PE is no member of.
    FreeAnother,
}

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    sections: Sections,
    misuse: Misuse,
    joined: Entry<Worker, Section>,
    freed: Entry<Worker, SectionId>,
    summed: Entry<Worker, u64>,
    snap: Entry<Worker, ()>,
    stats: Entry<Worker, SectionsStats>,
}

struct Worker {
    init: Init,
    section: Option<Section>,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Go,
    Joined(Section),
    Freed(SectionId),
    Summed(u64),
    Snap(()),
    Stats(SectionsStats),
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
        let me: GroupProxy<Worker> = ctx.this_group().expect("a group member");
        let pe = ctx.my_pe();
        let sections = self.init.sections;
        let freed = Callback::group_all(&me, self.init.freed);
        match msg {
            Msg::Go => {
                let split = Split::new(2).colour(pe % 2).key(pe);
                let joined = Callback::group_all(&me, self.init.joined);
                sections.split(ctx, split, joined).expect("a valid split");
            }
            Msg::Joined(s) => {
                match self.init.misuse {
                    Misuse::FreeTwice => {
                        sections.free(ctx, &s, freed.clone()).expect("frees");
                        sections.free(ctx, &s, freed).expect("checked later");
                    }
                    Misuse::CollectiveAfterFree => {
                        sections.free(ctx, &s, freed).expect("frees");
                    }
                    Misuse::MessageAfterFree => {
                        if s.rank == 0 {
                            let cb = Callback::group_all(&me, self.init.summed);
                            let member = TreeMember::new(s.clone(), pe);
                            (sections.collectives())
                                .broadcast(ctx, member, 0, Some(7u64), cb)
                                .expect("starts");
                        }
                        sections.free(ctx, &s, freed).expect("frees");
                    }
                    Misuse::SplitNotCalledEverywhere => {
                        if s.rank == 0 {
                            let split = Split::new(1).parent(Parent::Section(s.id));
                            let joined = Callback::group_all(&me, self.init.joined);
                            sections.split(ctx, split, joined).expect("a valid split");
                        }
                        sections.free(ctx, &s, freed).expect("frees");
                    }
                    Misuse::FreeAnother => {
                        // The other half's section: same creator, the other colour.
                        let mut other = s.clone();
                        other.id.counter ^= 1;
                        sections.free(ctx, &other, freed).expect("checked later");
                    }
                }
                self.section = Some(s);
            }
            Msg::Freed(id) => {
                let s = self.section.clone().expect("joined");
                assert_eq!(id, s.id);
                if self.init.misuse == Misuse::CollectiveAfterFree {
                    let cb = Callback::group_all(&me, self.init.summed);
                    (sections.allreduce(ctx, &s, 1u64, Reducer::Sum, cb)).expect("starts");
                }
            }
            Msg::Summed(_) => ctx.publish("summed", &pe),
            Msg::Snap(()) => sections.stats(ctx, Callback::group_all(&me, self.init.stats)),
            Msg::Stats(stats) => {
                ctx.publish("stats", &stats);
                if pe == 0 {
                    ctx.exit_on_quiescence();
                }
            }
        }
    }
}

fn run(misuse: Misuse, on_error: ErrorPolicy) -> Result<RunReport, RuntimeError> {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    reg.chare::<Worker>("Worker");
    let joined = reg.entry::<Worker, Section>("Worker::joined", Msg::Joined);
    let freed = reg.entry::<Worker, SectionId>("Worker::freed", Msg::Freed);
    let summed = reg.entry::<Worker, u64>("Worker::summed", Msg::Summed);
    let snap = reg.entry::<Worker, ()>("Worker::snap", Msg::Snap);
    let stats = reg.entry::<Worker, SectionsStats>("Worker::stats", Msg::Stats);
    let cfg = Config {
        layer: Layer::Sim,
        seed: 5,
        on_error,
        ..Config::with_pes(8)
    };
    Runtime::new(reg, cfg).run(move |ctx| {
        let init = Init {
            sections: sections.setup(ctx),
            misuse,
            joined,
            freed,
            summed,
            snap,
            stats,
        };
        let workers = ctx.create_group::<Worker>(init);
        workers.broadcast(ctx, Msg::Go);
        ctx.start_quiescence(Callback::group_all(&workers, snap));
    })
}

/// The job ends with the error `by` reports, whose message has `says`.
fn ends_with(misuse: Misuse, by: &str, says: &str) {
    match run(misuse, ErrorPolicy::Abort) {
        Err(RuntimeError::Reported {
            by: got, message, ..
        }) => {
            assert_eq!(got, by, "{misuse:?}: {message}");
            assert!(message.contains(says), "{misuse:?}: {message}");
        }
        other => panic!("{misuse:?}: {:?}", other.map(|r| r.errors().len())),
    }
}

/// Under `drop` the job ends; every error is `by`'s and has `says`; returns how
/// many there are and every PE's map sizes at the end.
fn carries_on(misuse: Misuse, by: &str, says: &str) -> (usize, Vec<(Pe, SectionsStats)>) {
    let report = run(misuse, ErrorPolicy::Drop).unwrap_or_else(|e| panic!("{misuse:?}: {e}"));
    let errors = report.errors();
    for e in &errors {
        assert!(
            matches!(e, RuntimeError::Reported { by: b, message, .. } if b == by && message.contains(says)),
            "{misuse:?}: {e}"
        );
    }
    (errors.len(), report.outputs::<SectionsStats>("stats"))
}

#[test]
fn a_second_free_is_an_error() {
    let freed_here = "was freed here";
    ends_with(Misuse::FreeTwice, "section builder", freed_here);
    let (errors, stats) = carries_on(Misuse::FreeTwice, "section builder", freed_here);
    assert_eq!(errors, 8, "one per member");
    for (pe, s) in stats {
        assert_eq!(s.total(), 1, "PE {pe}: {:?}", s.maps());
    }
}

#[test]
fn a_collective_on_a_freed_section_is_an_error() {
    let says = "was freed on PE";
    ends_with(Misuse::CollectiveAfterFree, "section collectives", says);
    let (errors, stats) = carries_on(Misuse::CollectiveAfterFree, "section collectives", says);
    assert_eq!(errors, 8, "one per member");
    for (pe, s) in stats {
        assert_eq!(s.total(), 1, "PE {pe}: {:?}", s.maps());
    }
}

#[test]
fn a_message_for_a_freed_section_is_dropped_counted_and_reported() {
    let says = "after it freed the section";
    ends_with(Misuse::MessageAfterFree, "section collectives", says);
    let (errors, stats) = carries_on(Misuse::MessageAfterFree, "section collectives", says);
    // Rank 0's broadcast reaches its 3 children (k = 4) in each half of 4, which
    // freed the section before or after it came.
    let dropped: u64 = stats.iter().map(|(_, s)| s.host.dropped).sum();
    assert_eq!(dropped, 6);
    assert_eq!(errors as u64, dropped);
    for (pe, s) in stats {
        assert_eq!(s.total(), 1, "PE {pe}: nothing kept: {:?}", s.maps());
    }
}

#[test]
fn a_split_not_called_by_every_member_before_the_free_is_an_error() {
    match run(Misuse::SplitNotCalledEverywhere, ErrorPolicy::Abort) {
        Err(RuntimeError::Reported { by, message, .. }) => {
            assert_eq!(by, "section builder");
            assert!(
                message.contains("was freed here") || message.contains("without calling"),
                "{message}"
            );
        }
        other => panic!("{:?}", other.map(|r| r.errors().len())),
    }
}

#[test]
fn freeing_a_section_of_which_this_pe_is_no_member_is_an_error() {
    ends_with(Misuse::FreeAnother, "section builder", "is not a member");
}

#[test]
fn freeing_the_world_or_a_forged_range_view_is_refused_at_the_call() {
    // Checked in the caller's handler, before anything is sent.
    let world = Section {
        id: SectionId::world(4),
        rank: 0,
        size: 4,
        k: 2,
        parent: None,
        children: vec![1, 2],
    };
    assert_eq!(world.id.creator, WORLD_CREATOR);
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    let report = Runtime::new(reg, Config::with_pes(1))
        .run(move |ctx| {
            let sections = sections.setup(ctx);
            let err = sections.free(ctx, &world, Callback::Ignore);
            ctx.publish(
                "refused",
                &matches!(err, Err(HostError::UnknownSection { .. })),
            );
            ctx.exit();
        })
        .expect("runs");
    assert_eq!(report.output::<bool>("refused"), Some(true));
}
