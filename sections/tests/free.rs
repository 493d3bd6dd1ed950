//! Freeing sections (`MPI_Comm_free`) on sim: soaks of splits (or creations the
//! builder does not keep), allreduces and frees after which every map of the builder
//! and the collectives host is as large as after the first few rounds. The misuses
//! are in `free_errors.rs`.

use chorus_core::{Callback, Chare, Config, Ctx, Entry, GroupProxy, Layer, Pe};
use chorus_core::{Reducer, Registry, RunReport, Runtime};
use chorus_sections::collectives::TreeMember;
use chorus_sections::free::FREED_MEMORY;
use chorus_sections::host::{available, Membership, Parent, Request};
use chorus_sections::protocol::Algorithm;
use chorus_sections::section::SectionId;
use chorus_sections::{Section, Sections, SectionsStats, Split};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// The soak: `rounds` rounds, each a split of the world by colour `(pe + round) % 2`
/// (and with `nested` a split of that section in halves, the parent freed at once,
/// before the half arrives), an allreduce over the last section and its free. Map
/// sizes are read at quiescence after `first` rounds and after all of them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Plan {
    rounds: u64,
    first: u64,
    algorithm: Option<Algorithm>,
    nested: bool,
    /// Free the last section right after starting its allreduce, in the same
    /// handler: the free waits for the allreduce on each member.
    pipelined: bool,
    /// Instead of splits, PE 0 creates a section of every PE that the builder does
    /// not keep (`keep(false)`), freed with `Collectives::free`, one round after
    /// another.
    unkept: bool,
}

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    sections: Sections,
    plan: Plan,
    joined: Entry<Worker, Section>,
    summed: Entry<Worker, u64>,
    freed: Entry<Worker, SectionId>,
    snap: Entry<Worker, ()>,
    stats: Entry<Worker, SectionsStats>,
    resume: Entry<Worker, u64>,
    next: Entry<Worker, u64>,
}

struct Worker {
    init: Init,
    /// Rounds done.
    done: u64,
    /// The world split's section of this round (nested plans).
    outer: Option<Section>,
    /// The section this round's allreduce runs on.
    inner: Option<Section>,
    /// Snapshots taken.
    snaps: u32,
    /// This round's allreduce result has come.
    summed: bool,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Go,
    Joined(Section),
    Summed(u64),
    Freed(SectionId),
    Snap(()),
    Stats(SectionsStats),
    Resume(u64),
    Next(u64),
}

impl Worker {
    fn me(ctx: &Ctx) -> GroupProxy<Worker> {
        ctx.this_group().expect("a group member")
    }

    fn split(&mut self, ctx: &mut Ctx) {
        let pe = ctx.my_pe();
        if self.init.plan.unkept {
            if pe == 0 {
                let joined = Callback::group_all(&Self::me(ctx), self.init.joined);
                let mut req = Request::new(Membership::All).keep(false).on_member(joined);
                if let Some(a) = self.init.plan.algorithm {
                    req = req.algorithm(a);
                }
                self.init
                    .sections
                    .create(ctx, req)
                    .expect("a valid request");
            }
            return;
        }
        let colour = ((u64::from(pe) + self.done) % 2) as u32;
        let mut split = Split::new(2).colour(colour).key(pe);
        if let Some(a) = self.init.plan.algorithm {
            split = split.algorithm(a);
        }
        let joined = Callback::group_all(&Self::me(ctx), self.init.joined);
        self.init
            .sections
            .split(ctx, split, joined)
            .expect("a valid split");
    }

    /// Free this round's last section: with the builder's state, or only in the
    /// collectives host for a section the builder does not keep.
    fn free(&mut self, ctx: &mut Ctx) {
        let section = self.inner.clone().expect("joined");
        let freed = Callback::group_all(&Self::me(ctx), self.init.freed);
        let sections = self.init.sections;
        if self.init.plan.unkept {
            let member = TreeMember::new(section, ctx.my_pe());
            sections
                .collectives()
                .free(ctx, member, freed)
                .expect("frees");
        } else {
            sections.free(ctx, &section, freed).expect("frees");
        }
    }

    /// The sum of the PEs of this round's last section, as every member computes it.
    fn want_sum(&self, pes: u32, me: Pe) -> u64 {
        let colour = |pe: Pe| (u64::from(pe) + self.done) % 2;
        let half = |pe: Pe| (pe / 2) % 2;
        let unkept = self.init.plan.unkept;
        (0..pes)
            .filter(|&pe| unkept || colour(pe) == colour(me))
            .filter(|&pe| !self.init.plan.nested || half(pe) == half(me))
            .map(u64::from)
            .sum()
    }
}

