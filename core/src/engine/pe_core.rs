//! The part of a PE that handlers reach through `Ctx`: sending, routing to array
//! elements, creating, contributing, firing callbacks and exiting.

use crate::api::registry::Registry;
use crate::base::config::{ErrorPolicy, WorkMode};
use crate::base::error::RuntimeError;
use crate::base::hash::{HashMap, HashSet};
use crate::base::ids::{ChareId, CollectionId, IndexKey, Pe};
use crate::base::lazy::Lazy;
use crate::base::tree;
use crate::base::vec_map::VecMap;
use crate::engine::balance::Syncs;
use crate::engine::flow::{self, Flow};
use crate::engine::ledger::{Dropped, Ledger};
use crate::engine::location::Locations;
use crate::engine::quiescence::Quiescence;
use crate::engine::report::PeReport;
use crate::engine::scheduler::ReadyQueue;
use crate::engine::Origin;
use crate::machine::Port;
use crate::msg::array::{builtin_home, ArrayMap, ElemAddr, Shape};
use crate::msg::callback::Callback;
use crate::msg::envelope::SendOpts;
use crate::msg::envelope::{Dest, DestKey, Envelope, Kind};
use crate::msg::kind::bcast::{Bcast, NodeBcast};
use crate::msg::kind::create::{DoneInserting, Insert};
use crate::msg::kind::exit::Exit;
use crate::msg::kind::quiescence::QdRequest;
use crate::msg::payload::{Message, Payload};
use crate::msg::reduction::{RedData, Reducer};
use crate::msg::section_spec::SectionSpec;
use crate::trace::{ns, PeTrace};
use std::sync::Arc;
use std::time::Duration;

/// Where a fired callback's value goes.
enum Route {
    To(Pe, Dest),
    Broadcast(Dest),
    /// Every member of a nodegroup.
    Nodes(CollectionId),
    Element(CollectionId, ElemAddr),
    Section(Arc<SectionSpec>),
}

/// How a user message reached this PE: who sent it (the last hop), its sequence
/// number and priority, and how many times it was forwarded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Via {
    pub(crate) src: Pe,
    pub(crate) seq: u32,
    pub(crate) prio: i32,
    pub(crate) expedited: bool,
    pub(crate) hops: u8,
}

impl Via {
    /// The counted envelope of `kind` as it came, to wait here for an element on its
    /// way and run when it arrives.
    pub(crate) fn waiting(&self, kind: Kind) -> Envelope {
        Envelope {
            src: self.src,
            seq: self.seq,
            prio: self.prio,
            expedited: self.expedited,
            counted: true,
            kind,
        }
    }

    /// A user message from `from` that was forwarded `hops` times.
    pub(crate) fn new(from: Origin, hops: u8) -> Self {
        Via {
            src: from.src,
            seq: from.seq,
            prio: from.prio,
            expedited: from.expedited,
            hops,
        }
    }
}

/// Which chare is running, so `Ctx` calls know who is asking.
#[derive(Debug, Clone)]
pub(crate) enum Current {
    Main,
    Chare(ChareId),
    Group(CollectionId),
    Element(CollectionId, ElemAddr),
}

/// A contribution made during a handler, applied once the handler returns.
pub(crate) struct LocalContribution {
    pub(super) coll: CollectionId,
    pub(super) member: Option<IndexKey>,
    pub(super) key: u64,
    pub(super) reducer: Reducer,
    pub(super) callback: Callback,
    pub(super) value: RedData,
}

/// Static facts about an array every PE needs to route to its elements.
#[derive(Clone)]
pub(crate) struct ArrayMeta {
    /// Registry position of the element type.
    pub(crate) ty: u32,
    pub(super) shape: Arc<Shape>,
    pub(super) map: ArrayMap,
}

