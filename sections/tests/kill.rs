//! The kill matrix of section collectives on sim: PEs killed while an allreduce or a
//! broadcast runs over a section that holds them end the collective on every
//! surviving member that had not finished it with a typed error naming the dead PE
//! (`--on-error drop`), and the survivors run it again over a fresh section of
//! themselves (`TreeMember::of_roster`) to completion; the job exits.

use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, ErrorPolicy, GroupProxy, KillSpec, Layer, Pe,
    Reducer, Registry, RunReport, Runtime,
};
use chorus_sections::collectives::{
    Collectives, FailedCollective, Member, RangeMember, TreeMember,
};
use chorus_sections::kary;
use chorus_sections::range::RangeSection;
use chorus_sections::section::{Section, SectionId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Branching factor of every section here.
const K: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Op {
    Allreduce,
    /// From the last rank, which starts last.
    Broadcast,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Entries {
    got: Entry<Voter, Vec<u64>>,
    failed: Entry<Voter, Encoded<FailedCollective>>,
    dead: Entry<Voter, Pe>,
    report: Entry<Voter, Encoded<Report>>,
}

#[derive(Clone, Serialize, Deserialize)]
struct Plan {
    coll: Collectives,
    op: Op,
    /// Members of the sections made again know every rank's PE; without, only their
    /// tree neighbours (the news then passes along the tree).
    roster: bool,
    /// Every PE the run kills (PE 0, which checks, is never one).
    kills: Vec<Pe>,
    entries: Entries,
}

/// A survivor's state when one of its attempts completes, sent to PE 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Report {
    pe: Pe,
    /// The roster the completed attempt ran over.
    roster: Vec<Pe>,
    /// Its result.
    value: Vec<u64>,
    /// Sizes of the given-up attempts no notice named a dead PE of.
    unnamed: Vec<usize>,
    /// Failed PEs the notices of failed collectives named.
    named: Vec<Pe>,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Got(Vec<u64>),
    Failed(FailedCollective),
    Dead(Pe),
    Report(Report),
}

struct Voter {
    plan: Plan,
    me: Pe,
    npes: u32,
    dead: BTreeSet<Pe>,
    /// The current attempt's roster, and whether its result came.
    roster: Vec<Pe>,
    done: bool,
    /// Attempts given up before their result, by the failure of a PE of theirs: a
    /// notice must name a dead PE of each, unless the result comes after all (this
    /// member's part had finished, as a broadcast root's does at its start). An
    /// attempt fails once, so when two of its PEs die the notice names one of them.
    expect: Vec<Vec<Pe>>,
    /// The dead PE each notice named, by the section of the failed collective.
    named: BTreeMap<SectionId, Pe>,
    /// On PE 0: the last report of every survivor.
    reports: BTreeMap<Pe, Report>,
}

impl Chare for Voter {
    type Init = Plan;
    type Msg = Msg;

    fn create(plan: Plan, ctx: &mut Ctx) -> Self {
        let g = ctx.this_group::<Voter>().expect("a group member");
        let me = ctx.my_pe();
        ctx.on_pe_failure(Callback::group_member(&g, me, plan.entries.dead));
        let cb = Callback::group_member(&g, me, plan.entries.failed);
        plan.coll.watch_failures(ctx, cb);
        // Staggered starts spread the collective over tens of microseconds, so kills
        // land while it runs.
        ctx.work(Duration::from_nanos(500 * u64::from(me)));
        let mut v = Voter {
            me,
            npes: ctx.num_pes() as u32,
            dead: BTreeSet::new(),
            roster: Vec::new(),
            done: false,
            expect: Vec::new(),
            named: BTreeMap::new(),
            reports: BTreeMap::new(),
            plan,
        };
        v.attempt(ctx);
        v
    }

    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        match msg {
            Msg::Dead(pe) => {
                self.dead.insert(pe);
                if self.roster.contains(&pe) {
                    if !self.done {
                        self.expect.push(self.roster.clone());
                    }
                    self.attempt(ctx);
                }
            }
            Msg::Failed(f) => {
                let dead = f
                    .dead
                    .unwrap_or_else(|| panic!("PE {}: {}", self.me, f.error));
                assert!(f.error.contains(&format!("PE {dead}")), "{}", f.error);
                assert!(self.named.insert(f.section, dead).is_none(), "twice");
            }
            Msg::Got(value) => self.got(value, ctx),
            Msg::Report(r) => self.collect(r, ctx),
        }
    }
}

