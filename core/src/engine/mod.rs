//! One PE's runtime: its chares and collections, the dispatch of envelopes, and the
//! state every machine layer shares. A layer only moves envelopes between PEs and
//! tells this code when its PE is idle.

use crate::api::chare::AnyChare;
use crate::api::ctx::Ctx;
use crate::api::registry::Registry;
use crate::base::config::{Config, ErrorPolicy, LbPeriod, WorkMode};
use crate::base::error::panic_message;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::base::ids::{ChareId, CollectionId, IndexKey, Pe};
use crate::base::lazy::Lazy;
use crate::base::vec_map::VecMap;
use crate::engine::announced::Announced;
use crate::engine::digest::DeliveryLog;
use crate::engine::ledger::{Dropped, Ledger};
use crate::engine::location::Locations;
use crate::engine::quiescence::Quiescence;
use crate::engine::report::PeReport;
use crate::engine::scheduler::{ReadyQueue, SpareBuffers};
use crate::machine::Port;
use crate::msg::callback::Callback;
use crate::msg::envelope::Envelope;
use crate::msg::envelope::SendOpts;
use crate::msg::kind::exit::PeFailed;
use crate::trace::{ns, PeTrace};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

pub(crate) mod announced;
mod balance;
mod checkpoint;
pub use checkpoint::files::{verify_checkpoint, CommittedCheckpoint};
mod create;
mod deliver;
mod destroy;
mod digest;
mod dispatch;
mod drive;
mod exit;
pub(crate) mod flow;
mod guard;
mod inserts;
mod ledger;
pub(crate) mod location;
mod migration;
#[cfg(test)]
mod nowhere;
mod pe_core;
pub(crate) mod quiescence;
mod reduce;
pub(crate) mod report;
pub(crate) mod scheduler;
mod section;
mod tasks;

pub(crate) use checkpoint::files::Restart;
pub(crate) use checkpoint::memory as checkpoint_memory;
pub(crate) use checkpoint::Resumed;
use create::describe_index;
pub(crate) use dispatch::Origin;
use guard::{guarded, invoke};
pub(crate) use pe_core::{Current, LocalContribution, MoveRequest, PeCore, Via};
use reduce::Pending;

/// Who takes part in a collection's reductions below this PE.
#[derive(Default)]
struct Census {
    epoch: u32,
    /// Local members counted for this epoch.
    local: u64,
    /// Children with members in their subtree; valid once `done`.
    active_children: Vec<Pe>,
    done: bool,
    /// Elements homed here that were deleted, with the reductions each had
    /// contributed to: each stands in for its element in later reductions, and
    /// counts in `local`. One per deleted element homed here (a deleted index is
    /// never inserted again), so it grows only with the array's deletions. Boxed on
    /// the first deletion.
    deleted: Lazy<HashMap<IndexKey, StandIn>>,
    /// What only an array's census keeps, boxed on first use: a group's census (one
    /// on every PE of a large simulated job) never needs it.
    rare: Lazy<CensusRare>,
}

/// The parts of a census only arrays use: recounts after migrations, deletions.
#[derive(Default)]
struct CensusRare {
    /// Children's subtree counts by epoch (a child may report before we advance).
    reports: HashMap<u32, Vec<(Pe, u64)>>,
    /// Children whose whole subtree was deleted: (child, epoch, the first reduction
    /// it sends nothing for). At most one per child and epoch; older epochs are
    /// dropped as the census advances.
    emptied: Vec<(Pe, u32, u64)>,
    /// The epoch in which this PE told its parent its subtree was deleted.
    told_empty: Option<u32>,
}

/// A deleted element's place at its home.
#[derive(Clone, Copy)]
struct StandIn {
    /// The reductions it had contributed to when it went.
    contributed: u64,
    /// Its order key, which places it on a restart.
    order: u64,
}

struct Element {
    chare: Box<dyn AnyChare>,
    order: u64,
    contributed: u64,
    /// The PE the map places it on, which counts it in reductions and passes it
    /// broadcasts while it is away.
    home: Pe,
    /// How many times it has migrated.
    moves: u32,
    /// Seconds its handlers ran since its last balancing step (when measured).
    load: f64,
    /// How many times it called `at_sync`.
    syncs: u32,
}