/// The part of a PE that handlers reach through `Ctx`.
pub(crate) struct PeCore {
    pub(super) me: Pe,
    pub(super) npes: usize,
    pub(super) arity: usize,
    /// PEs per node: node `n` is PEs `n * node_size ..`, its nodegroup member on the first.
    pub(super) node_size: usize,
    pub(super) seed: u64,
    pub(super) reg: Arc<Registry>,
    pub(super) port: Box<dyn Port>,
    pub(super) policy: ErrorPolicy,
    pub(super) work_mode: WorkMode,
    pub(super) queue: ReadyQueue<Envelope>,
    /// Quiescence detection's counts of counted messages.
    pub(super) ledger: Ledger,
    pub(super) current: Current,
    /// Singletons created here so far, by the PE each was placed on (boxed on first use).
    pub(super) next_chare_seq: Lazy<HashMap<Pe, u32>>,
    pub(super) next_coll_seq: u32,
    /// Array sections made here so far (`engine/section.rs`).
    pub(super) next_section_seq: u32,
    /// The arrays this PE has heard of (boxed on first use): a sorted vector, looked
    /// up on every send to an element, where hashing the id cost more than the
    /// search through the few arrays a PE knows.
    pub(super) arrays: Lazy<VecMap<CollectionId, ArrayMeta>>,
    /// What few jobs use: nodegroups, inserted elements (boxed on first use).
    pub(super) rare: Lazy<CoreRare>,
    pub(super) deferred: Vec<LocalContribution>,
    pub(super) qd: Lazy<Quiescence>,
    pub(super) exiting: bool,
    /// A handler declared compute since the layer last asked: messages that arrived
    /// meanwhile wait in the layer's inbox, unseen by the ready queue.
    pub(super) worked: bool,
    /// What it reports at the end, built when there is anything to say before.
    pub(super) report: Lazy<PeReport>,
    /// Sequence number of the last envelope made here.
    pub(super) next_seq: u32,
    /// This PE's recorder under `--trace`.
    pub(super) trace: Option<Box<PeTrace>>,
    /// Where migrated array elements are, as far as this PE knows.
    pub(super) loc: Locations,
    /// Moves asked for by the running handler, made once it returns.
    pub(super) moves: Vec<MoveRequest>,
    /// Elements that deleted themselves in the running handler, deleted once it returns.
    pub(super) destroys: Vec<(CollectionId, ElemAddr)>,
    /// True while an element's state is being serialized to leave this PE.
    pub(super) leaving: bool,
    /// Windows of messages unhandled at other PEs, credits owed, held messages.
    pub(super) flow: Lazy<Flow>,
    /// Elements in a balancing step.
    pub(super) syncs: Syncs,
    /// What this PE was restarted from (`--restart`), if it was.
    pub(super) resumed: Option<Box<crate::engine::Resumed>>,
    /// Async tasks and the asks they wait on (`engine/tasks.rs`).
    pub(super) tasks: Lazy<crate::engine::tasks::Tasks>,
}

/// The parts of a PE's state that only some jobs use, boxed together.
#[derive(Default)]
pub(crate) struct CoreRare {
    /// The nodegroups whose member lives here: one per nodegroup created, as the
    /// collections themselves, so it grows no faster than they do.
    pub(super) node_groups: HashSet<CollectionId>,
    /// The inserts this PE's recounts wait for (`engine/inserts.rs`).
    pub(super) inserts: crate::engine::inserts::InsertBook,
}

/// An element's request to move to PE `to`.
pub(crate) struct MoveRequest {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) to: Pe,
    /// Moved by a balancing step's plan, not by the element itself.
    pub(crate) balancing: bool,
}

/// What `Ctx` reads of its PE.
impl PeCore {
    /// This PE's index.
    pub(crate) fn me(&self) -> Pe {
        self.me
    }

    /// Number of PEs in the job.
    pub(crate) fn npes(&self) -> usize {
        self.npes
    }

    /// The node this PE belongs to.
    pub(crate) fn my_node(&self) -> usize {
        self.me as usize / self.node_size
    }

    /// PEs per node.
    pub(crate) fn node_size(&self) -> usize {
        self.node_size
    }

    /// Number of nodes in the job (the last may have fewer PEs than the others).
    pub(crate) fn num_nodes(&self) -> usize {
        self.npes.div_ceil(self.node_size)
    }

    /// The PE that holds node `node`'s nodegroup members: its first.
    pub(crate) fn node_pe(&self, node: usize) -> Pe {
        (node * self.node_size) as Pe
    }

    /// The job's `--seed`.
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// Seconds since the job started on the layer's clock.
    pub(crate) fn now(&self) -> f64 {
        self.port.now()
    }

    /// The job's registrations.
    pub(crate) fn reg(&self) -> &Registry {
        &self.reg
    }

    /// The job's `--on-error` policy.
    pub(crate) fn policy(&self) -> ErrorPolicy {
        self.policy
    }