impl Voter {
    /// Run the collective over every PE not known dead.
    fn attempt(&mut self, ctx: &mut Ctx) {
        self.roster = (0..self.npes).filter(|p| !self.dead.contains(p)).collect();
        self.done = false;
        let member: Member = match (self.dead.is_empty(), self.plan.roster) {
            (true, _) => {
                let world = RangeSection::world(self.npes, K).expect("PEs");
                RangeMember::new(world, self.me).expect("a member").into()
            }
            (false, true) => TreeMember::of_roster(self.roster.clone(), K, self.me, 0)
                .expect("a roster member")
                .into(),
            (false, false) => TreeMember::new(tree_view(&self.roster, self.me), self.me).into(),
        };
        let g = ctx.this_group::<Voter>().expect("a group member");
        let cb = Callback::group_member(&g, self.me, self.plan.entries.got);
        let c = self.plan.coll;
        let started = match self.plan.op {
            Op::Allreduce => {
                c.allreduce(ctx, member, vec![1, u64::from(self.me)], Reducer::Sum, cb)
            }
            Op::Broadcast => {
                let root = self.roster.len() as u32 - 1;
                let value = (member_rank(&member) == root).then(|| expected(&self.roster));
                c.broadcast(ctx, member, root, value, cb)
            }
        };
        started.expect("a well-formed start");
    }

    fn got(&mut self, value: Vec<u64>, ctx: &mut Ctx) {
        self.expect.retain(|r| expected(r) != value);
        // A result of an attempt this member has since given up is stale.
        if self.done || value != expected(&self.roster) {
            return;
        }
        self.done = true;
        let report = Report {
            pe: self.me,
            roster: self.roster.clone(),
            value,
            unnamed: (self.expect.iter())
                .filter(|r| !self.named.contains_key(&attempt_id(r, self.npes)))
                .map(|r| r.len())
                .collect(),
            named: self.named.values().copied().collect(),
        };
        let g = ctx.this_group::<Voter>().expect("a group member");
        let cb = Callback::group_member(&g, 0, self.plan.entries.report);
        ctx.send_to_callback(&cb, Encoded(report));
    }

    /// On PE 0: keep every survivor's last report; once all have completed over the
    /// final survivors, publish them and end the job.
    fn collect(&mut self, r: Report, ctx: &mut Ctx) {
        self.reports.insert(r.pe, r);
        let last: Vec<Pe> = (0..self.npes)
            .filter(|p| !self.plan.kills.contains(p))
            .collect();
        let finished = last
            .iter()
            .all(|p| self.reports.get(p).is_some_and(|r| r.roster == last));
        if finished {
            let reports: Vec<Report> = self.reports.values().cloned().collect();
            ctx.publish("reports", &reports);
            ctx.exit();
        }
    }
}

/// The id of an attempt over `roster` of `npes` PEs: the world's for the first one,
/// over every PE.
fn attempt_id(roster: &[Pe], npes: u32) -> SectionId {
    if roster.len() == npes as usize {
        RangeSection::world(npes, K).expect("PEs").id()
    } else {
        SectionId::of_roster(roster, 0)
    }
}

fn member_rank(m: &Member) -> u32 {
    use chorus_sections::collectives::Topology;
    m.rank()
}

/// `[members, sum of their PEs]`: what the allreduce of `[1, pe]` gives, and what
/// the broadcast's root sends.
fn expected(roster: &[Pe]) -> Vec<u64> {
    vec![
        roster.len() as u64,
        roster.iter().map(|&p| u64::from(p)).sum(),
    ]
}

/// The view, without a roster, of `me` in the k-ary tree over `roster`.
fn tree_view(roster: &[Pe], me: Pe) -> Section {
    let rank = roster.iter().position(|&p| p == me).expect("a member") as u32;
    let size = roster.len() as u32;
    Section {
        id: SectionId::of_roster(roster, 0),
        rank,
        size,
        k: K,
        parent: kary::parent(rank, K).map(|p| roster[p as usize]),
        children: kary::children(rank, size, K)
            .map(|c| roster[c as usize])
            .collect(),
    }
}

