//! Run a plan of creations in one job and collect what they produced: stages run
//! one after another, the creations of a stage all at once. Tests and benchmarks
//! drive the builder through this.

use crate::creation::protocol::Algorithm;
use crate::host::builder::Builder;
use crate::host::merge::MergeRequest;
use crate::host::spec::{CreationReport, Membership, Parent, Request};
use crate::section::Section;
use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, GroupProxy, Pe, Registry, RunReport, Runtime,
    RuntimeError,
};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The parent of a planned creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlannedParent {
    /// The world.
    World,
    /// The section made by the plan's creation with this index (an earlier stage).
    Earlier(usize),
}

/// One creation of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    /// The PE that asks for it (a member of the parent).
    pub creator: Pe,
    /// Its parent.
    pub parent: PlannedParent,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Branching factor.
    pub k: u32,
    /// Who joins.
    pub membership: Membership,
}

/// A planned merge of two sections made by earlier stages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedMerge {
    /// A member of `a` that asks for it.
    pub via: Pe,
    /// Index of the creation that made section a.
    pub a: usize,
    /// Index of the creation that made section b.
    pub b: usize,
    /// A member of b.
    pub b_contact: Pe,
    /// Branching factor of the merged tree.
    pub k: u32,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Create a section.
    Create(Planned),
    /// Merge two sections.
    Merge(PlannedMerge),
}

impl From<Planned> for Step {
    fn from(p: Planned) -> Self {
        Step::Create(p)
    }
}

impl From<PlannedMerge> for Step {
    fn from(m: PlannedMerge) -> Self {
        Step::Merge(m)
    }
}

/// What a plan produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One report per planned creation, in plan order.
    pub reports: Vec<CreationReport>,
    /// Reports of sections rebuilt after failures, in arrival order.
    pub rebuilt: Vec<CreationReport>,
    /// Reports of creations a PE failure ended (`failed` names the PE), in arrival
    /// order; each was asked for again, and its report above is the retry's.
    pub failed: Vec<CreationReport>,
    /// Every member's section, with its PE (empty unless sections were kept).
    pub sections: Vec<(Pe, Section)>,
    /// The whole run's report (sim statistics, outputs).
    pub run: RunReport,
}

/// Why a plan did not run.
#[derive(Debug, Error)]
pub enum BatchError {
    /// A step names a section that is not made by an earlier stage.
    #[error("step {index}: section {parent} is not made by an earlier stage")]
    Parent {
        /// The creation.
        index: usize,
        /// The parent it names.
        parent: usize,
    },
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The job ended without every report.
    #[error("{got} of {want} creations reported")]
    Missing {
        /// Reports that arrived.
        got: usize,
        /// Reports expected.
        want: usize,
    },
}

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    builder: GroupProxy<Builder>,
    stages: Vec<Vec<Step>>,
    keep_sections: bool,
    rebuilds: usize,
    /// Per step: a later step builds on its sections.
    used: Vec<bool>,
    on_section: Entry<Batch, Encoded<Section>>,
    on_report: Entry<Batch, Encoded<CreationReport>>,
}

/// Messages of the batch group.
#[derive(Clone, Serialize, Deserialize)]
enum BatchMsg {
    Go,
    Create(Request),
    Merge(MergeRequest),
    Section(Encoded<Section>),
    Report(Encoded<CreationReport>),
}

/// The driver group: the member on PE 0 runs the plan, every member asks its
/// builder for the creations it is the creator of and keeps its sections.
struct Batch {
    init: Init,
    stage: usize,
    outstanding: usize,
    reports: Vec<Option<CreationReport>>,
    rebuilt: Vec<CreationReport>,
    /// Creations ended by a failure: at most `MAX_RETRIES` per planned creation.
    failed: Vec<CreationReport>,
    /// The creator and request of every creation issued, by tag, to ask again.
    issued: Vec<Option<(Pe, Request)>>,
    done: bool,
}

/// How often a creation a failure ended is asked for again: each retry leaves out
/// every PE its creator knows failed, so only failures during it end it again.
const MAX_RETRIES: usize = 64;

impl Chare for Batch {
    type Init = Init;
    type Msg = BatchMsg;

    fn create(init: Init, _: &mut Ctx) -> Self {
        let n = init.stages.iter().map(Vec::len).sum();
        Batch {
            init,
            stage: 0,
            outstanding: 0,
            reports: vec![None; n],
            rebuilt: Vec::new(),
            failed: Vec::new(),
            issued: vec![None; n],
            done: false,
        }
    }

    fn handle(&mut self, msg: BatchMsg, ctx: &mut Ctx) {
        match msg {
            BatchMsg::Go => self.issue(ctx),
            BatchMsg::Create(req) => Builder::create_section(&self.init.builder, ctx, req),
            BatchMsg::Merge(req) => Builder::merge_sections(&self.init.builder, ctx, req),
            BatchMsg::Section(Encoded(s)) => ctx.publish("section", &s),
            BatchMsg::Report(Encoded(r)) => {
                let at = r.tag as usize;
                let tries = self.failed.iter().filter(|f| f.tag == r.tag).count();
                if r.failed.is_some() && tries < MAX_RETRIES {
                    // The creator left the failed PEs it knows of out of the retry.
                    self.failed.push(r);
                    if let Some((creator, req)) = self.issued[at].clone() {
                        let me = ctx.this_group::<Batch>().expect("a group member");
                        me.send(ctx, creator, BatchMsg::Create(req));
                    }
                    return;
                }
                if self.reports[at].is_some() {
                    // A section made again after a failure reports with its tag.
                    self.rebuilt.push(r);
                    self.finish(ctx);
                    return;
                }
                self.reports[at] = Some(r);
                self.outstanding -= 1;
                if self.outstanding == 0 {
                    self.stage += 1;
                    self.issue(ctx);
                }
            }
        }
    }
}