    /// Which chare is running.
    pub(crate) fn current(&self) -> &Current {
        &self.current
    }

    /// This PE's recorder, when the job is traced.
    pub(crate) fn trace_mut(&mut self) -> Option<&mut PeTrace> {
        self.trace.as_deref_mut()
    }

    /// True when this PE is traced.
    pub(crate) fn traced(&self) -> bool {
        self.trace.is_some()
    }

    /// Record a value published under `key` in this PE's report.
    pub(crate) fn publish(&mut self, key: &str, bytes: Vec<u8>) {
        self.report.get_mut().outputs.push((key.to_string(), bytes));
    }
}

impl PeCore {
    /// The layer clock in trace nanoseconds, when this PE is traced.
    pub(crate) fn trace_now(&self) -> Option<u64> {
        self.trace.as_ref().map(|_| ns(self.port.now()))
    }

    /// When the entry about to start began, when this PE is traced (saves a clock
    /// read when the delivery already took the time).
    pub(crate) fn trace_entry_ts(&self) -> Option<u64> {
        let port = &self.port;
        self.trace.as_ref().map(|t| t.entry_ts(|| ns(port.now())))
    }

    /// Close the entry slices a handler left open (it returned, or panicked).
    pub(crate) fn trace_entries_end(&mut self) {
        if let Some(t) = self.trace.as_deref_mut() {
            if t.in_entry() {
                t.entries_end(ns(self.port.now()));
            }
        }
    }

    pub(super) fn envelope(&mut self, kind: impl Into<Kind>, opts: SendOpts) -> Envelope {
        self.next_seq = self.next_seq.wrapping_add(1);
        Envelope {
            src: self.me,
            seq: self.next_seq,
            prio: opts.prio,
            expedited: opts.expedited,
            counted: true,
            kind: kind.into(),
        }
    }

    /// Hand an envelope to PE `to`: the local queue, or the machine layer.
    pub(crate) fn post(&mut self, to: Pe, env: Envelope) {
        if to as usize >= self.npes {
            let err = RuntimeError::PeOutOfRange {
                from: self.me,
                to,
                num_pes: self.npes,
            };
            self.fail(err);
            return;
        }
        let weight = env.counted_weight();
        self.ledger.sent(weight);
        if let Some(t) = self.trace.as_deref_mut() {
            t.send(ns(self.port.now()), env.msg_id(), to, env.wire_bytes());
        }
        if to == self.me {
            if flow::windowed(&env) && self.flow.built_mut().is_some_and(Flow::holding) {
                self.flow.get_mut().hold(env);
                return;
            }
            let (prio, exp) = (env.prio, env.expedited);
            self.queue.push(env, prio, exp);
            return;
        }
        let windowed = flow::windowed(&env);
        if let Err(e) = self.port.send(to, env) {
            // Counted as sent above and never to arrive: dropped with a reason, so
            // processed, or quiescence would wait for it forever.
            self.ledger.dropped(weight, Dropped::OnWire);
            self.fail(e);
        } else if windowed {
            self.flow.get_mut().sent(to, weight);
        }
    }

    /// Record an error and apply the job's policy.
    pub(crate) fn fail(&mut self, err: RuntimeError) {
        match self.policy {
            ErrorPolicy::Drop => {
                tracing::warn!(pe = self.me, "dropped: {err}");
                self.report.get_mut().record_error(err);
            }
            ErrorPolicy::Abort => self.abort(err),
        }
    }

    /// Record an error and end the job, whatever its policy.
    pub(crate) fn abort(&mut self, err: RuntimeError) {
        tracing::error!(pe = self.me, "aborting job: {err}");
        let report = self.report.get_mut();
        report.record_error(err.clone());
        report.aborted = true;
        if !self.exiting {
            self.exit(Some(err));
        }
    }

    pub(crate) fn send_user(&mut self, to: Pe, dest: Dest, payload: Payload, opts: SendOpts) {
        let env = self.envelope(
            Kind::User {
                dest,
                payload,
                hops: 0,
            },
            opts,
        );
        self.post(to, env);
    }

