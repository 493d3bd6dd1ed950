//! Measuring collectives on the runtime as the paper does: every repetition starts
//! with the members synchronised by a barrier collective, each member times its own
//! part from the barrier's end to its result (members without a result — non-roots of
//! a rooted collective — do not count), and the repetition's latency is the slowest
//! member's, agreed by a max-allreduce so every member takes the same decision on the
//! number of repetitions: at least `min`, then until the relative standard error of the
//! latencies drops to `rse` or `max` is reached (the NREP rule), after `warmup`
//! untimed ones. The cases of one collective and message size (the default, the
//! mock-ups, the tuned runtime) take turns repetition by repetition, so a drift of the
//! machine's load (other jobs on a shared machine) hits them alike.
//!
//! One run measures every case, in order, on the world range section; independent runs
//! (several `measure` calls, as several mpiruns) are the caller's.

use super::stats;
use crate::collectives::tuned::mockups::{Collective, Impl};
use crate::collectives::tuned::profile::Profile;
use crate::collectives::{Allgather, Alltoall, Collectives, RangeMember, Topology};
use crate::range::RangeSection;
use chorus_core::{
    Callback, Chare, Config, Ctx, Entry, RedData, Reducer, Registry, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use thiserror::Error;

/// One thing to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// The collective.
    pub collective: Collective,
    /// What runs it; None lets the run's profile choose (the tuned runtime).
    pub choice: Option<Impl>,
    /// Bytes per member (u64 elements of 8 bytes; at least one); an alltoall's
    /// member gives a block of this size to every member.
    pub bytes: u64,
}

/// The NREP rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Nrep {
    /// Untimed repetitions before the first timed one (warm caches and allocators).
    pub warmup: u32,
    /// Fewest repetitions.
    pub min: u32,
    /// Most repetitions.
    pub max: u32,
    /// Stop once the relative standard error is at most this.
    pub rse: f64,
}

/// The latencies of one case, one per repetition, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The case.
    pub case: Case,
    /// Latency of each repetition, µs.
    pub us: Vec<f64>,
}

/// Why a measurement failed.
#[derive(Debug, Error)]
pub enum MeasureError {
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The run ended without its results.
    #[error("the measurement run published no results")]
    Missing,
    /// Nothing to measure, or a bad repetition rule.
    #[error("{0}")]
    Plan(String),
}

/// Elements of a case's value.
fn elements(bytes: u64) -> u64 {
    (bytes / 8).max(1)
}

