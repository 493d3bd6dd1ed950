//! Load balancing of chare arrays on one PE (Charm++'s AtSync): the load measured
//! per element, the elements that called `at_sync` and wait for their resume, the
//! gather of their load up the PE tree, PE 0's decision and plan, and the resume.
//!
//! A step: each element calls `at_sync`; its record (key, PE, load) goes to its home
//! PE, which counts its homed elements as reductions do (`Census`), and up the tree
//! to PE 0 with each subtree's records; PE 0 asks the strategy, checks its decision
//! and sends each PE involved its part of the plan; elements move (marked as moving
//! in the step); a PE that has received all it was told to expect says so to PE 0,
//! which then sends the resume down the tree, and each element resumes where it is.

use super::{guarded, Current, Members, PeCore, PeRuntime};
use crate::api::balance::ArrayStrategy;
use crate::base::config::LbPeriod;
use crate::base::error::SyncError;
use crate::base::hash::{HashMap, HashSet};
use crate::base::ids::{CollectionId, IndexKey, Pe};
use crate::base::lazy::Lazy;
use crate::engine::dispatch::Origin;
use crate::engine::report::BalanceStep;
use crate::msg::array::ElemAddr;
use crate::msg::envelope::{Kind, SendOpts};
use crate::msg::kind::balance::{
    Arrived, BalanceMsg, ObjRecord, PeRecord, Plan, Resume, StartLb, SyncHome, SyncUp,
};
use crate::msg::kind::migrate::Moved;
use std::sync::Arc;

/// A step's records gathered on one PE.
#[derive(Default)]
struct Gather {
    objs: Vec<ObjRecord>,
    pes: Vec<PeRecord>,
    /// Records of elements homed here, and subtrees of children, counted so far.
    members: u64,
    children: usize,
}

/// PE 0's account of a step whose plan is out.
struct Underway {
    report: BalanceStep,
}

/// A PE's account of the elements arriving in a step, it and its subtree.
#[derive(Default)]
struct Landing {
    /// Elements of the step that arrived here.
    got: u32,
    /// How many the plan sends here, once the plan has come.
    want: Option<u32>,
    /// Children whose subtrees have not yet said all their elements arrived.
    children: usize,
}

/// The balancing state of one PE.
pub(crate) struct Syncs {
    /// The strategy of `--array-lb` and when it balances, if one was chosen.
    strategy: Option<Arc<dyn ArrayStrategy>>,
    period: LbPeriod,
    /// Seconds the last handler ran, and all handlers since this PE last reported.
    last: f64,
    busy: f64,
    in_elements: f64,
    /// The steps' records, built when this PE first takes part in one.
    steps: Lazy<Steps>,
}

/// What a PE keeps of the balancing steps it takes part in.
#[derive(Default)]
struct Steps {
    /// `at_sync` calls of the running handler, taken once it returns.
    asked: Vec<(CollectionId, ElemAddr)>,
    /// Elements here that called `at_sync` and have not been resumed; at most one
    /// entry per element on this PE.
    waiting: HashSet<(CollectionId, IndexKey)>,
    /// Steps being gathered here, by array and step: at most two per array, the
    /// step in progress and, from elements inserted during it, the next one (each
    /// element's resume comes before its next `at_sync`).
    gathers: HashMap<(CollectionId, u32), Gather>,
    /// Elements of a step that arrived here and in the subtree (at most one step per
    /// array: its resume comes after every subtree's arrivals).
    arrivals: HashMap<(CollectionId, u32), Landing>,
    /// PE 0's steps whose plans are out (one per array at most).
    underway: HashMap<(CollectionId, u32), Underway>,
    /// PE 0, under `--lb-manual`: gathered steps that wait for `start_lb` (one per
    /// array at most, as gathers), and arrays whose next step was asked for early.
    parked: HashMap<CollectionId, (u32, Gather)>,
    asked_early: HashSet<CollectionId>,
    /// PE 0, under `--lb-period-secs`: when each array's last balancing step began.
    last_balanced: HashMap<CollectionId, f64>,
    /// The step an element inserted here now first syncs in, per array: one past
    /// the last step gathered, joined or resumed here (one entry per array).
    next_round: HashMap<CollectionId, u32>,
    /// The last step of each array this PE passed up the tree (on PE 0: decided)
    /// and the last it resumed (one entry per array), for elements inserted into a
    /// step too late to be gathered in it (see [`Passed`]).
    passed: HashMap<CollectionId, Passed>,
    /// Inserts and `done_inserting` calls of elements inside a step, posted when the
    /// step resumes here (each entry one call, all dropped at the resume).
    held: HashMap<CollectionId, Vec<(Pe, Kind, SendOpts)>>,
    /// Each element's heaviest receivers since the last step (bounded per element).
    comm: HashMap<(CollectionId, IndexKey), Vec<Edge>>,
    /// The PEs that sent each element here messages, the first [`SENDERS_KEPT`];
    /// an entry per element on this PE, dropped when the element leaves.
    senders: HashMap<(CollectionId, IndexKey), Vec<Pe>>,
    /// The elements each element here sent messages to, the first [`SENDERS_KEPT`];
    /// an entry per element on this PE, dropped when the element leaves.
    receivers: HashMap<(CollectionId, IndexKey), Vec<IndexKey>>,
    /// Receivers of elements a balancing step sent away, with the PEs those went to,
    /// which hear of each receiver's own move in the step: at most [`SENDERS_KEPT`]
    /// entries per element that left, cleared at the array's resume.
    relay: HashMap<(CollectionId, IndexKey), Vec<Pe>>,
    /// On a traced PE, its loads in each step being gathered or planned (at most two
    /// per array, as gathers; each dropped at its step's resume here).
    loads: HashMap<(CollectionId, u32), loads::PeLoads>,
}