    /// Send a typed message; when the previous envelope bound for the same PE goes to
    /// the same destination with the same priority, the message joins its run.
    #[inline]
    pub(crate) fn send_typed<M: Message>(
        &mut self,
        to: Pe,
        dest: impl DestKey,
        msg: M,
        opts: SendOpts,
    ) {
        let me = self.me;
        if opts.expedited || to as usize >= self.npes {
            return self.send_new_run(to, dest, msg, opts);
        }
        let tail = if to != me {
            self.port.held_tail(to)
        } else if self.flow.built_mut().is_some_and(Flow::holding) {
            // Held messages to itself must not slip into the queue inside a run.
            None
        } else {
            self.queue.tail_mut(opts.prio)
        };
        let msg = match tail {
            Some(env) => match env.append(me, &dest, opts.prio, msg) {
                Ok(()) => {
                    self.ledger.sent(1);
                    if to != me {
                        self.flow.get_mut().sent(to, 1);
                    }
                    return;
                }
                Err(msg) => msg,
            },
            None => msg,
        };
        self.send_new_run(to, dest, msg, opts);
    }

    /// Send a typed message in an envelope of its own. Out of line so that joining a
    /// run, the common case of a stream of sends, stays small enough to inline.
    #[inline(never)]
    pub(super) fn send_new_run<M: Message>(
        &mut self,
        to: Pe,
        dest: impl DestKey,
        msg: M,
        opts: SendOpts,
    ) {
        self.send_user(to, dest.into_dest(), Payload::new(msg), opts);
    }

    /// True when the running handler's run of messages should stop early: the job is
    /// ending or an expedited message is waiting.
    pub(crate) fn should_yield(&self) -> bool {
        self.exiting || self.queue.has_expedited() || !self.moves.is_empty()
    }

    pub(crate) fn broadcast(&mut self, dest: Dest, payload: Payload, opts: SendOpts) {
        let root = self.me;
        let env = self.envelope(
            Bcast {
                dest,
                root,
                payload,
            },
            opts,
        );
        self.post(self.me, env);
    }

    /// What this PE knows of array `coll`, if it has heard of it.
    pub(crate) fn array_meta(&self, coll: CollectionId) -> Option<&ArrayMeta> {
        self.arrays.get()?.get(&coll)
    }

    /// PE an array element's messages go to: its home by the map, or, if this PE has
    /// not yet heard of the array, the array's creator, which forwards.
    pub(crate) fn locate(
        &mut self,
        coll: CollectionId,
        addr: &ElemAddr,
    ) -> Result<Pe, RuntimeError> {
        let Some(meta) = self.array_meta(coll) else {
            return Ok(coll.creator);
        };
        match builtin_home(meta.map, &meta.shape, addr.order, self.npes) {
            Some(pe) => Ok(pe),
            None => match meta.map {
                ArrayMap::Custom(id) => self
                    .reg
                    .custom_map(id, &addr.key, self.npes)
                    .map_err(RuntimeError::Invalid)
                    .and_then(|pe| {
                        if (pe as usize) < self.npes {
                            Ok(pe)
                        } else {
                            Err(RuntimeError::MapOutOfRange {
                                map: id,
                                pe,
                                npes: self.npes,
                            })
                        }
                    }),
                _ => Err(RuntimeError::BlockMapNeedsDense { coll }),
            },
        }
    }

    pub(crate) fn send_to_element(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
        payload: Payload,
        opts: SendOpts,
    ) {
        if let Some((pe, dest)) = self.route_element(coll, addr) {
            self.send_user(pe, dest, payload, opts);
        }
    }

    /// Where to send an element's messages, and how to address them: to the latest
    /// location this PE has heard of if the element has migrated, else by the map.
    pub(crate) fn route_element(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
    ) -> Option<(Pe, Dest)> {
        if !self.loc.is_empty() {
            if let Some(l) = self.loc.get(coll, &addr.key) {
                return Some((l.pe, Dest::ElementAt(coll, addr, l.moves)));
            }
        }
        let pe = self.element_home(coll, &addr)?;
        Some((pe, Dest::Element(coll, addr)))
    }