/// The bytes per member a case of `requested` bytes really moves (whole 8-byte
/// elements, at least one), as the tuned runtime sees them.
pub fn message_bytes(requested: u64) -> u64 {
    8 * elements(requested)
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Entries {
    go: Entry<Bench, RedData>,
    done: Entry<Bench, RedData>,
    agreed: Entry<Bench, Vec<u64>>,
}

#[derive(Clone, Serialize, Deserialize)]
struct BenchInit {
    cases: Arc<Vec<Case>>,
    nrep: Nrep,
    k: u32,
    coll: Collectives,
    entries: Entries,
}

#[derive(Clone, Serialize, Deserialize)]
enum BenchMsg {
    Go(RedData),
    Done(RedData),
    Agreed(Vec<u64>),
}

/// The measuring member on every PE.
struct Bench {
    init: BenchInit,
    member: RangeMember,
    /// First case of the group under way (the cases of one collective and size).
    first: usize,
    /// The group's case whose repetition is under way, from 0.
    turn: usize,
    t0: f64,
    /// Latencies of each case of the group.
    times: Vec<Vec<f64>>,
    /// Cases of the group that have repetitions enough.
    done: Vec<bool>,
    /// Warm-up rounds of the group done.
    warm: u32,
    samples: Vec<Sample>,
}

impl Bench {
    fn callback<T: chorus_core::Reducible>(ctx: &Ctx, entry: Entry<Bench, T>) -> Callback {
        let me = ctx.this_group::<Bench>().expect("the bench is a group");
        Callback::group_member(&me, ctx.my_pe(), entry)
    }

    fn synchronise(&self, ctx: &mut Ctx) {
        let cb = Self::callback(ctx, self.init.entries.go);
        self.init
            .coll
            .barrier(ctx, self.member, cb)
            .unwrap_or_else(|e| panic!("tune barrier: {e}"));
    }

    fn agree(&self, ctx: &mut Ctx, ns: u64) {
        let cb = Self::callback(ctx, self.init.entries.agreed);
        self.init
            .coll
            .allreduce(ctx, self.member, vec![ns], Reducer::Max, cb)
            .unwrap_or_else(|e| panic!("tune agreement: {e}"));
    }

    /// Start this repetition's collective; true if this member gets a result.
    fn run_case(&self, ctx: &mut Ctx) -> bool {
        use chorus_core::Reducible;
        let case = self.init.cases[self.first + self.turn];
        let coll = match case.choice {
            Some(c) => self.init.coll.pinned(c),
            None => self.init.coll,
        };
        let rank = u64::from(self.member.rank());
        let value: Vec<u64> = (0..elements(case.bytes))
            .map(|i| rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i)
            .collect();
        let cb = Self::callback(ctx, self.init.entries.done);
        let m = self.member;
        let r = match case.collective {
            Collective::Allgather => coll.allgather(ctx, m, value, Allgather::Auto, cb),
            Collective::Allreduce => coll.allreduce(ctx, m, value, Reducer::Sum, cb),
            Collective::Alltoall => {
                let blocks = vec![value; m.size() as usize];
                coll.alltoall(ctx, m, blocks, Alltoall::Auto, cb)
            }
            Collective::Gather => coll.gather(ctx, m, 0, value.into_data(), cb),
            Collective::Reduce => coll.reduce(ctx, m, 0, value, Reducer::Sum, cb),
            Collective::Scan => coll.scan(ctx, m, value, Reducer::Sum, cb),
        };
        r.unwrap_or_else(|e| panic!("tune case {case:?}: {e}"));
        !case.collective.rooted() || rank == 0
    }

    /// Start the group of cases from `first`: those of the same collective and size.
    fn open_group(&mut self, first: usize) {
        let key = |c: &Case| (c.collective, c.bytes);
        let cases = &self.init.cases;
        let len = cases[first..]
            .iter()
            .take_while(|c| key(c) == key(&cases[first]))
            .count();
        self.first = first;
        self.turn = 0;
        self.warm = 0;
        self.times = vec![Vec::new(); len];
        self.done = vec![false; len];
    }

    fn agreed(&mut self, ns: u64, ctx: &mut Ctx) {
        let n = self.times.len();
        if self.warm < self.init.nrep.warmup {
            self.turn += 1;
            if self.turn == n {
                self.turn = 0;
                self.warm += 1;
            }
            return self.synchronise(ctx);
        }
        let nrep = self.init.nrep;
        let times = &mut self.times[self.turn];
        times.push(ns as f64 / 1e3);
        let reps = times.len() as u32;
        if reps >= nrep.min && (stats::rse(times) <= nrep.rse || reps >= nrep.max) {
            self.done[self.turn] = true;
        }
        let next = (1..=n)
            .map(|d| (self.turn + d) % n)
            .find(|&j| !self.done[j]);
        if let Some(j) = next {
            self.turn = j;
            return self.synchronise(ctx);
        }
        let times = std::mem::take(&mut self.times);
        if ctx.my_pe() == 0 {
            let cases = &self.init.cases[self.first..self.first + n];
            self.samples.extend(
                cases
                    .iter()
                    .zip(times)
                    .map(|(&case, us)| Sample { case, us }),
            );
        }
        let following = self.first + n;
        if following < self.init.cases.len() {
            self.open_group(following);
            self.synchronise(ctx);
        } else if ctx.my_pe() == 0 {
            ctx.publish("tune-samples", &self.samples);
            ctx.exit();
        }
    }
}

impl Chare for Bench {
    type Init = BenchInit;
    type Msg = BenchMsg;

    fn create(init: BenchInit, ctx: &mut Ctx) -> Self {
        let world = RangeSection::world(ctx.num_pes() as u32, init.k).expect("a job has PEs");
        let member = RangeMember::new(world, ctx.my_pe()).expect("every PE is in the world");
        let mut bench = Bench {
            init,
            member,
            first: 0,
            turn: 0,
            t0: 0.0,
            times: Vec::new(),
            done: Vec::new(),
            warm: 0,
            samples: Vec::new(),
        };
        bench.open_group(0);
        bench.synchronise(ctx);
        bench
    }

    fn handle(&mut self, msg: BenchMsg, ctx: &mut Ctx) {
        match msg {
            BenchMsg::Go(_) => {
                self.t0 = ctx.now();
                if !self.run_case(ctx) {
                    self.agree(ctx, 0);
                }
            }
            BenchMsg::Done(_) => {
                let ns = ((ctx.now() - self.t0) * 1e9).max(0.0).round() as u64;
                self.agree(ctx, ns);
            }
            BenchMsg::Agreed(v) => self.agreed(v.first().copied().unwrap_or(0), ctx),
        }
    }
}

/// Measure `cases` in one run under `config`, with `profile` for the cases that let it
/// choose; the latencies of every case, in order.
pub fn measure(
    config: &Config,
    cases: &[Case],
    nrep: Nrep,
    profile: Option<Arc<Profile>>,
) -> Result<Vec<Sample>, MeasureError> {
    if cases.is_empty() {
        return Err(MeasureError::Plan("nothing to measure".into()));
    }
    if nrep.min == 0 || nrep.max < nrep.min || nrep.rse.is_nan() || nrep.rse < 0.0 {
        return Err(MeasureError::Plan(format!(
            "repetitions: need 1 <= min <= max and rse >= 0, got {nrep:?}"
        )));
    }
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Bench>("chorus_sections::tune::Bench");
    let entries = Entries {
        go: reg.entry::<Bench, RedData>("Bench::go", BenchMsg::Go),
        done: reg.entry::<Bench, RedData>("Bench::done", BenchMsg::Done),
        agreed: reg.entry::<Bench, Vec<u64>>("Bench::agreed", BenchMsg::Agreed),
    };
    let cases = Arc::new(cases.to_vec());
    let k = config.tree_arity;
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let coll = Collectives::create_tuned(ctx, profile);
        ctx.create_group::<Bench>(BenchInit {
            cases,
            nrep,
            k,
            coll,
            entries,
        });
    })?;
    report.output("tune-samples").ok_or(MeasureError::Missing)
}

/// Summary of a case's latencies over runs: the median of each run's median, and the
/// smallest minimum, in µs.
pub fn summarise(runs: &[&Sample]) -> (f64, f64) {
    let medians: Vec<f64> = runs.iter().map(|s| stats::median(&s.us)).collect();
    let min = runs
        .iter()
        .map(|s| stats::min(&s.us))
        .fold(f64::INFINITY, f64::min);
    (stats::median(&medians), min)
}