/// How far a step of an array went on one PE. An element inserted from outside a
/// step joins the first one neither the inserting PE nor its home had begun, which
/// may already be passed up further up the tree: a record of such a step reaching a
/// PE that passed it up is dropped, the step goes on without it, and the newcomer
/// resumes with the step, unbalanced; one that syncs after the step resumed on its PE
/// resumes at once.
#[derive(Default, Clone, Copy)]
pub(super) struct Passed {
    up: Option<u32>,
    resumed: Option<u32>,
}

/// How a step's records and plan travel: expedited, ahead of the elements' own
/// messages queued on each PE (every element of the array waits for the step, and
/// an app that sends before its `at_sync` has those messages land in the gather).
/// The resume is not: it must not overtake the news of moves queued before it.
pub(super) const STEP_OPTS: SendOpts = SendOpts {
    prio: i32::MIN,
    expedited: true,
};

/// How many sender PEs an element's record keeps: a stencil's or a mesh's
/// neighbours, whose location caches a balancing move brings up to date.
const SENDERS_KEPT: usize = 8;

/// Add `v` to the list an element keeps under `key`, unless the list has it or holds
/// [`SENDERS_KEPT`] already (the bound of every per-element list of PEs or peers).
fn keep_first<T: PartialEq + Clone>(
    lists: &mut HashMap<(CollectionId, IndexKey), Vec<T>>,
    (coll, key): (CollectionId, &IndexKey),
    v: &T,
) {
    let list = lists.entry((coll, key.clone())).or_default();
    if list.len() < SENDERS_KEPT && !list.contains(v) {
        list.push(v.clone());
    }
}

/// A receiver of an element's messages: its key, messages and bytes.
type Edge = (IndexKey, u64, u64);

/// How many receivers an element's communication record keeps.
const COMM_KEPT: usize = crate::api::balance::COMM_EDGES_PER_OBJ;

impl Syncs {
    /// Balancing with `strategy` when `period` says (none: elements resume at once).
    pub(crate) fn new(strategy: Option<Arc<dyn ArrayStrategy>>, period: LbPeriod) -> Self {
        Syncs {
            strategy,
            period,
            last: 0.0,
            busy: 0.0,
            in_elements: 0.0,
            steps: Lazy::default(),
        }
    }

    /// Whether handlers are timed for a strategy.
    #[inline]
    pub(crate) fn measuring(&self) -> bool {
        self.strategy.is_some()
    }

    /// A handler ran for `secs`, for `element` if it belongs to an array element.
    pub(crate) fn ran(&mut self, secs: f64, element: bool) {
        self.last = secs;
        self.busy += secs;
        if element {
            self.in_elements += secs;
        }
    }

    /// The `at_sync` calls not yet acted on, if any.
    fn take_asked(&mut self) -> Option<Vec<(CollectionId, ElemAddr)>> {
        let steps = self.steps.built_mut()?;
        (!steps.asked.is_empty()).then(|| std::mem::take(&mut steps.asked))
    }

    /// The time of the last handler, once.
    pub(crate) fn take_last(&mut self) -> f64 {
        std::mem::take(&mut self.last)
    }

