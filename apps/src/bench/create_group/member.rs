//! The creator chare: one per PE, running its steps of each measured communicator
//! creation one after another (`mpi_model::comm_create`); the member on PE 0 also
//! drives the runs.

use crate::mpi_model::comm_create::{self, Block, Method};
use crate::mpi_model::script_run::{Env, ScriptRun};
use chorus_core::{Callback, Chare, Ctx, Entry, GroupProxy, Reducer};
use chorus_sections::collectives::Collectives;
use serde::{Deserialize, Serialize};
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
    script: ScriptRun,
}

/// The chare.
pub struct Creator {
    init: CreatorInit,
    me: u32,
    pes: u32,
    running: Option<Running>,
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
            next: 0,
            times: Vec::new(),
        }
    }

    fn handle(&mut self, msg: CreatorMsg, ctx: &mut Ctx) {
        match msg {
            CreatorMsg::Next => self.start_next(ctx),
            CreatorMsg::Go { run, start_ns } => self.go(ctx, run, start_ns),
            CreatorMsg::Step(v) => {
                let done = match &mut self.running {
                    Some(r) if v.first() == Some(&u64::from(r.run)) => r.script.collective_done(&v),
                    _ => Err(format!("a collective result {:?} for no run", v.get(..2))),
                };
                self.advance_or_break(ctx, done);
            }
            CreatorMsg::Exchange { run, tag, .. } => {
                // Every PE starts a run before any exchange of it can reach it: the
                // announcement arrives before the common start (checked in `go`).
                let arrived = match &mut self.running {
                    Some(r) if r.run == run => r.script.exchanged(tag),
                    _ => Err(format!("exchange {tag} of run {run}, which is not running")),
                };
                self.advance_or_break(ctx, arrived);
            }
            CreatorMsg::Finished(t) => {
                self.times.push(t);
                self.start_next(ctx);
            }
        }
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
        let world = Block {
            first: 0,
            size: self.pes,
        };
        let group = Block {
            first: 0,
            size: group,
        };
        let steps = comm_create::steps(method, self.me, world, group);
        // Wait for the common start, as MPI benchmarks do after a barrier.
        ctx.work(Duration::from_nanos(start_ns - now));
        self.running = Some(Running {
            run,
            start_ns,
            script: ScriptRun::new(vec![u64::from(run)], steps),
        });
        self.advance_or_break(ctx, Ok(()));
    }

    /// Run the script on after `news` (an arrival it took in), or end the job if
    /// either broke.
    fn advance_or_break(&mut self, ctx: &mut Ctx, news: Result<(), String>) {
        let Some(r) = self.running.as_mut() else {
            if let Err(why) = news {
                self.broken(ctx, why);
            }
            return;
        };
        let env = Env {
            collectives: self.init.collectives,
            k: self.init.k,
            pes: self.pes,
            me: self.me,
            callback: Callback::group_member(&Self::proxy(ctx), self.me, self.init.step),
            charge_local: true,
        };
        let run = r.run;
        let mut send = |ctx: &mut Ctx, peer: u32, tag: u32, words: u32| {
            let msg = CreatorMsg::Exchange {
                run,
                tag,
                words: vec![0; words as usize],
            };
            Self::proxy(ctx).send(ctx, peer, msg);
        };
        match news.and_then(|()| r.script.advance(ctx, &env, &mut send)) {
            Err(why) => self.broken(ctx, why),
            Ok(false) => {}
            Ok(true) => {
                let took = ns(ctx.now()) - r.start_ns;
                self.running = None;
                let cb = Callback::group_member(&Self::proxy(ctx), 0, self.init.finished);
                ctx.contribute(took, Reducer::Max, cb);
            }
        }
    }
}