impl Chare for Worker {
    type Init = Init;
    type Msg = Msg;
    fn create(init: Init, _: &mut Ctx) -> Self {
        Worker {
            init,
            done: 0,
            outer: None,
            inner: None,
            snaps: 0,
            summed: false,
        }
    }
    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        let me = Self::me(ctx);
        let pe = ctx.my_pe();
        let sections = self.init.sections;
        let plan = self.init.plan;
        match msg {
            Msg::Go => self.split(ctx),
            Msg::Joined(section) if plan.nested && self.outer.is_none() => {
                // Split the section in halves and free it at once: the free waits
                // for this call's start.
                let split = Split::new(2)
                    .parent(Parent::Section(section.id))
                    .colour((pe / 2) % 2)
                    .key(pe);
                let joined = Callback::group_all(&me, self.init.joined);
                sections.split(ctx, split, joined).expect("a valid split");
                let freed = Callback::group_all(&me, self.init.freed);
                sections.free(ctx, &section, freed).expect("frees");
                self.outer = Some(section);
            }
            Msg::Joined(section) => {
                let cb = Callback::group_all(&me, self.init.summed);
                sections
                    .allreduce(ctx, &section, u64::from(pe), Reducer::Sum, cb)
                    .expect("starts");
                self.inner = Some(section);
                if plan.pipelined {
                    self.free(ctx);
                }
            }
            Msg::Summed(sum) => {
                let want = self.want_sum(ctx.num_pes() as u32, pe);
                assert_eq!(sum, want, "PE {pe}, round {}", self.done);
                self.summed = true;
                if !plan.pipelined {
                    self.free(ctx);
                }
            }
            Msg::Freed(id) if Some(id) == self.outer.as_ref().map(|s| s.id) => {}
            Msg::Freed(id) => {
                assert_eq!(Some(id), self.inner.take().map(|s| s.id), "PE {pe}");
                // The free waited for the allreduce started before it.
                assert!(
                    std::mem::take(&mut self.summed),
                    "PE {pe}, round {}",
                    self.done
                );
                self.outer = None;
                self.done += 1;
                if plan.unkept {
                    // PE 0 creates the next section once every member freed this one.
                    let next = Callback::group_member(&me, 0, self.init.next);
                    ctx.contribute(1u64, Reducer::Sum, next);
                } else if self.done != plan.first && self.done != plan.rounds {
                    self.split(ctx);
                }
            }
            Msg::Next(_) => {
                if self.done != plan.first && self.done != plan.rounds {
                    self.split(ctx);
                }
            }
            Msg::Snap(()) => sections.stats(ctx, Callback::group_all(&me, self.init.stats)),
            Msg::Stats(stats) => {
                ctx.publish("stats", &(self.snaps, self.done, stats));
                self.snaps += 1;
                // Every PE has read its maps before any starts the next round.
                ctx.contribute(
                    1u64,
                    Reducer::Sum,
                    Callback::group_all(&me, self.init.resume),
                );
            }
            Msg::Resume(_) => {
                if self.done < plan.rounds {
                    if pe == 0 {
                        ctx.start_quiescence(Callback::group_all(&me, self.init.snap));
                    }
                    self.split(ctx);
                } else if pe == 0 {
                    ctx.exit();
                }
            }
        }
    }
}

fn soak(pes: u32, plan: Plan) -> RunReport {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    reg.chare::<Worker>("Worker");
    let joined = reg.entry::<Worker, Section>("Worker::joined", Msg::Joined);
    let summed = reg.entry::<Worker, u64>("Worker::summed", Msg::Summed);
    let freed = reg.entry::<Worker, SectionId>("Worker::freed", Msg::Freed);
    let snap = reg.entry::<Worker, ()>("Worker::snap", Msg::Snap);
    let stats = reg.entry::<Worker, SectionsStats>("Worker::stats", Msg::Stats);
    let resume = reg.entry::<Worker, u64>("Worker::resume", Msg::Resume);
    let next = reg.entry::<Worker, u64>("Worker::next", Msg::Next);
    let cfg = Config {
        layer: Layer::Sim,
        seed: 11,
        ..Config::with_pes(pes)
    };
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let init = Init {
                sections: sections.setup(ctx),
                plan,
                joined,
                summed,
                freed,
                snap,
                stats,
                resume,
                next,
            };
            let workers = ctx.create_group::<Worker>(init);
            workers.broadcast(ctx, Msg::Go);
            ctx.start_quiescence(Callback::group_all(&workers, snap));
        })
        .unwrap_or_else(|e| panic!("{plan:?}: {e}"))
}