    /// Note that the running element sent `bytes` to element `to` of its array.
    pub(crate) fn sent(&mut self, from: (CollectionId, &IndexKey), to: &IndexKey, bytes: u64) {
        if !self.strategy.as_ref().is_some_and(|s| s.needs_comm()) {
            return;
        }
        let edges = self
            .steps
            .get_mut()
            .comm
            .entry((from.0, from.1.clone()))
            .or_default();
        if let Some(e) = edges.iter_mut().find(|e| &e.0 == to) {
            e.1 += 1;
            e.2 += bytes;
        } else if edges.len() < COMM_KEPT {
            edges.push((to.clone(), 1, bytes));
        } else if let Some(light) = edges.iter_mut().min_by_key(|e| e.2) {
            // Space-saving: the new receiver takes the lightest slot and its count,
            // so a heavy receiver seen late still rises to the top.
            *light = (to.clone(), light.1 + 1, light.2 + bytes);
        }
    }
}

impl Syncs {
    /// Note that PE `src` sent element `key` of `coll` a message here (when measuring).
    #[inline]
    pub(crate) fn note_sender(&mut self, coll: CollectionId, key: &IndexKey, src: Pe) {
        if !self.measuring() {
            return;
        }
        self.note_sender_measured(coll, key, src);
    }

    /// `note_sender`'s work, out of line: only a balanced job does it.
    fn note_sender_measured(&mut self, coll: CollectionId, key: &IndexKey, src: Pe) {
        keep_first(&mut self.steps.get_mut().senders, (coll, key), &src);
    }

    /// Note that element `from` of `coll`, here, sent element `to` a message.
    fn note_receiver(&mut self, coll: CollectionId, from: &IndexKey, to: &IndexKey) {
        if !self.measuring() || from == to {
            return;
        }
        keep_first(&mut self.steps.get_mut().receivers, (coll, from), to);
    }

