//! Array sections (`array.section`, Charm++'s `CkMulticast`): a multicast reaches
//! every member once and no other element; it costs one envelope per PE holding
//! members, of which those between PEs are exactly the tree's edges (counted on sim);
//! multicasts and section reductions racing members that migrate at random (seeded)
//! still deliver to and count every member exactly once, and nothing is lost.

use crate::{config, pes, splitmix64};
use chorus_core::{
    ArrayMap, ArrayProxy, ArraySection, Callback, Chare, Ctx, Entry, ErrorPolicy, Layer,
    Migratable, Reducer, Registry, RunReport, Runtime,
};
use serde::{Deserialize, Serialize};

type Sec = ArraySection<Member, usize>;

/// Elements of the array sections are taken from.
const ELEMENTS: usize = 40;

/// An element that records the multicast rounds reaching it and may move after each.
#[derive(Serialize, Deserialize)]
struct Member {
    rng: u64,
    /// Its own copy of the section, numbering its section reductions; it migrates
    /// with the element.
    sec: Option<Sec>,
    rounds: Vec<u64>,
    moves: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum MemberMsg {
    /// Record `round`; contribute the index to `sum` through the section if given;
    /// then move to a random PE with probability 1/`roam` (never if 0).
    Cast {
        sec: Sec,
        round: u64,
        roam: u64,
        sum: Option<Callback>,
    },
    /// Contribute `[times received << 32 | distinct rounds, moves]` (concat) to `done`,
    /// through the section if `via_section`, else as the whole array.
    Report {
        sec: Sec,
        done: Callback,
        via_section: bool,
    },
}

impl Member {
    /// Times it got a round, shifted, with the distinct rounds it got.
    fn tally(&self) -> u64 {
        let mut distinct = self.rounds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        (self.rounds.len() as u64) << 32 | distinct.len() as u64
    }
}

impl Chare for Member {
    type Init = u64;
    type Msg = MemberMsg;
    fn create(salt: u64, ctx: &mut Ctx) -> Self {
        let index = ctx.this_index::<usize>().unwrap_or(0) as u64;
        Member {
            rng: ctx.seed() ^ salt ^ index.wrapping_mul(0x9E37_79B9),
            sec: None,
            rounds: Vec::new(),
            moves: 0,
        }
    }
    fn handle(&mut self, msg: MemberMsg, ctx: &mut Ctx) {
        let index = ctx.this_index::<usize>().expect("a 1-D element");
        match msg {
            MemberMsg::Cast {
                sec,
                round,
                roam,
                sum,
            } => {
                self.rounds.push(round);
                let mine = self.sec.get_or_insert(sec);
                if let Some(sum) = sum {
                    mine.contribute(ctx, index as u64, Reducer::Sum, sum)
                        .expect("a member contributes");
                }
                let r = splitmix64(&mut self.rng);
                if r.checked_rem(roam) == Some(0) {
                    let to = (r >> 32) as usize % ctx.num_pes();
                    ctx.migrate_me(to as u32).expect("a valid move");
                }
            }
            MemberMsg::Report {
                sec,
                done,
                via_section,
            } => {
                let tally = vec![self.tally(), self.moves];
                if via_section {
                    let mine = self.sec.get_or_insert(sec);
                    mine.contribute(ctx, tally, Reducer::Concat, done)
                        .expect("a member contributes");
                } else {
                    ctx.contribute(tally, Reducer::Concat, done);
                }
            }
        }
    }
}

impl Migratable for Member {
    fn migrated(&mut self, _: &mut Ctx) {
        self.moves += 1;
    }
}

/// Which elements a section holds.
#[derive(Clone, Serialize, Deserialize)]
enum Pick {
    /// Every third index (a predicate).
    EveryThird,
    /// The indices from..to (a range).
    Range(usize, usize),
    /// Listed indices (duplicates count once).
    List(Vec<usize>),
}

impl Pick {
    fn section(&self, ctx: &mut Ctx, arr: &ArrayProxy<Member, usize>) -> Sec {
        match self {
            Pick::EveryThird => arr.section_where(ctx, |i| i % 3 == 0),
            Pick::Range(from, to) => arr.section(ctx, *from..*to),
            Pick::List(l) => arr.section(ctx, l.iter().copied()),
        }
        .expect("a section of the array")
    }
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Entries {
    sum: Entry<Driver, u64>,
    quiet: Entry<Driver, ()>,
    counts: Entry<Driver, Vec<u64>>,
}

#[derive(Clone, Serialize, Deserialize)]
struct DriverInit {
    arr: ArrayProxy<Member, usize>,
    pick: Pick,
    rounds: u64,
    /// Members move after a round with probability 1/roam; 0 runs the counted
    /// script (no moves, the report through the section), else the racing one.
    roam: u64,
    e: Entries,
}

/// On PE 0: makes the section, multicasts the rounds, and publishes what returns.
struct Driver {
    init: DriverInit,
    sec: Sec,
    sums: Vec<u64>,
    /// The counts are in: the next quiescence ends the job.
    reported: bool,
}

#[derive(Clone, Serialize, Deserialize)]
enum DriverMsg {
    Sum(u64),
    Quiet(()),
    Counts(Vec<u64>),
}

impl Chare for Driver {
    type Init = DriverInit;
    type Msg = DriverMsg;
    fn create(init: DriverInit, ctx: &mut Ctx) -> Self {
        let sec = init.pick.section(ctx, &init.arr);
        let me = ctx.this_chare::<Driver>().expect("a chare");
        let shape = (sec.len(), sec.pes().len(), sec.tree_edges(ctx.my_pe()));
        ctx.publish("shape", &shape);
        let racing = init.roam > 0;
        let sum = racing.then(|| Callback::chare(&me, init.e.sum));
        for round in 0..init.rounds {
            let (sec2, roam) = (sec.clone(), init.roam);
            let cast = MemberMsg::Cast {
                sec: sec2,
                round,
                roam,
                sum: sum.clone(),
            };
            sec.broadcast(ctx, cast);
        }
        if racing {
            ctx.start_quiescence(Callback::chare(&me, init.e.quiet));
        } else {
            // Behind the rounds on every edge of the same tree, so after them.
            let done = Callback::chare(&me, init.e.counts);
            let report = MemberMsg::Report {
                sec: sec.clone(),
                done,
                via_section: true,
            };
            sec.broadcast(ctx, report);
        }
        Driver {
            init,
            sec,
            sums: Vec::new(),
            reported: false,
        }
    }
    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        match msg {
            DriverMsg::Sum(s) => self.sums.push(s),
            // Ended at quiescence, so the ledger balances: nothing is in flight.
            DriverMsg::Quiet(()) if self.reported => ctx.exit(),
            DriverMsg::Quiet(()) => {
                let me = ctx.this_chare::<Driver>().expect("a chare");
                let report = MemberMsg::Report {
                    sec: self.sec.clone(),
                    done: Callback::chare(&me, self.init.e.counts),
                    via_section: false,
                };
                self.init.arr.broadcast(ctx, report);
            }
            DriverMsg::Counts(c) => {
                ctx.publish("counts", &c);
                ctx.publish("sums", &self.sums);
                self.reported = true;
                let me = ctx.this_chare::<Driver>().expect("a chare");
                ctx.start_quiescence(Callback::chare(&me, self.init.e.quiet));
            }
        }
    }
}

fn registry() -> (Registry, Entries) {
    let mut reg = Registry::new();
    reg.migratable::<Member>("SectionMember")
        .chare::<Driver>("SectionDriver");
    let e = Entries {
        sum: reg.entry("SectionDriver::sum", DriverMsg::Sum),
        quiet: reg.entry("SectionDriver::quiet", DriverMsg::Quiet),
        counts: reg.entry("SectionDriver::counts", DriverMsg::Counts),
    };
    (reg, e)
}

/// Run a driver of `pick` over `n` block-mapped elements on `p` PEs.
fn run(
    layer: Layer,
    (p, n): (u32, usize),
    seed: u64,
    pick: Pick,
    rounds: u64,
    roam: u64,
) -> RunReport {
    let (reg, e) = registry();
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.seed = seed;
    if layer == Layer::Sim && roam > 0 {
        // Random extra latency reorders messages on purpose (sim only).
        cfg.sim.jitter_us = Some(3.0);
    }
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Member>(n, 11, ArrayMap::Block);
            let init = DriverInit {
                arr,
                pick,
                rounds,
                roam,
                e,
            };
            ctx.create_chare::<Driver>(init, 0);
        })
        .expect("run")
}