enum Members {
    Group {
        member: Box<dyn AnyChare>,
        contributed: u64,
        /// A nodegroup's member (on its node's first PE): its reductions climb the
        /// tree over nodes.
        per_node: bool,
    },
    Array {
        elements: HashMap<IndexKey, Element>,
        /// Reductions a newly inserted element joins at.
        seq_floor: u64,
    },
}

struct Collection {
    ty: u32,
    members: Members,
    census: Census,
    reductions: Pending,
}

/// The singleton chares living on a PE and the messages waiting for theirs.
#[derive(Default)]
struct Chares {
    /// In creation order.
    slab: Vec<Singleton>,
    slot: HashMap<ChareId, usize>,
    /// The last chare looked up: runs of messages to one chare skip the hash.
    last: Option<(ChareId, usize)>,
    announced: Announced,
    /// Messages for chares not created yet: each is created or reported at the end.
    waiting: HashMap<ChareId, Vec<Envelope>>,
}

/// A singleton chare and its type's registry position (a checkpoint saves it).
struct Singleton {
    ty: u32,
    chare: Box<dyn AnyChare>,
}

/// One PE: the core handlers see, plus the chares and collections living here.
pub(crate) struct PeRuntime {
    pub(crate) core: PeCore,
    /// Singleton chares (most PEs of a large simulated job have none).
    chares: Lazy<Chares>,
    /// Boxed so the table of an idle PE stays small; a sorted vector, since most
    /// PEs hold one or two collections.
    colls: VecMap<CollectionId, Box<Collection>>,
    colls_announced: Announced,
    /// Messages for collections not created here yet (boxed on first use).
    waiting_for_coll: Lazy<HashMap<CollectionId, Vec<Envelope>>>,
    /// The digest of deliveries, when the layer asked for one (boxed: most runs
    /// keep none, and a simulated PE stays small).
    delivered: Option<Box<DeliveryLog>>,
    /// PE 0's checkpoints, asked for and in progress.
    checkpoints: Lazy<checkpoint::Checkpoints>,
    /// Array-section reductions in progress here.
    sections: Lazy<section::SectionReductions>,
}

/// Settings a PE is built from.
pub(crate) struct PeSetup {
    pub(crate) me: Pe,
    pub(crate) npes: usize,
    pub(crate) arity: usize,
    /// PEs per node (`Config::node_size`).
    pub(crate) node_size: usize,
    pub(crate) seed: u64,
    pub(crate) policy: ErrorPolicy,
    pub(crate) work_mode: WorkMode,
    /// This PE's recorder when the job is traced.
    pub(crate) trace: Option<Box<PeTrace>>,
    /// `--array-lb`'s strategy name (none balances nothing) and when it balances.
    pub(crate) array_lb: String,
    pub(crate) lb_period: LbPeriod,
    /// The checkpoint to restart from (`--restart`), read and checked before the job.
    pub(crate) restart: Option<Arc<Restart>>,
}

impl PeSetup {
    /// The settings of PE `pe` of a job of `npes` PEs configured by `cfg`, recorded
    /// by `trace`. The layer says `npes`: on mpi it is the ranks' PEs, not `--pes`.
    pub(crate) fn new(cfg: &Config, npes: usize, pe: Pe, trace: Option<Box<PeTrace>>) -> Self {
        PeSetup {
            me: pe,
            npes,
            arity: cfg.tree_arity as usize,
            node_size: cfg.node_size().max(1) as usize,
            seed: cfg.seed,
            policy: cfg.on_error,
            work_mode: cfg.work,
            // A PE left out of --trace-pes runs untraced: no cost at all.
            trace: trace.filter(|t| t.is_recording()),
            array_lb: cfg.array_lb.clone(),
            lb_period: cfg.lb_when(),
            restart: None,
        }
    }
}