/// Run the plan on `npes` sim PEs, killing `kills` (PE, µs).
fn run(npes: u32, op: Op, roster: bool, kills: &[(Pe, u64)]) -> (Vec<Report>, RunReport) {
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Voter>("kill::Voter");
    let entries = Entries {
        got: reg.entry::<Voter, Vec<u64>>("Voter::got", Msg::Got),
        failed: reg
            .entry::<Voter, Encoded<FailedCollective>>("Voter::failed", |e| Msg::Failed(e.0)),
        dead: reg.entry::<Voter, Pe>("Voter::dead", Msg::Dead),
        report: reg.entry::<Voter, Encoded<Report>>("Voter::report", |e| Msg::Report(e.0)),
    };
    let mut config = Config {
        pes: npes,
        layer: Layer::Sim,
        on_error: ErrorPolicy::Drop,
        ..Config::default()
    };
    config.sim.kill = kills
        .iter()
        .map(|&(pe, us)| KillSpec {
            pe,
            at_ns: us * 1000,
        })
        .collect();
    let kills: Vec<Pe> = kills.iter().map(|k| k.0).collect();
    let report = Runtime::new(reg, config)
        .run(move |ctx| {
            let coll = Collectives::create(ctx);
            let _: GroupProxy<Voter> = ctx.create_group::<Voter>(Plan {
                coll,
                op,
                roster,
                kills,
                entries,
            });
        })
        .unwrap_or_else(|e| panic!("{op:?}: {e}"));
    let reports: Vec<Report> = report.output("reports").expect("published");
    (reports, report)
}

/// Check one run: every survivor completed over exactly the survivors with the right
/// value, every unfinished attempt's failure was named to it, and the failures were
/// reported as `PeFailed` errors naming killed PEs.
fn check(npes: u32, op: Op, roster: bool, kills: &[(Pe, u64)]) -> usize {
    let (reports, run) = run(npes, op, roster, kills);
    let killed: BTreeSet<Pe> = kills.iter().map(|k| k.0).collect();
    let survivors: Vec<Pe> = (0..npes).filter(|p| !killed.contains(p)).collect();
    let reports: Vec<&Report> = reports.iter().filter(|r| !killed.contains(&r.pe)).collect();
    assert_eq!(reports.len(), survivors.len(), "{op:?} {kills:?}");
    let mut named = 0;
    for r in reports {
        assert_eq!(r.roster, survivors, "PE {}", r.pe);
        assert_eq!(r.value, expected(&survivors), "PE {}", r.pe);
        assert!(
            r.unnamed.is_empty(),
            "{op:?} roster {roster} {kills:?}: PE {}: {:?} unnamed",
            r.pe,
            r.unnamed
        );
        assert!(r.named.iter().all(|p| killed.contains(p)), "{:?}", r.named);
        named += usize::from(!r.named.is_empty());
    }
    let sim = run.sim.as_ref().expect("sim stats");
    assert_eq!(sim.pes_killed, kills.len() as u64);
    let errors: Vec<String> = run
        .per_pe
        .iter()
        .flat_map(|p| p.errors.iter().map(|e| e.to_string()))
        .collect();
    assert!(!errors.is_empty(), "{op:?} {kills:?}: no collective failed");
    for e in &errors {
        assert!(e.contains("section collectives"), "{e}");
        assert!(
            killed.iter().any(|p| e.contains(&format!(
                "PE {p}, which holds a rank of the section, failed"
            ))),
            "{e}"
        );
    }
    named
}

/// One PE killed while the collective runs: the root of a broadcast, an inner rank,
/// a leaf; with and without rosters.
#[test]
fn one_killed_pe_ends_the_collective_with_a_typed_error_and_the_rerun_completes() {
    for op in [Op::Allreduce, Op::Broadcast] {
        for roster in [true, false] {
            for kill in [(63, 33), (5, 30), (40, 28)] {
                let named = check(64, op, roster, &[kill]);
                assert!(
                    named > 0,
                    "{op:?} roster {roster} {kill:?}: nobody was told"
                );
            }
        }
    }
}

/// 10% of the PEs (6 of 64) killed at different times, some during the first
/// attempt and some during the reruns.
#[test]
fn a_tenth_of_the_pes_killed_at_various_times_and_the_survivors_still_complete() {
    let kills = [(3, 20), (17, 26), (22, 26), (40, 33), (41, 45), (63, 80)];
    for op in [Op::Allreduce, Op::Broadcast] {
        for roster in [false, true] {
            let named = check(64, op, roster, &kills);
            assert!(named > 10, "{op:?} roster {roster}: only {named} told");
        }
    }
}