/// The members `pick` names in an array of `n`.
fn members(pick: &Pick, n: usize) -> Vec<usize> {
    let mut m: Vec<usize> = match pick {
        Pick::EveryThird => (0..n).filter(|i| i % 3 == 0).collect(),
        Pick::Range(from, to) => (*from..*to).collect(),
        Pick::List(l) => l.clone(),
    };
    m.sort_unstable();
    m.dedup();
    m
}

/// Each reporting element's tally, in index order, and the moves of all of them.
fn counts_and_moves(report: &RunReport) -> (Vec<u64>, u64) {
    let rows = report.output::<Vec<u64>>("counts").expect("counts");
    let counts = rows.iter().step_by(2).copied().collect();
    (counts, rows.iter().skip(1).step_by(2).sum())
}

/// Every run's ledger: each counted message sent was processed, none is left, no error.
fn balanced(report: &RunReport) {
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    let sent: u64 = report.per_pe.iter().map(|pe| pe.sent).sum();
    let processed: u64 = report.per_pe.iter().map(|pe| pe.processed).sum();
    assert_eq!(sent, processed, "every counted message processed");
    assert!(report.per_pe.iter().all(|pe| pe.unprocessed == 0));
}

/// The picks the tests use: a predicate, a range whose PEs leave out the driver's
/// PE 0, and a list with duplicates on a few PEs.
fn picks() -> Vec<Pick> {
    vec![
        Pick::EveryThird,
        Pick::Range(10, 30),
        Pick::List(vec![39, 5, 6, 5, 38, 21]),
    ]
}