impl PeRuntime {
    /// PE `setup.me`, knowing the job's registrations and sending through `port`.
    pub(crate) fn new(setup: PeSetup, reg: Arc<Registry>, port: Box<dyn Port>) -> Self {
        let strategy = reg.find_balancer(&setup.array_lb);
        let restart = setup.restart;
        let mut rt = PeRuntime {
            core: PeCore {
                me: setup.me,
                npes: setup.npes,
                arity: setup.arity,
                node_size: setup.node_size,
                seed: setup.seed,
                reg,
                port,
                policy: setup.policy,
                work_mode: setup.work_mode,
                queue: ReadyQueue::default(),
                ledger: Ledger::default(),
                current: Current::Main,
                next_chare_seq: Lazy::default(),
                next_coll_seq: 0,
                next_section_seq: 0,
                arrays: Lazy::default(),
                rare: Lazy::default(),
                deferred: Vec::new(),
                qd: Lazy::default(),
                exiting: false,
                worked: false,
                report: Lazy::default(),
                next_seq: 0,
                trace: setup.trace,
                loc: Locations::default(),
                moves: Vec::new(),
                destroys: Vec::new(),
                leaving: false,
                flow: Lazy::default(),
                syncs: balance::Syncs::new(strategy, setup.lb_period),
                resumed: None,
                tasks: Lazy::default(),
            },
            chares: Lazy::default(),
            colls: VecMap::default(),
            colls_announced: Announced::default(),
            waiting_for_coll: Lazy::default(),
            delivered: None,
            checkpoints: Lazy::default(),
            sections: Lazy::default(),
        };
        if let Some(r) = restart {
            rt.restore(&r);
        }
        rt
    }

    /// Digest every message this PE hands to user code from now on.
    pub(crate) fn keep_delivery_digest(&mut self) {
        self.delivered.get_or_insert_with(Box::default);
    }

    /// The digest of deliveries and how many it holds, if this PE keeps one.
    pub(crate) fn delivery_digest(&self) -> Option<(u64, u64)> {
        self.delivered.as_deref().map(DeliveryLog::value)
    }

    /// Start this PE's digest of deliveries since now, if it keeps one.
    pub(crate) fn mark_delivery_digest(&mut self) {
        if let Some(d) = self.delivered.as_deref_mut() {
            d.mark();
        }
    }

    /// The digest of deliveries since the last mark and how many it holds.
    pub(crate) fn delivery_digest_since_mark(&self) -> Option<(u64, u64)> {
        self.delivered.as_deref().and_then(DeliveryLog::since_mark)
    }

