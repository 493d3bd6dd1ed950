//! The creator chare: one per PE, running its steps of each measured communicator
//! creation one after another (`script.rs`); the member on PE 0 also drives the runs.

use super::script::{self, Block, Method, Step, CONTEXT_WORDS};
use chorus_core::{Callback, Chare, Ctx, Entry, GroupProxy, Reducer};
use chorus_sections::collectives::{Collectives, RangeMember, Topology};
use chorus_sections::range::RangeSection;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// Virtual time between a run's announcement and its start: the group broadcast of
/// the announcement reaches every PE well within it (checked: a PE it reaches late
/// fails the run).
pub const START_MARGIN: Duration = Duration::from_millis(20);

/// One measurement: `method` making the communicator of PEs `0..group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// How.
    pub method: Method,
    /// Members.
    pub group: u32,
}

/// What every creator is made from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreatorInit {
    /// The measurements, in order.
    pub runs: Vec<Run>,
    /// The job's collectives.
    pub collectives: Collectives,
    /// Branching factor of the range sections' trees.
    pub k: u32,
    /// Entry receiving collective results.
    pub step: Entry<Creator, Vec<u64>>,
    /// Entry receiving a run's longest time, ns.
    pub finished: Entry<Creator, u64>,
}

/// Messages of the creator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CreatorMsg {
    /// On PE 0: start the next run, or publish the results.
    Next,
    /// Every PE: run `run` (an index of the plan) from virtual time `start_ns`.
    Go {
        /// Index into the plan.
        run: u32,
        /// Start, ns of virtual time.
        start_ns: u64,
    },
    /// The result of a collective step: its first two words name run and step.
    Step(Vec<u64>),
    /// A leader's half of a sendrecv.
    Exchange {
        /// Index into the plan.
        run: u32,
        /// The exchange's tag.
        tag: u32,
        /// The words sent (their size is what the network model charges).
        words: Vec<u64>,
    },
    /// On PE 0: the longest time any PE took in the run, ns.
    Finished(u64),
}

/// A run under way on this PE.
#[derive(Debug)]
struct Running {
    run: u32,
    start_ns: u64,
    steps: Vec<Step>,
    at: usize,
    /// This PE's half of the exchange at `at` is sent.
    sent: bool,
    /// The collective at `at` is started and its result not in: an exchange that
    /// arrives meanwhile must not start it again.
    waiting: bool,
}

/// The chare.
pub struct Creator {
    init: CreatorInit,
    me: u32,
    pes: u32,
    running: Option<Running>,
    /// Exchanges that came before this PE reached them: (run, tag). A leader's peer
    /// can be at most one exchange ahead (each exchange waits for both), so this holds
    /// at most one entry.
    early: HashSet<(u32, u32)>,
    /// On PE 0: the next run to start and the times measured so far, ns.
    next: usize,
    times: Vec<u64>,
}

fn ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

impl Chare for Creator {
    type Init = CreatorInit;
    type Msg = CreatorMsg;

    fn create(init: CreatorInit, ctx: &mut Ctx) -> Self {
        Creator {
            init,
            me: ctx.my_pe(),
            pes: ctx.num_pes() as u32,
            running: None,
            early: HashSet::new(),
            next: 0,
            times: Vec::new(),
        }
    }

    fn handle(&mut self, msg: CreatorMsg, ctx: &mut Ctx) {
        match msg {
            CreatorMsg::Next => self.start_next(ctx),
            CreatorMsg::Go { run, start_ns } => self.go(ctx, run, start_ns),
            CreatorMsg::Step(v) => {
                let named = (v.first().copied(), v.get(1).copied());
                match &mut self.running {
                    Some(r)
                        if r.waiting
                            && named == (Some(u64::from(r.run)), Some(tag_of(&r.steps[r.at]))) =>
                    {
                        r.waiting = false;
                        r.at += 1;
                        self.advance(ctx);
                    }
                    _ => self.broken(ctx, format!("a collective result {named:?} for no step")),
                }
            }
            CreatorMsg::Exchange { run, tag, .. } => {
                self.early.insert((run, tag));
                self.advance(ctx);
            }
            CreatorMsg::Finished(t) => {
                self.times.push(t);
                self.start_next(ctx);
            }
        }
    }
}

fn tag_of(step: &Step) -> u64 {
    match *step {
        Step::Allreduce { tag, .. } | Step::Bcast { tag, .. } | Step::Exchange { tag, .. } => {
            u64::from(tag)
        }
        Step::Local { .. } => u64::MAX,
    }
}