/// A multicast reaches each member once (and nothing else), and costs one counted
/// envelope per PE holding members; on sim, the envelopes between PEs are exactly
/// the tree's edges, so k members on m PEs take at most m + (tree edges) messages.
pub fn a_section_multicast_reaches_each_member_once_one_envelope_per_pe(layer: Layer) {
    let p = pes(layer, 8);
    let mut jobs: Vec<((u32, usize), Pick)> =
        picks().into_iter().map(|k| ((p, ELEMENTS), k)).collect();
    if layer == Layer::Sim {
        jobs.push(((64, 1000), Pick::EveryThird));
    }
    for (job, pick) in jobs {
        count_one(layer, job, pick);
    }
}

/// The counted script of `pick` on `job`: deliveries on any layer, and on sim the
/// messages of one multicast (the job against the same job without the rounds).
fn count_one(layer: Layer, job: (u32, usize), pick: Pick) {
    const ROUNDS: u64 = 5;
    let k = members(&pick, job.1).len();
    let report = run(layer, job, 1, pick.clone(), ROUNDS, 0);
    balanced(&report);
    let tally = ROUNDS << 32 | ROUNDS;
    let (counts, moves) = counts_and_moves(&report);
    assert_eq!(counts, vec![tally; k]);
    assert_eq!(moves, 0);
    let (len, m, edges) = report
        .output::<(usize, usize, usize)>("shape")
        .expect("shape");
    assert_eq!(len, k);
    if layer != Layer::Sim {
        return;
    }
    let base = run(layer, job, 1, pick, 0, 0);
    let sent = |r: &RunReport| r.per_pe.iter().map(|pe| pe.sent).sum::<u64>();
    let network = |r: &RunReport| r.sim.as_ref().expect("sim stats").messages;
    let counted = (sent(&report) - sent(&base)) / ROUNDS;
    let crossed = (network(&report) - network(&base)) / ROUNDS;
    assert_eq!(counted, m as u64, "one counted envelope per PE");
    assert_eq!(crossed, edges as u64, "one network message per tree edge");
    assert!(counted <= (m + edges) as u64);
    // Captured unless --nocapture: the README's figures.
    eprintln!(
        "section multicast: {k} members on {m} of {} PEs, {edges} tree edges: \
         {counted} messages ({crossed} between PEs) per multicast, bound m + edges = {}",
        job.0,
        m + edges
    );
}