    /// Run the program's main function on this PE (PE 0 of the job).
    pub(crate) fn run_main(&mut self, main: Box<dyn FnOnce(&mut Ctx) + Send>) {
        let core = &mut self.core;
        core.current = Current::Main;
        if let Some(t) = core.trace.as_deref_mut() {
            t.runtime_begin(ns(core.port.now()), "chorus::main");
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| main(&mut Ctx { core: &mut *core })));
        if let Err(p) = outcome {
            let message = panic_message(p);
            core.fail(RuntimeError::HandlerPanic {
                pe: core.me,
                chare: "main".into(),
                message,
            });
        }
        core.trace_entries_end();
        self.settle();
        self.core.port.flush();
    }

    /// Accept an envelope that arrived from another PE.
    #[inline]
    pub(crate) fn accept(&mut self, env: Envelope) {
        let (prio, exp) = (env.prio, env.expedited);
        self.core.queue.push(env, prio, exp);
    }

    /// Run the next ready message; false when none is queued.
    pub(crate) fn step(&mut self) -> bool {
        match self.pop() {
            Some(env) => {
                self.run_one(env);
                true
            }
            None => false,
        }
    }

    /// Take the next ready message without running it (the sim layer charges its
    /// receive cost first).
    pub(crate) fn pop(&mut self) -> Option<Envelope> {
        self.core.queue.pop()
    }

    /// Run one message taken by `pop`, then pass on what it sent.
    pub(crate) fn run_one(&mut self, env: Envelope) {
        self.process(env);
        self.core.port.flush();
    }

    /// Give back the queue's memory if it is empty (many idle simulated PEs), its
    /// buffer to `spares`.
    pub(crate) fn release_idle_memory(&mut self, spares: &mut SpareBuffers<Envelope>) {
        self.core.queue.release_if_empty(spares);
    }

    /// Accept an envelope, queueing it in a buffer from `spares` if the queue has none.
    pub(crate) fn accept_reusing(&mut self, env: Envelope, spares: &mut SpareBuffers<Envelope>) {
        let (prio, exp) = (env.prio, env.expedited);
        self.core.queue.push_reusing(env, prio, exp, spares);
    }

    /// Messages waiting in this PE's queue.
    pub(crate) fn queued(&self) -> usize {
        self.core.queue.len()
    }

    /// Drop every queued message (the PE failed), telling `lost` of each; returns
    /// how many messages they held.
    pub(crate) fn discard_queue(&mut self, mut lost: impl FnMut(&Envelope)) -> u64 {
        let (mut n, mut counted) = (0, 0);
        let mut waves = Vec::new();
        while let Some(env) = self.core.queue.pop() {
            if env.kind.is_quiescence_wave() {
                waves.push(env);
                continue;
            }
            n += env.weight();
            counted += env.counted_weight();
            lost(&env);
        }
        // A wave's messages stay: the simulator runs them for the dead PE (`lost_here`).
        for env in waves {
            let (prio, exp) = (env.prio, env.expedited);
            self.core.queue.push(env, prio, exp);
        }
        // Held messages are this PE's own, all counted.
        let held = self.core.flow.built_mut().map_or(0, flow::Flow::discard);
        self.core.ledger.dropped(counted + held, Dropped::WithPe);
        n + held
    }

    /// `messages` this PE sent were lost with failed PE `failed` (sim `--sim-kill`).
    /// Under `--on-error abort` that ends the job with `RuntimeError::LostWithPe`;
    /// under `drop` they stay counted (the ledger's `Dropped::WithPe`, the sim's
    /// statistics) and are not filed one by one: subscribers of `on_pe_failure` are
    /// told of the failure, and the subsystems that lose state with it report that
    /// themselves. True if the job now ends.
    pub(crate) fn lost_with(&mut self, failed: Pe, messages: u64) -> bool {
        if self.core.policy != ErrorPolicy::Abort || messages == 0 {
            return false;
        }
        let me = self.core.me;
        self.core.abort(RuntimeError::LostWithPe {
            pe: me,
            failed,
            messages,
        });
        true
    }

    /// `env`, sent to this PE, is lost with it (it failed): what quiescence counted of
    /// it is counted processed here, the dead PE's final word in the waves the
    /// simulator keeps running for it, so the survivors' waves still balance.
    pub(crate) fn lost_here(&mut self, env: &Envelope) {
        self.core
            .ledger
            .dropped(env.counted_weight(), Dropped::WithPe);
    }

    /// Windowed messages of `weight` this PE sent to PE `to` were lost with `to` (it
    /// failed): they no longer count against this PE's window for `to`, or this PE
    /// would hold its own messages forever. True if that released held messages.
    pub(crate) fn lost_at(&mut self, to: Pe, weight: u64) -> bool {
        self.release_held(to, weight)
    }

    /// Queue the machine layer's notice that `pe` failed for `callback`. It is counted
    /// as a message sent here so quiescence detection waits for it.
    pub(crate) fn notify_failure(&mut self, pe: Pe, callback: Callback) {
        let env = self
            .core
            .envelope(PeFailed { pe, callback }, SendOpts::expedited());
        self.core.post(self.core.me, env);
    }

    /// Called by the layer when this PE has nothing queued. Loops because a finished
    /// wave may start the next one, which this idle PE can answer at once.
    pub(crate) fn on_idle(&mut self) {
        while self.core.queue.is_empty() && !self.core.exiting {
            let snapshot = self.core.ledger.counters();
            let parent = self.core.tree_parent();
            let out = self
                .core
                .qd
                .built_mut()
                .map_or(crate::engine::quiescence::Outcome::Nothing, |qd| {
                    qd.on_idle(snapshot, parent.is_none())
                });
            if out == crate::engine::quiescence::Outcome::Nothing {
                break;
            }
            self.qd_outcome(out, parent);
        }
        self.core.port.flush();
    }

    /// Tell the trace that the next message this PE runs began its delivery at
    /// `ts_ns`: the sim charges receive and handler costs before the handler runs, and
    /// the entry's slice covers them.
    pub(crate) fn trace_delivery_start(&mut self, ts_ns: u64) {
        if let Some(t) = self.core.trace.as_deref_mut() {
            t.delivery_starts(ts_ns);
        }
    }

    /// Mark the start of an idle period in the trace (it ends when a message runs).
    pub(crate) fn trace_idle(&mut self) {
        if let Some(t) = self.core.trace.as_deref_mut() {
            t.idle_begin(ns(self.core.port.now()));
        }
    }

    /// True once this PE has seen the job's exit.
    pub(crate) fn exiting(&self) -> bool {
        self.core.exiting
    }

    /// True (once) if a handler computed since the last call: a layer with an inbox
    /// then drains it before the next message, so what arrived during the compute
    /// competes by priority with what the handler queued locally.
    pub(crate) fn take_worked(&mut self) -> bool {
        std::mem::take(&mut self.core.worked)
    }

    /// What every chare, group member and array element here left unfinished.
    fn unfinished(&self) -> Vec<String> {
        let singletons =
            (self.chares.get().into_iter()).flat_map(|c| c.slab.iter().map(|s| &s.chare));
        let members = self.colls.values().flat_map(|c| match &c.members {
            Members::Group { member, .. } => vec![member],
            Members::Array { elements, .. } => elements.values().map(|e| &e.chare).collect(),
        });
        singletons
            .chain(members)
            .flat_map(|c| c.unfinished())
            .collect()
    }

    /// Statistics and outputs of this PE, at the end of the run.
    pub(crate) fn into_report(mut self) -> PeReport {
        let mut report = self.core.report.take().unwrap_or_default();
        report.pe = self.core.me;
        self.core.ledger.report(&mut report);
        // Messages still waiting for a creation when the job exited never ran either.
        let waiting: usize = self
            .chares
            .get()
            .into_iter()
            .flat_map(|c| c.waiting.values())
            .chain(
                self.waiting_for_coll
                    .get()
                    .into_iter()
                    .flat_map(HashMap::values),
            )
            .map(Vec::len)
            .sum::<usize>()
            + self.core.loc.waiting_count();
        report.unprocessed = (self.core.queue.len() + waiting) as u64;
        report.unfinished = self.unfinished();
        report.qd_waves = self.core.qd.get().map_or(0, Quiescence::waves_run);
        (report.tasks_waiting, report.late_replies) =
            self.core.tasks.get().map_or((0, 0), tasks::Tasks::counts);
        if report.tasks_waiting > 0 {
            // Nothing will wake them: their answers were never sent, or were lost.
            tracing::warn!(
                pe = report.pe,
                "{} tasks still waiting for a reply at the end of the job",
                report.tasks_waiting
            );
        }
        report
    }
}