    /// PE to send an element's messages to; a failed lookup goes to the error policy.
    pub(crate) fn element_home(&mut self, coll: CollectionId, addr: &ElemAddr) -> Option<Pe> {
        match self.locate(coll, addr) {
            Ok(pe) => Some(pe),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    pub(crate) fn insert_element(&mut self, coll: CollectionId, addr: ElemAddr, init: Payload) {
        match self.locate(coll, &addr) {
            Ok(pe) => {
                let kind = Insert {
                    coll,
                    addr,
                    init,
                    hops: 0,
                    round: self.next_round(coll),
                    origin: self.me,
                };
                self.post_after_step(coll, pe, kind.into(), SendOpts::expedited());
            }
            Err(e) => self.fail(e),
        }
    }

    pub(crate) fn done_inserting(&mut self, coll: CollectionId) {
        let root = self.me;
        let expect = Vec::new();
        let done = DoneInserting { coll, root, expect };
        // Expedited as a balancing step's records are, so the recount is not
        // overtaken by the syncs of the step its newcomers join.
        self.post_after_step(coll, self.me, done.into(), SendOpts::expedited());
    }

    /// Pass a `done_inserting` flood from `root` on to PE `to`, with the inserts
    /// expected below it.
    pub(super) fn send_done_inserting(
        &mut self,
        to: Pe,
        coll: CollectionId,
        root: Pe,
        expect: Vec<(Pe, u32)>,
    ) {
        let done = DoneInserting { coll, root, expect };
        let env = self.envelope(done, SendOpts::expedited());
        self.post(to, env);
    }

    pub(crate) fn new_chare_id(&mut self, pe: Pe) -> ChareId {
        let seq = self.next_chare_seq.get_mut().entry(pe).or_insert(0);
        let id = ChareId {
            pe,
            creator: self.me,
            seq: *seq,
        };
        *seq += 1;
        id
    }

    pub(crate) fn new_collection_id(&mut self) -> CollectionId {
        let id = CollectionId {
            creator: self.me,
            seq: self.next_coll_seq,
        };
        self.next_coll_seq += 1;
        id
    }

    pub(crate) fn create(&mut self, to: Pe, kind: impl Into<Kind>) {
        let env = self.envelope(kind, SendOpts::expedited());
        self.post(to, env);
    }

    pub(crate) fn register_array(
        &mut self,
        coll: CollectionId,
        ty: u32,
        shape: Arc<Shape>,
        map: ArrayMap,
    ) {
        self.arrays
            .get_mut()
            .insert(coll, ArrayMeta { ty, shape, map });
    }

    pub(crate) fn contribute(&mut self, value: RedData, reducer: Reducer, callback: Callback) {
        let (coll, member, key) = match &self.current {
            Current::Group(c) => (*c, None, u64::from(self.me)),
            Current::Element(c, addr) => (*c, Some(addr.key.clone()), addr.order),
            other => {
                let err = RuntimeError::ContributeOutside {
                    from: format!("{other:?}"),
                };
                self.fail(err);
                return;
            }
        };
        self.deferred.push(LocalContribution {
            coll,
            member,
            key,
            reducer,
            callback,
            value,
        });
    }

    /// Deliver `data` to a callback's target.
    pub(crate) fn fire(&mut self, cb: &Callback, data: RedData) {
        let (entry, route) = match cb {
            Callback::Ignore => return,
            Callback::Exit => return self.exit(None),
            Callback::Chare { id, entry } => {
                (*entry, Route::To(self.chare_pe(*id), Dest::Chare(*id)))
            }
            Callback::GroupMember { coll, pe, entry } => {
                (*entry, Route::To(*pe, Dest::Group(*coll)))
            }
            Callback::GroupAll { coll, entry } => (*entry, Route::Broadcast(Dest::Group(*coll))),
            Callback::NodeGroupMember { coll, node, entry } => {
                let Some(pe) = self.node_member_pe(*node as usize) else {
                    return;
                };
                (*entry, Route::To(pe, Dest::Group(*coll)))
            }
            Callback::NodeGroupAll { coll, entry } => (*entry, Route::Nodes(*coll)),
            Callback::ArrayElement { coll, addr, entry } => {
                (*entry, Route::Element(*coll, addr.clone()))
            }
            Callback::ArrayAll { coll, entry } => (*entry, Route::Broadcast(Dest::Array(*coll))),
            Callback::Section { section, entry } => {
                if let Err(what) = section.0.check(self.npes) {
                    let what = format!("a callback to a section: {what}");
                    return self.fail(RuntimeError::BadInput { pe: self.me, what });
                }
                (*entry, Route::Section(section.0.clone()))
            }
        };
        let Some(info) = self.reg.entries.get(entry as usize) else {
            return self.fail(RuntimeError::UnregisteredEntry { entry });
        };
        let payload = match (info.build)(data) {
            Ok(p) => p,
            Err(what) => {
                let err = RuntimeError::CallbackType {
                    entry: info.name.clone(),
                    what,
                };
                return self.fail(err);
            }
        };
        let opts = SendOpts::default();
        match route {
            Route::To(pe, dest) => self.send_user(pe, dest, payload, opts),
            Route::Broadcast(dest) => self.broadcast(dest, payload, opts),
            Route::Nodes(coll) => self.node_broadcast(coll, payload, opts),
            Route::Element(coll, addr) => self.send_to_element(coll, addr, payload, opts),
            Route::Section(spec) => self.section_cast(spec, payload, opts),
        }
    }

    /// Send to every member of nodegroup `coll` once, down the tree over nodes rooted
    /// at this PE's node.
    pub(crate) fn node_broadcast(&mut self, coll: CollectionId, payload: Payload, opts: SendOpts) {
        let root = self.node_pe(self.my_node());
        let env = self.envelope(
            NodeBcast {
                coll,
                root,
                payload,
            },
            opts,
        );
        self.post(root, env);
    }

    /// The PE of node `node`'s nodegroup members, or None (reported) for a node
    /// outside the job.
    pub(crate) fn node_member_pe(&mut self, node: usize) -> Option<Pe> {
        if node < self.num_nodes() {
            return Some(self.node_pe(node));
        }
        let what = format!(
            "a message for the nodegroup member of node {node}, but the job has {} nodes (0..{}); dropped",
            self.num_nodes(),
            self.num_nodes()
        );
        self.fail(RuntimeError::BadInput { pe: self.me, what });
        None
    }

    /// True if `coll` is a nodegroup with its member here.
    pub(crate) fn is_node_group(&self, coll: CollectionId) -> bool {
        self.rare
            .get()
            .is_some_and(|r| r.node_groups.contains(&coll))
    }

    /// End the job: broadcast an exit down the tree rooted here and down PE 0's.
    pub(crate) fn exit(&mut self, error: Option<RuntimeError>) {
        if self.me != 0 {
            // PE 0 always hears, so the broadcast over PE 0's tree (see `engine/exit.rs`)
            // always starts.
            let kind = Exit {
                root: self.me,
                error: error.clone(),
            };
            self.uncounted(0, kind);
        }
        let root = self.me;
        self.uncounted(root, Exit { root, error });
    }

    /// Counted like any message, so a request still in flight keeps the job from
    /// looking quiescent: every request made before quiescence fires at its detection.
    pub(crate) fn request_quiescence(&mut self, callback: Callback) {
        let env = self.envelope(QdRequest { callback }, SendOpts::expedited());
        self.post(0, env);
    }

    pub(crate) fn work(&mut self, d: Duration) {
        self.worked = true;
        // What the handler sent so far leaves before the compute, as an MPI_Isend
        // posted before computing would.
        self.port.flush();
        self.port.work(d, self.work_mode);
    }

    pub(crate) fn on_pe_failure(&mut self, callback: Callback) {
        self.port.subscribe_failures(self.me, callback);
    }

    /// Send a control message quiescence detection does not count.
    pub(super) fn uncounted(&mut self, to: Pe, kind: impl Into<Kind>) {
        let mut env = self.envelope(kind, SendOpts::expedited());
        env.counted = false;
        self.post(to, env);
    }

    pub(super) fn tree_parent(&self) -> Option<Pe> {
        tree::parent(self.me, 0, self.npes, self.arity)
    }

    pub(super) fn tree_children(&self) -> impl Iterator<Item = Pe> {
        tree::children(self.me, 0, self.npes, self.arity)
    }

    /// The first PE of this node's parent in the tree over nodes rooted at `root`
    /// (a node), which nodegroup creations, broadcasts and reductions follow.
    pub(super) fn node_parent(&self, root: usize) -> Option<Pe> {
        let n = self.num_nodes();
        tree::parent(self.my_node() as Pe, root as Pe, n, self.arity)
            .map(|p| self.node_pe(p as usize))
    }

    /// The first PEs of this node's children in the tree over nodes rooted at `root`.
    pub(super) fn node_children(&self, root: usize) -> Vec<Pe> {
        let n = self.num_nodes();
        tree::children(self.my_node() as Pe, root as Pe, n, self.arity)
            .map(|c| self.node_pe(c as usize))
            .collect()
    }
}