/// Multicasts and section reductions racing members that move at random (several
/// seeds): every member gets every round once, no other element gets any, every
/// reduction fires exactly once with the sum of the members' indices, and the
/// ledger balances.
pub fn section_multicasts_and_reductions_racing_migrations_are_exactly_once(layer: Layer) {
    const ROUNDS: u64 = 12;
    let p = pes(layer, 8);
    let seeds: &[u64] = if layer == Layer::Sim {
        &[1, 2, 3, 4]
    } else {
        &[1, 2]
    };
    for &seed in seeds {
        for pick in picks() {
            let m = members(&pick, ELEMENTS);
            let report = run(layer, (p, ELEMENTS), seed, pick, ROUNDS, 3);
            balanced(&report);
            let tally = ROUNDS << 32 | ROUNDS;
            let want: Vec<u64> = (0..ELEMENTS)
                .map(|i| if m.contains(&i) { tally } else { 0 })
                .collect();
            let (counts, moves) = counts_and_moves(&report);
            assert_eq!(counts, want, "seed {seed}");
            // Members move about one round in three (to any of the p PEs, their
            // own included): the rounds raced real moves.
            if p > 1 {
                assert!(moves > 0, "seed {seed}: no member moved");
            }
            let sum: u64 = m.iter().map(|&i| i as u64).sum();
            let sums = report.output::<Vec<u64>>("sums").expect("sums");
            assert_eq!(sums, vec![sum; ROUNDS as usize], "seed {seed}");
        }
    }
}

/// A section made or used wrongly is a clear `SectionError`, never a panic: no
/// member listed, a predicate that keeps none, a predicate over an array of inserted
/// elements, a contribution from outside the section (here, from main).
pub fn section_refusals_are_clear_errors(layer: Layer) {
    let (reg, _) = registry();
    let p = pes(layer, 2);
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(|ctx| {
            let arr = ctx.create_array_1d::<Member>(4, 1, ArrayMap::Block);
            let inserted = ctx.create_array::<Member, usize>(Vec::new(), 1, ArrayMap::RoundRobin);
            let mut said = vec![
                arr.section(ctx, Vec::new()).map(|_| ()),
                arr.section_where(ctx, |&i| i > 9).map(|_| ()),
                inserted.section_where(ctx, |_| true).map(|_| ()),
            ];
            let mut sec = arr.section(ctx, [1, 2]).expect("a section");
            said.push(sec.contribute(ctx, 1u64, Reducer::Sum, Callback::Ignore));
            let said: Vec<String> = said.into_iter().map(|r| format!("{r:?}")).collect();
            ctx.publish("said", &said);
            ctx.exit();
        })
        .expect("run");
    let said = report.output::<Vec<String>>("said").expect("said");
    let want = ["Err(Empty", "Err(Empty", "Err(NoShape", "Err(NotAMember"];
    assert_eq!(said.len(), want.len());
    for (s, w) in said.iter().zip(want) {
        assert!(s.starts_with(w), "{s} is not {w}..");
    }
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// The module's tests.
pub const TESTS: &[super::Test] = &[
    (
        "section_refusals_are_clear_errors",
        section_refusals_are_clear_errors,
    ),
    (
        "a_section_multicast_reaches_each_member_once_one_envelope_per_pe",
        a_section_multicast_reaches_each_member_once_one_envelope_per_pe,
    ),
    (
        "section_multicasts_and_reductions_racing_migrations_are_exactly_once",
        section_multicasts_and_reductions_racing_migrations_are_exactly_once,
    ),
];