impl Batch {
    /// End the run once every stage is done and every expected rebuild reported.
    fn finish(&mut self, ctx: &mut Ctx) {
        if !self.done || self.rebuilt.len() < self.init.rebuilds {
            return;
        }
        let reports: Vec<CreationReport> = self.reports.iter().flatten().cloned().collect();
        ctx.publish("reports", &reports);
        ctx.publish("rebuilt", &self.rebuilt);
        ctx.publish("failed", &self.failed);
        if self.init.rebuilds == 0 && self.failed.is_empty() {
            ctx.exit_on_quiescence();
        } else {
            // Every result is in: end now, without waiting for quiescence.
            ctx.exit();
        }
    }

    /// Start the current stage, or end the run after the last.
    fn issue(&mut self, ctx: &mut Ctx) {
        let me = ctx.this_group::<Batch>().expect("a group member");
        let Some(stage) = self.init.stages.get(self.stage) else {
            self.done = true;
            self.finish(ctx);
            return;
        };
        let first: usize = self.init.stages[..self.stage].iter().map(Vec::len).sum();
        self.outstanding = stage.len();
        let on_member = if self.init.keep_sections {
            Callback::group_all(&me, self.init.on_section)
        } else {
            Callback::Ignore
        };
        let on_report = Callback::group_member(&me, 0, self.init.on_report);
        let made = |j: usize| self.reports[j].as_ref().expect("checked before the run").id;
        for (i, step) in stage.clone().into_iter().enumerate() {
            let tag = (first + i) as u64;
            let (to, msg) = match step {
                Step::Create(p) => {
                    let parent = match p.parent {
                        PlannedParent::World => Parent::World,
                        PlannedParent::Earlier(j) => Parent::Section(made(j)),
                    };
                    let req = Request {
                        algorithm: p.algorithm,
                        k: p.k,
                        parent,
                        membership: p.membership,
                        on_member: on_member.clone(),
                        on_report: on_report.clone(),
                        tag,
                        keep: self.init.keep_sections
                            || self.init.rebuilds > 0
                            || self.init.used[first + i],
                    };
                    self.issued[first + i] = Some((p.creator, req.clone()));
                    (p.creator, BatchMsg::Create(req))
                }
                Step::Merge(m) => {
                    let req = MergeRequest {
                        a: made(m.a),
                        b: made(m.b),
                        b_contact: m.b_contact,
                        k: m.k,
                        on_member: on_member.clone(),
                        on_report: on_report.clone(),
                        tag,
                    };
                    (m.via, BatchMsg::Merge(req))
                }
            };
            me.send(ctx, to, msg);
        }
        if stage.is_empty() {
            self.stage += 1;
            self.issue(ctx);
        }
    }
}

/// Run `stages` of creations on `config`'s layer; with `keep_sections` every member
/// publishes its section (costly at scale).
pub fn run(
    config: Config,
    stages: Vec<Vec<Step>>,
    keep_sections: bool,
) -> Result<Outcome, BatchError> {
    run_with_failures(config, stages, keep_sections, 0)
}

/// As [`run`], on a job whose `--sim-kill` failures make `rebuilds` sections be
/// rebuilt: the run ends once those reports are in too. A creation a failure ends
/// is asked for again by its creator (up to `MAX_RETRIES` times) and runs over the
/// PEs left: its failures are in [`Outcome::failed`].
pub fn run_with_failures(
    config: Config,
    stages: Vec<Vec<Step>>,
    keep_sections: bool,
    rebuilds: usize,
) -> Result<Outcome, BatchError> {
    let mut index = 0;
    let mut used = Vec::new();
    for stage in &stages {
        let first = index;
        for step in stage {
            let named = match step {
                Step::Create(p) => match p.parent {
                    PlannedParent::Earlier(j) => vec![j],
                    PlannedParent::World => vec![],
                },
                Step::Merge(m) => vec![m.a, m.b],
            };
            if let Some(&j) = named.iter().find(|&&j| j >= first) {
                return Err(BatchError::Parent { index, parent: j });
            }
            used.push(false);
            for j in named {
                used[j] = true;
            }
            index += 1;
        }
    }
    let want = index;
    let mut reg = Registry::new();
    let builder_init = crate::host::register(&mut reg);
    reg.chare::<Batch>("chorus_sections::Batch");
    let on_section = reg.entry::<Batch, Encoded<Section>>("Batch::section", BatchMsg::Section);
    let on_report = reg.entry::<Batch, Encoded<CreationReport>>("Batch::report", BatchMsg::Report);
    let run = Runtime::new(reg, config).run(move |ctx| {
        let builder = ctx.create_group::<Builder>(builder_init);
        let init = Init {
            builder,
            stages,
            keep_sections,
            rebuilds,
            used,
            on_section,
            on_report,
        };
        let batch = ctx.create_group::<Batch>(init);
        batch.send(ctx, 0, BatchMsg::Go);
    })?;
    let reports: Vec<CreationReport> = run.output("reports").unwrap_or_default();
    if reports.len() != want {
        return Err(BatchError::Missing {
            got: reports.len(),
            want,
        });
    }
    let sections = run.outputs("section");
    let rebuilt: Vec<CreationReport> = run.output("rebuilt").unwrap_or_default();
    let failed: Vec<CreationReport> = run.output("failed").unwrap_or_default();
    if rebuilt.len() < rebuilds {
        return Err(BatchError::Missing {
            got: reports.len() + rebuilt.len(),
            want: want + rebuilds,
        });
    }
    Ok(Outcome {
        reports,
        rebuilt,
        failed,
        sections,
        run,
    })
}