/// Run the soak and check every PE's maps after all rounds are as after the first
/// few; returns the last snapshot's total entries over all PEs and maps.
fn soak_is_flat(pes: u32, plan: Plan) -> usize {
    let start = Instant::now();
    let report = soak(pes, plan);
    let wall = start.elapsed();
    let mut by_pe: BTreeMap<Pe, Vec<(u32, u64, SectionsStats)>> = BTreeMap::new();
    for (pe, snap) in report.outputs::<(u32, u64, SectionsStats)>("stats") {
        by_pe.entry(pe).or_default().push(snap);
    }
    assert_eq!(by_pe.len(), pes as usize);
    let mut total = 0;
    for (pe, snaps) in &by_pe {
        let [(0, first, a), (1, last, b)] = snaps.as_slice() else {
            panic!("PE {pe}: snapshots {snaps:?}");
        };
        assert_eq!((*first, *last), (plan.first, plan.rounds), "PE {pe}");
        assert_eq!(
            a.maps(),
            b.maps(),
            "PE {pe}: after {first} and {last} rounds"
        );
        assert!(b.builder.freed_remembered <= FREED_MEMORY);
        assert!(b.host.freed_remembered <= FREED_MEMORY);
        assert_eq!(b.builder.dropped + b.host.dropped, 0, "PE {pe}");
        total += b.total();
        if *pe == 0 {
            let held: Vec<_> = b.maps().into_iter().filter(|m| m.1 > 0).collect();
            let freed = (b.builder.freed_remembered, b.host.freed_remembered);
            eprintln!(
                "PE 0 after {first} and {last} rounds: {held:?}, freed ids remembered (builder, host): {freed:?}"
            );
        }
    }
    eprintln!(
        "{} rounds of {plan:?} on {pes} PEs (sim): {:.2} s wall, {total} map entries over all PEs at the end",
        plan.rounds,
        wall.as_secs_f64(),
    );
    total
}

#[test]
fn a_thousand_sections_made_and_freed_leave_the_maps_flat() {
    let plan = Plan {
        rounds: 1000,
        first: 5,
        algorithm: None,
        nested: false,
        pipelined: false,
        unkept: false,
    };
    // What is left is each PE's count of its splits of the world.
    assert_eq!(soak_is_flat(8, plan), 8);
}

#[test]
fn nested_splits_freed_before_they_finish_leave_the_maps_flat_by_every_algorithm() {
    for algorithm in available() {
        let plan = Plan {
            rounds: 40,
            first: 3,
            algorithm: Some(algorithm),
            nested: true,
            pipelined: false,
            unkept: false,
        };
        assert_eq!(soak_is_flat(8, plan), 8, "{}", algorithm.name());
    }
}

#[test]
fn a_free_right_after_the_allreduce_starts_waits_for_it() {
    for nested in [false, true] {
        let plan = Plan {
            rounds: 200,
            first: 4,
            algorithm: None,
            nested,
            pipelined: true,
            unkept: false,
        };
        assert_eq!(soak_is_flat(8, plan), 8, "nested: {nested}");
    }
}

#[test]
fn sections_the_builder_does_not_keep_are_freed_in_the_collectives_host() {
    for pipelined in [false, true] {
        let plan = Plan {
            rounds: 100,
            first: 4,
            algorithm: None,
            nested: false,
            pipelined,
            unkept: true,
        };
        // Nothing is left at all: no PE called a split.
        assert_eq!(soak_is_flat(8, plan), 0, "pipelined: {pipelined}");
    }
}

/// The full soak: 2 x 10^5 sections, each PE freeing 10^5 (about 10 s in the test
/// profile on one core).
#[test]
fn a_hundred_thousand_sections_made_and_freed_leave_the_maps_flat() {
    let plan = Plan {
        rounds: 100_000,
        first: 5,
        algorithm: None,
        nested: false,
        pipelined: false,
        unkept: false,
    };
    assert_eq!(soak_is_flat(8, plan), 8);
}