/// The sizes of what every PE of a simulated job keeps, pinned so they cannot grow
/// unnoticed: 10^6 and more of each are built, and an allocator rounds each box up
/// to its size class (mimalloc's: 128, 160, .., 512, 640), so a few bytes more
/// can cost a class's step on every PE.
#[cfg(all(test, target_pointer_width = "64"))]
mod per_pe_sizes {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn a_pe_runtime_fits_in_512_bytes() {
        assert!(
            size_of::<ReadyQueue<Envelope>>() <= 48,
            "rare queues are boxed"
        );
        assert!(size_of::<Announced>() <= 24, "the table is boxed");
        assert!(size_of::<PeCore>() <= 416, "PeCore {}", size_of::<PeCore>());
        assert!(
            size_of::<PeRuntime>() <= 512,
            "PeRuntime {}: past 512 bytes a box takes the 640-byte class",
            size_of::<PeRuntime>()
        );
    }

    #[test]
    fn an_envelope_fits_in_128_bytes() {
        // Past 128 bytes a move of an envelope (several per hop) is a call to
        // memcpy rather than eight inline 16-byte moves.
        assert!(
            size_of::<Envelope>() <= 128,
            "Envelope {}: box the fields of the largest runtime message",
            size_of::<Envelope>()
        );
    }

    #[test]
    fn a_group_collection_fits_in_128_bytes() {
        assert!(size_of::<Census>() <= 56, "Census {}", size_of::<Census>());
        assert!(
            size_of::<Collection>() <= 128,
            "Collection {}: past 128 bytes a box takes the 160-byte class",
            size_of::<Collection>()
        );
    }
}