    /// The elements element `key` sent messages to from here, forgotten as it leaves.
    fn take_receivers(&mut self, coll: CollectionId, key: &IndexKey) -> Vec<IndexKey> {
        match self.steps.built_mut() {
            Some(s) => s.receivers.remove(&(coll, key.clone())).unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Forget the receivers of the elements that left in a step of `coll`.
    pub(super) fn end_relay(&mut self, coll: CollectionId) {
        if let Some(s) = self.steps.built_mut() {
            s.relay.retain(|(c, _), _| *c != coll);
        }
    }

    /// The PEs that sent element `key` messages here, forgotten as it leaves.
    pub(crate) fn take_senders(&mut self, coll: CollectionId, key: &IndexKey) -> Vec<Pe> {
        match self.steps.built_mut() {
            Some(s) => s.senders.remove(&(coll, key.clone())).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

/// Whether an element's `syncs`-th `at_sync` (counting from 1) balances under
/// `--lb-period period`: the first one, since the initial placement knows nothing of
/// load and every step before the first balancing pays for it, and then every
/// `period`-th after it (1, 1 + period, 1 + 2 period, ...).
fn balances_at(syncs: u32, period: u32) -> bool {
    let period = period.max(1);
    syncs % period == 1 % period
}

impl PeCore {
    /// Record the running element's `at_sync`, acted on once its handler returns.
    pub(crate) fn at_sync(&mut self) -> Result<(), SyncError> {
        let (coll, addr) = self.running_element().map_err(SyncError::NotAnElement)?;
        if let Err(e) = self.migrator(coll) {
            let chare = match e {
                crate::base::error::MigrateError::NotMigratable { chare } => chare,
                other => other.to_string(),
            };
            return Err(SyncError::NotMigratable { chare });
        }
        if !self
            .syncs
            .steps
            .get_mut()
            .waiting
            .insert((coll, addr.key.clone()))
        {
            return Err(SyncError::Twice);
        }
        self.syncs.steps.get_mut().asked.push((coll, addr));
        Ok(())
    }

    /// Ask PE 0 for a balancing step of array `coll` under `--lb-manual`.
    pub(crate) fn start_lb(&mut self, coll: CollectionId) -> Result<(), SyncError> {
        if self.syncs.strategy.is_none() || self.syncs.period != LbPeriod::Manual {
            return Err(SyncError::NotManual);
        }
        let env = self.envelope(StartLb { coll }, SendOpts::default());
        self.post(0, env);
        Ok(())
    }

    /// Note a message from the running element to element `to` of its own array,
    /// for strategies that place by communication.
    #[inline]
    pub(crate) fn note_element_send(&mut self, coll: CollectionId, to: &IndexKey, bytes: u64) {
        // Checked here, inline, so a job without a strategy pays no call per send.
        if !self.syncs.measuring() {
            return;
        }
        if let Current::Element(c, from) = &self.current {
            if *c == coll {
                self.syncs.note_receiver(coll, &from.key, to);
                self.syncs.sent((coll, &from.key), to, bytes);
            }
        }
    }

    /// Post `kind` to `to`, or, if the running element is inside a step of `coll`,
    /// once that step resumes here: an element inserted from inside a step is
    /// created after it, so it joins from the next step.
    pub(crate) fn post_after_step(&mut self, coll: CollectionId, to: Pe, kind: Kind, o: SendOpts) {
        if let Current::Element(c, from) = &self.current {
            if *c == coll && self.in_step(coll, &from.key) {
                let held = self.syncs.steps.get_mut().held.entry(coll).or_default();
                return held.push((to, kind, o));
            }
        }
        self.note_posted(&kind);
        let env = self.envelope(kind, o);
        self.post(to, env);
    }

    /// Post what elements of `coll` held back during the step that resumes.
    pub(super) fn release_held(&mut self, coll: CollectionId) {
        let Some(held) = self
            .syncs
            .steps
            .built_mut()
            .and_then(|s| s.held.remove(&coll))
        else {
            return;
        };
        for (to, kind, o) in held {
            self.note_posted(&kind);
            let env = self.envelope(kind, o);
            self.post(to, env);
        }
    }

    /// The step an element of `coll` inserted here now first syncs in.
    pub(crate) fn next_round(&self, coll: CollectionId) -> u32 {
        let steps = self.syncs.steps.get();
        steps
            .and_then(|s| s.next_round.get(&coll).copied())
            .unwrap_or(0)
    }

    /// Step `round` of `coll` has begun (or ended) here: elements inserted from now
    /// on first sync in a later one.
    pub(super) fn past_round(&mut self, coll: CollectionId, round: u32) {
        let next = self
            .syncs
            .steps
            .get_mut()
            .next_round
            .entry(coll)
            .or_default();
        *next = (*next).max(round.saturating_add(1));
    }

    /// How far the steps of `coll` went here.
    fn passed(&self, coll: CollectionId) -> Passed {
        let steps = self.syncs.steps.get();
        steps
            .and_then(|s| s.passed.get(&coll).copied())
            .unwrap_or_default()
    }

    pub(super) fn passed_mut(&mut self, coll: CollectionId) -> &mut Passed {
        self.syncs.steps.get_mut().passed.entry(coll).or_default()
    }

    /// Whether nothing a handler asked for waits to be acted on.
    pub(crate) fn settled(&self) -> bool {
        self.deferred.is_empty()
            && self.moves.is_empty()
            && self.destroys.is_empty()
            && self.syncs.steps.get().is_none_or(|s| s.asked.is_empty())
    }

    /// Whether the element is between its `at_sync` and its resume.
    pub(crate) fn in_step(&self, coll: CollectionId, key: &IndexKey) -> bool {
        self.syncs
            .steps
            .get()
            .is_some_and(|s| s.waiting.contains(&(coll, key.clone())))
    }
}

impl PeRuntime {
    /// Act on the `at_sync` calls of the handler that just ran.
    pub(super) fn apply_syncs(&mut self) {
        while let Some(asked) = self.core.syncs.take_asked() {
            for (coll, addr) in asked {
                self.synced(coll, addr);
            }
        }
    }

    /// An element reached a step boundary: resume it now if this step does not
    /// balance, else send its record on, with the load it predicts for the next
    /// period (`Migratable::predict_load`; a negative or non-finite answer, or a
    /// panic, which fails the job as a handler's would, leaves the measured load).
    fn synced(&mut self, coll: CollectionId, addr: ElemAddr) {
        let me = self.core.me;
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return;
        };
        let round = e.syncs;
        e.syncs = e.syncs.saturating_add(1);
        self.core.past_round(coll, round);
        // Under a time period or by hand, PE 0 decides whether the gathered step
        // balances; a step period is known to every element.
        let late = self.core.passed(coll).resumed.is_some_and(|r| round <= r);
        let balances = !late
            && self.core.syncs.strategy.is_some()
            && match self.core.syncs.period {
                LbPeriod::Steps(period) => balances_at(e.syncs, period),
                LbPeriod::Seconds(_) | LbPeriod::Manual => true,
            };
        if !balances {
            e.load = 0.0;
            return self.resume(coll, addr);
        }
        let measured = std::mem::take(&mut e.load);
        let load = match self.core.migrator(coll) {
            Ok((m, name)) => {
                let cur = Current::Element(coll, addr.clone());
                guarded(&mut self.core, cur, &name, |ctx| {
                    Ok((m.predict)(e.chare.as_mut(), measured, ctx))
                })
                .filter(|p| p.is_finite() && *p >= 0.0)
                .unwrap_or(measured)
            }
            Err(_) => measured,
        };
        let home = e.home;
        let comm = self
            .core
            .syncs
            .steps
            .get_mut()
            .comm
            .remove(&(coll, addr.key.clone()))
            .unwrap_or_default();
        self.note_obj_load(coll, round, &addr.key, load);
        let obj = ObjRecord {
            key: addr.key,
            pe: me,
            load,
            comm,
        };
        if home == me {
            self.gather(coll, round).objs.push(obj);
            self.gather(coll, round).members += 1;
            self.try_send_up(coll, round);
        } else {
            let env = self.core.envelope(SyncHome { coll, round, obj }, STEP_OPTS);
            self.core.post(home, env);
        }
    }

    /// Element `addr` of `coll` left for PE `to` on move `moves` (`home` its home):
    /// if a balancing step moved it, tell the PEs that sent it messages here where it
    /// went, after the element as news must be, so their messages after the step do
    /// not wait to be forwarded by this PE or its home behind a long handler; tell
    /// `to` where the elements it sent messages to are (`to` may never have sent them
    /// any), and pass on the news of its receivers' own moves in the step.
    pub(crate) fn tell_senders(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
        (home, to, moves): (Pe, Pe, u32),
        balancing: bool,
    ) {
        let senders = self.core.syncs.take_senders(coll, &addr.key);
        let receivers = self.core.syncs.take_receivers(coll, &addr.key);
        if !balancing {
            return;
        }
        let news = Moved {
            coll,
            addr,
            home,
            pe: to,
            moves,
        };
        for pe in senders.into_iter().filter(|&p| p != to && p != home) {
            self.core.send_news(pe, news.clone());
        }
        self.relay_news(&news);
        for key in receivers {
            self.hint_receiver(coll, key, to);
        }
    }

    /// Pass `news` of an element's move on to the PEs that elements it received
    /// messages from went to in this step.
    pub(crate) fn relay_news(&mut self, news: &Moved) {
        let Some(steps) = self.core.syncs.steps.built_mut() else {
            return;
        };
        let Some(pes) = steps.relay.remove(&(news.coll, news.addr.key.clone())) else {
            return;
        };
        for pe in pes.into_iter().filter(|&p| p != news.pe) {
            self.core.send_news(pe, news.clone());
        }
    }

    /// Tell PE `to`, where an element that sends to `key` went, where `key` is if it
    /// is away from its home, and relay the news of its move in this step there.
    fn hint_receiver(&mut self, coll: CollectionId, key: IndexKey, to: Pe) {
        let me = self.core.me;
        let here = match self.colls.get(&coll).map(|c| &c.members) {
            Some(Members::Array { elements, .. }) => elements
                .get(&key)
                .map(|e| (me, e.moves, e.order, Some(e.home))),
            _ => None,
        };
        let known = here.or_else(|| {
            let l = self.core.loc.get(coll, &key)?;
            Some((l.pe, l.moves, l.order, l.homed_here.then_some(me)))
        });
        keep_first(
            &mut self.core.syncs.steps.get_mut().relay,
            (coll, &key),
            &to,
        );
        let Some((pe, moves, order, home)) = known else {
            return;
        };
        let addr = ElemAddr { key, order };
        let home = match home {
            Some(h) => h,
            None => match self.core.locate(coll, &addr) {
                Ok(h) => h,
                Err(e) => return self.core.fail(e),
            },
        };
        if pe != to && pe != home {
            let news = Moved {
                coll,
                addr,
                home,
                pe,
                moves,
            };
            self.core.send_news(to, news);
        }
    }

    /// Run an element's `resume_from_sync` here; an element no longer here has
    /// nothing to resume.
    fn resume(&mut self, coll: CollectionId, addr: ElemAddr) {
        self.core.release_held(coll);
        self.core
            .syncs
            .steps
            .get_mut()
            .waiting
            .remove(&(coll, addr.key.clone()));
        let Ok((m, name)) = self.core.migrator(coll) else {
            return;
        };
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return;
        };
        guarded(&mut self.core, Current::Element(coll, addr), &name, |ctx| {
            (m.resume)(e.chare.as_mut(), ctx);
            Ok(())
        });
    }

    fn gather(&mut self, coll: CollectionId, round: u32) -> &mut Gather {
        self.core
            .syncs
            .steps
            .get_mut()
            .gathers
            .entry((coll, round))
            .or_default()
    }

    /// Run a load-balancing message.
    pub(super) fn on_balance(&mut self, m: BalanceMsg, _from: Origin) {
        match m {
            BalanceMsg::SyncHome(SyncHome { coll, round, .. })
            | BalanceMsg::SyncUp(SyncUp { coll, round, .. })
                if self.core.passed(coll).up.is_some_and(|u| round <= u) => {}
            BalanceMsg::SyncHome(SyncHome { coll, round, obj }) => {
                let g = self.gather(coll, round);
                g.objs.push(obj);
                g.members += 1;
                self.try_send_up(coll, round);
            }
            BalanceMsg::SyncUp(SyncUp {
                coll,
                round,
                objs,
                pes,
            }) => {
                let g = self.gather(coll, round);
                g.objs.extend(objs);
                g.pes.extend(pes);
                g.children += 1;
                self.try_send_up(coll, round);
            }
            BalanceMsg::Plan(Plan {
                coll,
                round,
                parts,
                balanced,
            }) => self.scatter((coll, round), parts, balanced),
            BalanceMsg::Arrived(Arrived { coll, round }) => self.child_landed(coll, round),
            BalanceMsg::Resume(Resume { coll, round }) => self.on_resume(coll, round),
            BalanceMsg::StartLb(StartLb { coll }) => self.start_asked(coll),
        }
    }

    /// Pass up the records of any step of `coll` gathered here that can now go (after
    /// a deletion: deleted elements never sync).
    pub(super) fn recheck_steps(&mut self, coll: CollectionId) {
        let rounds: Vec<u32> = match self.core.syncs.steps.get() {
            Some(s) => s
                .gathers
                .keys()
                .filter(|k| k.0 == coll)
                .map(|k| k.1)
                .collect(),
            None => Vec::new(),
        };
        for round in rounds {
            self.try_send_up(coll, round);
        }
    }

    /// Pass the step's records up once every element homed here and every child
    /// with members below it has reported; on PE 0, decide.
    fn try_send_up(&mut self, coll: CollectionId, round: u32) {
        let Some(c) = self.colls.get(&coll) else {
            return;
        };
        let census = &c.census;
        let Some(g) = self.core.syncs.steps.get_mut().gathers.get(&(coll, round)) else {
            return;
        };
        // Deleted elements never sync: every one stands in (`u64::MAX`: any round).
        if !census.complete(u64::MAX, g.members, g.children) {
            return;
        }
        let Some(mut g) = self
            .core
            .syncs
            .steps
            .get_mut()
            .gathers
            .remove(&(coll, round))
        else {
            return;
        };
        self.core.past_round(coll, round);
        let p = self.core.passed_mut(coll);
        p.up = p.up.max(Some(round));
        let syncs = &mut self.core.syncs;
        let background = (syncs.busy - syncs.in_elements).max(0.0);
        (syncs.busy, syncs.in_elements) = (0.0, 0.0);
        self.note_background(coll, round, background);
        g.pes.push(PeRecord {
            pe: self.core.me,
            background,
        });
        match self.core.tree_parent() {
            Some(parent) => {
                let up = SyncUp {
                    coll,
                    round,
                    objs: g.objs,
                    pes: g.pes,
                };
                let env = self.core.envelope(up, STEP_OPTS);
                self.core.post(parent, env);
            }
            None => self.decide(coll, round, g),
        }
    }
}

mod loads;
mod plan;

#[cfg(test)]
mod tests {
    use super::balances_at;

    #[test]
    fn the_first_sync_balances_then_every_period() {
        let at = |period| {
            (1..=30)
                .filter(|&s| balances_at(s, period))
                .collect::<Vec<_>>()
        };
        assert_eq!(at(10), vec![1, 11, 21]);
        assert_eq!(at(1), (1..=30).collect::<Vec<_>>());
        assert_eq!(at(0), (1..=30).collect::<Vec<_>>());
    }
}