impl Creator {
    fn proxy(ctx: &Ctx) -> GroupProxy<Creator> {
        ctx.this_group::<Creator>()
            .expect("a creator runs as a group member")
    }

    /// End the job with `why` published as its error.
    fn broken(&mut self, ctx: &mut Ctx, why: String) {
        ctx.publish("error", &format!("PE {}: {why}", self.me));
        ctx.exit();
    }

    fn start_next(&mut self, ctx: &mut Ctx) {
        if self.next == self.init.runs.len() {
            ctx.publish("times_ns", &self.times);
            ctx.exit();
            return;
        }
        let start_ns = ns(ctx.now()) + START_MARGIN.as_nanos() as u64;
        let run = self.next as u32;
        self.next += 1;
        Self::proxy(ctx).broadcast(ctx, CreatorMsg::Go { run, start_ns });
    }

    fn go(&mut self, ctx: &mut Ctx, run: u32, start_ns: u64) {
        let now = ns(ctx.now());
        if now > start_ns {
            let late = now - start_ns;
            return self.broken(
                ctx,
                format!("run {run} announced {late} ns after its start"),
            );
        }
        let Run { method, group } = self.init.runs[run as usize];
        let steps = script::steps(method, self.me, self.pes, group);
        // Wait for the common start, as MPI benchmarks do after a barrier.
        ctx.work(Duration::from_nanos(start_ns - now));
        self.running = Some(Running {
            run,
            start_ns,
            steps,
            at: 0,
            sent: false,
            waiting: false,
        });
        self.advance(ctx);
    }

    fn member(&self, block: Block) -> Option<RangeMember> {
        let section = RangeSection::world(self.pes, self.init.k)
            .and_then(|w| w.split(block.first, block.first + block.size - 1, 1))
            .ok()?;
        RangeMember::new(section, self.me).ok()
    }

    /// Run steps until one has to wait; at the end, report the time taken.
    fn advance(&mut self, ctx: &mut Ctx) {
        let Some(r) = self.running.as_mut() else {
            return;
        };
        if r.waiting {
            return;
        }
        while let Some(&step) = r.steps.get(r.at) {
            let head = [u64::from(r.run), tag_of(&step)];
            match step {
                Step::Local { ns } => {
                    ctx.work(Duration::from_nanos(ns));
                    r.at += 1;
                }
                Step::Exchange { peer, words, tag } => {
                    if !r.sent {
                        let msg = CreatorMsg::Exchange {
                            run: r.run,
                            tag,
                            words: vec![0; words as usize],
                        };
                        Self::proxy(ctx).send(ctx, peer, msg);
                        r.sent = true;
                    }
                    if !self.early.remove(&(r.run, tag)) {
                        return;
                    }
                    r.sent = false;
                    r.at += 1;
                }
                Step::Allreduce { block, .. } => {
                    r.waiting = true;
                    let Some(member) = self.member(block) else {
                        return self.broken(ctx, format!("not a member of {block:?}"));
                    };
                    let mut v = vec![u64::MAX; CONTEXT_WORDS];
                    if member.rank() == 0 {
                        v[..2].copy_from_slice(&head);
                    }
                    let cb = self.callback(ctx);
                    let started =
                        self.init
                            .collectives
                            .allreduce(ctx, member, v, Reducer::BitAnd, cb);
                    if let Err(e) = started {
                        self.broken(ctx, format!("allreduce over {block:?}: {e}"));
                    }
                    return;
                }
                Step::Bcast { block, words, .. } => {
                    r.waiting = true;
                    let Some(member) = self.member(block) else {
                        return self.broken(ctx, format!("not a member of {block:?}"));
                    };
                    // The first two words name the step; a shorter message is padded.
                    let value = (member.rank() == 0).then(|| {
                        let mut v = vec![0; (words as usize).max(2)];
                        v[..2].copy_from_slice(&head);
                        v
                    });
                    let cb = self.callback(ctx);
                    let started = self.init.collectives.broadcast(ctx, member, 0, value, cb);
                    if let Err(e) = started {
                        self.broken(ctx, format!("broadcast over {block:?}: {e}"));
                    }
                    return;
                }
            }
        }
        let took = ns(ctx.now()) - r.start_ns;
        self.running = None;
        let cb = Callback::group_member(&Self::proxy(ctx), 0, self.init.finished);
        ctx.contribute(took, Reducer::Max, cb);
    }

    fn callback(&self, ctx: &Ctx) -> Callback {
        Callback::group_member(&Self::proxy(ctx), self.me, self.init.step)
    }
}
