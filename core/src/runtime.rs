//! One PE's runtime: its chares and collections, the dispatch of envelopes, and the
//! state every machine layer shares. A layer only moves envelopes between PEs and
//! tells this code when its PE is idle.

use crate::announced::Announced;
use crate::array::{builtin_home, ArrayMap, ElemAddr, Shape};
use crate::callback::Callback;
use crate::chare::AnyChare;
use crate::config::{ErrorPolicy, WorkMode};
use crate::ctx::Ctx;
use crate::error::RuntimeError;
use crate::fixed_hash::HashMap;
use crate::ids::{ChareId, CollectionId, IndexKey, Pe};
use crate::location::{Loc, Locations};
use crate::machine::Transport;
use crate::message::{Message, Payload};
use crate::migration::MigrateError;
use crate::proxy::SendOpts;
use crate::quiescence::Quiescence;
use crate::reduction::{self, Partial, RedData, Reducer};
use crate::registry::Registry;
use crate::report::PeReport;
use crate::scheduler::ReadyQueue;
use crate::trace::{ns, PeTrace};
use crate::tree;
use serde::{Deserialize, Serialize};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

mod migration;

/// What a user message is addressed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Dest {
    Chare(ChareId),
    Group(CollectionId),
    Array(CollectionId),
    /// An element, wherever the array's map puts it.
    Element(CollectionId, ElemAddr),
    /// An element that has migrated, sent on news that it reached the receiving PE on
    /// its n-th move (see `location.rs`).
    ElementAt(CollectionId, ElemAddr, u32),
}

/// A destination as a send names it: compared with a queued envelope's on every send,
/// and made into a `Dest` only when the message needs an envelope of its own. Chares
/// and groups, the common streams, name theirs by id, without building, comparing
/// and dropping a whole `Dest` per message.
pub(crate) trait DestKey {
    /// True if `dest` is this destination.
    fn is(&self, dest: &Dest) -> bool;
    /// The destination, for an envelope.
    fn into_dest(self) -> Dest;
}

impl DestKey for ChareId {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Chare(id) if id == self)
    }
    fn into_dest(self) -> Dest {
        Dest::Chare(self)
    }
}

/// The member of a group on the PE a message is sent to.
pub(crate) struct GroupMember(pub(crate) CollectionId);

impl DestKey for GroupMember {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Group(c) if *c == self.0)
    }
    fn into_dest(self) -> Dest {
        Dest::Group(self.0)
    }
}

impl DestKey for Dest {
    #[inline]
    fn is(&self, dest: &Dest) -> bool {
        self == dest
    }
    fn into_dest(self) -> Dest {
        self
    }
}

impl Dest {
    fn coll(&self) -> Option<CollectionId> {
        match self {
            Dest::Chare(_) => None,
            Dest::Group(c) | Dest::Array(c) | Dest::Element(c, _) | Dest::ElementAt(c, _, _) => {
                Some(*c)
            }
        }
    }
}

/// The body of an envelope. On a wire its payload travels after it, raw (see
/// `wire.rs`), so payload fields encode as nothing here.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// A message for one chare, group member or array element on the receiving PE.
    User {
        dest: Dest,
        #[serde(with = "crate::wire::payload_slot")]
        payload: Payload,
        hops: u8,
    },
    /// A broadcast to a group or array, forwarded down the tree rooted at `root`.
    Bcast {
        dest: Dest,
        root: Pe,
        #[serde(with = "crate::wire::payload_slot")]
        payload: Payload,
    },
    CreateChare {
        id: ChareId,
        ty: u32,
        #[serde(with = "crate::wire::payload_slot")]
        init: Payload,
    },
    CreateGroup {
        coll: CollectionId,
        ty: u32,
        root: Pe,
        #[serde(with = "crate::wire::payload_slot")]
        init: Payload,
    },
    CreateArray {
        coll: CollectionId,
        ty: u32,
        root: Pe,
        #[serde(with = "crate::wire::payload_slot")]
        init: Payload,
        shape: Arc<Shape>,
        map: ArrayMap,
    },
    Insert {
        coll: CollectionId,
        addr: ElemAddr,
        #[serde(with = "crate::wire::payload_slot")]
        init: Payload,
        /// Times the insert was forwarded towards the element's home.
        hops: u8,
    },
    DoneInserting {
        coll: CollectionId,
        root: Pe,
    },
    /// A child's count of array elements in its subtree.
    Census {
        coll: CollectionId,
        epoch: u32,
        count: u64,
    },
    /// A child's combined contributions to reduction `seq`.
    Contribute {
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        /// Boxed: the largest fields of any kind, on a rare message, would otherwise
        /// make every envelope bigger.
        body: Box<(Callback, Partial)>,
    },
    QdRequest {
        callback: Callback,
    },
    QdWave {
        wave: u64,
    },
    QdReply {
        wave: u64,
        sent: u64,
        processed: u64,
    },
    /// Sent down the tree at quiescence: report messages still waiting for a creation.
    Orphans {
        root: Pe,
    },
    Exit {
        root: Pe,
        #[serde(with = "crate::wire::error_text")]
        error: Option<RuntimeError>,
    },
    /// The machine layer's notice that PE `pe` failed, for a subscriber's callback.
    PeFailed {
        pe: Pe,
        callback: Callback,
    },
    /// An array element moving here: its state, its move count and reduction progress.
    Migrate {
        coll: CollectionId,
        addr: ElemAddr,
        home: Pe,
        moves: u32,
        contributed: u64,
        #[serde(with = "crate::wire::payload_slot")]
        state: Payload,
    },
    /// News that an element reached PE `pe` on its `moves`-th move.
    Moved {
        coll: CollectionId,
        addr: ElemAddr,
        home: Pe,
        pe: Pe,
        moves: u32,
    },
    /// A contribution of an element away from its home, which counts it there.
    HomeContribute {
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        body: Box<(Callback, Partial)>,
    },
}

/// A message between PEs.
#[derive(Debug)]
pub struct Envelope {
    pub(crate) src: Pe,
    /// The sender's sequence number: with `src`, names the message (trace arrows).
    pub(crate) seq: u32,
    pub(crate) prio: i32,
    pub(crate) expedited: bool,
    /// Counted by quiescence detection (everything but the detector's own messages).
    pub(crate) counted: bool,
    pub(crate) kind: Kind,
}

/// Bytes every envelope takes on a wire before its body (the sim layer's network
/// model charges them too).
pub(crate) const WIRE_HEADER_BYTES: u64 = crate::wire::HEADER_BYTES as u64;

impl Kind {
    /// The trace name of a runtime-internal message's handler; `None` for user
    /// messages and creations, whose chare entry or constructor is traced instead.
    fn runtime_entry(&self) -> Option<&'static str> {
        Some(match self {
            Kind::User { .. }
            | Kind::Bcast { .. }
            | Kind::CreateChare { .. }
            | Kind::CreateGroup { .. }
            | Kind::CreateArray { .. }
            | Kind::Insert { .. } => return None,
            Kind::DoneInserting { .. } | Kind::Census { .. } => "chorus::census",
            Kind::Contribute { .. } | Kind::HomeContribute { .. } => "chorus::reduction",
            Kind::Migrate { .. } => "chorus::migrate",
            Kind::Moved { .. } => "chorus::location",
            Kind::QdRequest { .. } | Kind::QdWave { .. } | Kind::QdReply { .. } => {
                "chorus::quiescence"
            }
            Kind::Orphans { .. } => "chorus::orphans",
            Kind::Exit { .. } => "chorus::exit",
            Kind::PeFailed { .. } => "chorus::pe_failed",
        })
    }
}

impl Envelope {
    /// A job-wide name for this message: its sender and the sender's sequence number.
    pub(crate) fn msg_id(&self) -> u64 {
        u64::from(self.src) << 32 | u64::from(self.seq)
    }

    /// Bytes this envelope would take on a wire: the header, the address and the body.
    pub(crate) fn wire_bytes(&self) -> u64 {
        let dest_bytes = |d: &Dest| match d {
            Dest::Chare(_) => 12,
            Dest::Group(_) | Dest::Array(_) => 8,
            Dest::Element(_, addr) => 16 + addr.key.0.len() as u64,
            Dest::ElementAt(_, addr, _) => 20 + addr.key.0.len() as u64,
        };
        let body = match &self.kind {
            Kind::User { dest, payload, .. } | Kind::Bcast { dest, payload, .. } => {
                dest_bytes(dest) + payload.wire_len()
            }
            Kind::CreateChare { init, .. } | Kind::CreateGroup { init, .. } => 16 + init.wire_len(),
            Kind::CreateArray { init, shape, .. } => {
                24 + init.wire_len() + bincode::serialized_size(&**shape).unwrap_or(0)
            }
            Kind::Insert { addr, init, .. } => 16 + addr.key.0.len() as u64 + init.wire_len(),
            Kind::Migrate { addr, state, .. } => 36 + addr.key.0.len() as u64 + state.wire_len(),
            Kind::Moved { addr, .. } => 32 + addr.key.0.len() as u64,
            Kind::Contribute { body, .. } | Kind::HomeContribute { body, .. } => {
                24 + bincode::serialized_size(&body.0).unwrap_or(0)
                    + bincode::serialized_size(&body.1).unwrap_or(0)
            }
            Kind::QdReply { .. } => 24,
            Kind::PeFailed { callback, .. } => 4 + bincode::serialized_size(callback).unwrap_or(0),
            _ => 16,
        };
        WIRE_HEADER_BYTES + body
    }

    /// Messages this envelope stands for in quiescence counting.
    pub(crate) fn weight(&self) -> u64 {
        match &self.kind {
            Kind::User { payload, .. } => payload.count() as u64,
            _ => 1,
        }
    }

    /// Append `msg` to this envelope's run if it goes from `src` to `dest` with the
    /// same priority; give it back otherwise.
    #[inline]
    fn append<M: Message>(
        &mut self,
        src: Pe,
        dest: &impl DestKey,
        prio: i32,
        msg: M,
    ) -> Result<(), M> {
        if self.src != src || self.prio != prio || self.expedited || !self.counted {
            return Err(msg);
        }
        match &mut self.kind {
            Kind::User {
                dest: d,
                payload,
                hops: 0,
            } if dest.is(d) => payload.absorb(msg),
            _ => Err(msg),
        }
    }
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

/// Which chare is running, so `Ctx` calls know who is asking.
#[derive(Debug, Clone)]
pub(crate) enum Current {
    Main,
    Chare(ChareId),
    Group(CollectionId),
    Element(CollectionId, ElemAddr),
}

/// A contribution made during a handler, applied once the handler returns.
struct LocalContribution {
    coll: CollectionId,
    member: Option<IndexKey>,
    key: u64,
    reducer: Reducer,
    callback: Callback,
    value: RedData,
}

/// Static facts about an array every PE needs to route to its elements.
#[derive(Clone)]
pub(crate) struct ArrayMeta {
    /// Registry position of the element type.
    pub(crate) ty: u32,
    shape: Arc<Shape>,
    map: ArrayMap,
}

/// The part of a PE that handlers reach through `Ctx`.
pub(crate) struct PeCore {
    pub(crate) me: Pe,
    pub(crate) npes: usize,
    pub(crate) arity: usize,
    pub(crate) seed: u64,
    pub(crate) reg: Arc<Registry>,
    pub(crate) net: Box<dyn Transport>,
    pub(crate) policy: ErrorPolicy,
    pub(crate) work_mode: WorkMode,
    pub(crate) queue: ReadyQueue<Envelope>,
    pub(crate) sent: u64,
    pub(crate) processed: u64,
    pub(crate) current: Current,
    next_chare_seq: HashMap<Pe, u32>,
    next_coll_seq: u32,
    pub(crate) arrays: HashMap<CollectionId, ArrayMeta>,
    deferred: Vec<LocalContribution>,
    pub(crate) qd: Quiescence,
    pub(crate) exiting: bool,
    /// A handler declared compute since the layer last asked: messages that arrived
    /// meanwhile wait in the layer's inbox, unseen by the ready queue.
    worked: bool,
    pub(crate) report: PeReport,
    /// Sequence number of the last envelope made here.
    next_seq: u32,
    /// This PE's recorder under `--trace`.
    pub(crate) trace: Option<Box<PeTrace>>,
    /// Where migrated array elements are, as far as this PE knows.
    pub(crate) loc: Locations,
    /// Moves asked for by the running handler, made once it returns.
    pub(crate) moves: Vec<MoveRequest>,
    /// True while an element's state is being serialized to leave this PE.
    pub(crate) leaving: bool,
}

/// An element's request to move to PE `to`.
pub(crate) struct MoveRequest {
    pub(crate) coll: CollectionId,
    pub(crate) addr: ElemAddr,
    pub(crate) to: Pe,
}

impl PeCore {
    /// The layer clock in trace nanoseconds, when this PE is traced.
    pub(crate) fn trace_now(&self) -> Option<u64> {
        self.trace.as_ref().map(|_| ns(self.net.now()))
    }

    /// When the entry about to start began, when this PE is traced (saves a clock
    /// read when the delivery already took the time).
    pub(crate) fn trace_entry_ts(&self) -> Option<u64> {
        let net = &self.net;
        self.trace.as_ref().map(|t| t.entry_ts(|| ns(net.now())))
    }

    /// Close the entry slices a handler left open (it returned, or panicked).
    pub(crate) fn trace_entries_end(&mut self) {
        if let Some(t) = self.trace.as_deref_mut() {
            if t.in_entry() {
                t.entries_end(ns(self.net.now()));
            }
        }
    }

    fn envelope(&mut self, kind: Kind, opts: SendOpts) -> Envelope {
        self.next_seq = self.next_seq.wrapping_add(1);
        Envelope {
            src: self.me,
            seq: self.next_seq,
            prio: opts.prio,
            expedited: opts.expedited,
            counted: true,
            kind,
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
        if env.counted {
            self.sent += env.weight();
        }
        if let Some(t) = self.trace.as_deref_mut() {
            t.send(ns(self.net.now()), env.msg_id(), to, env.wire_bytes());
        }
        if to == self.me {
            let (prio, exp) = (env.prio, env.expedited);
            self.queue.push(env, prio, exp);
        } else if let Err(e) = self.net.send(to, env) {
            self.fail(e);
        }
    }

    /// Record an error and apply the job's policy.
    pub(crate) fn fail(&mut self, err: RuntimeError) {
        match self.policy {
            ErrorPolicy::Drop => {
                tracing::warn!(pe = self.me, "dropped: {err}");
                self.report.errors.push(err);
            }
            ErrorPolicy::Abort => {
                tracing::error!(pe = self.me, "aborting job: {err}");
                self.report.errors.push(err.clone());
                self.report.aborted = true;
                if !self.exiting {
                    self.exit(Some(err));
                }
            }
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
        let tail = if to == me {
            self.queue.tail_mut(opts.prio)
        } else {
            self.net.held_tail(to)
        };
        let msg = match tail {
            Some(env) => match env.append(me, &dest, opts.prio, msg) {
                Ok(()) => {
                    self.sent += 1;
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
    fn send_new_run<M: Message>(&mut self, to: Pe, dest: impl DestKey, msg: M, opts: SendOpts) {
        self.send_user(to, dest.into_dest(), Payload::new(msg), opts);
    }

    /// True when the running handler's run of messages should stop early: the job is
    /// ending or an expedited message is waiting.
    pub(crate) fn should_yield(&self) -> bool {
        self.exiting || self.queue.has_expedited() || !self.moves.is_empty()
    }

    pub(crate) fn broadcast(&mut self, dest: Dest, payload: Payload, opts: SendOpts) {
        let env = self.envelope(
            Kind::Bcast {
                dest,
                root: self.me,
                payload,
            },
            opts,
        );
        self.post(self.me, env);
    }

    /// PE an array element's messages go to: its home by the map, or, if this PE has
    /// not yet heard of the array, the array's creator, which forwards.
    pub(crate) fn locate(
        &mut self,
        coll: CollectionId,
        addr: &ElemAddr,
    ) -> Result<Pe, RuntimeError> {
        let Some(meta) = self.arrays.get(&coll) else {
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
                            Err(RuntimeError::Invalid(format!(
                                "array map {id} placed an element on PE {pe}, but the job has {} PEs",
                                self.npes
                            )))
                        }
                    }),
                _ => Err(RuntimeError::Invalid(format!(
                    "{coll}: the block map needs a dense (1-D or 2-D) array; use RoundRobin or a custom map"
                ))),
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
                let kind = Kind::Insert {
                    coll,
                    addr,
                    init,
                    hops: 0,
                };
                let env = self.envelope(kind, SendOpts::expedited());
                self.post(pe, env);
            }
            Err(e) => self.fail(e),
        }
    }

    pub(crate) fn done_inserting(&mut self, coll: CollectionId) {
        let env = self.envelope(
            Kind::DoneInserting {
                coll,
                root: self.me,
            },
            SendOpts::default(),
        );
        self.post(self.me, env);
    }

    pub(crate) fn new_chare_id(&mut self, pe: Pe) -> ChareId {
        let seq = self.next_chare_seq.entry(pe).or_insert(0);
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

    pub(crate) fn create(&mut self, to: Pe, kind: Kind) {
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
        self.arrays.insert(coll, ArrayMeta { ty, shape, map });
    }

    pub(crate) fn contribute(&mut self, value: RedData, reducer: Reducer, callback: Callback) {
        let (coll, member, key) = match &self.current {
            Current::Group(c) => (*c, None, u64::from(self.me)),
            Current::Element(c, addr) => (*c, Some(addr.key.clone()), addr.order),
            other => {
                let err = RuntimeError::Invalid(format!(
                    "contribute() called from {other:?}: only group members and array elements contribute"
                ));
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
        let (entry, dest, to) = match cb {
            Callback::Ignore => return,
            Callback::Exit => return self.exit(None),
            Callback::Chare { id, entry } => (*entry, Dest::Chare(*id), Some(id.pe)),
            Callback::GroupMember { coll, pe, entry } => (*entry, Dest::Group(*coll), Some(*pe)),
            Callback::GroupAll { coll, entry } => (*entry, Dest::Group(*coll), None),
            Callback::ArrayElement { coll, addr, entry } => {
                (*entry, Dest::Element(*coll, addr.clone()), None)
            }
            Callback::ArrayAll { coll, entry } => (*entry, Dest::Array(*coll), None),
        };
        let Some(info) = self.reg.entries.get(entry as usize) else {
            return self.fail(RuntimeError::Invalid(format!(
                "callback entry {entry} is not registered"
            )));
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
        match (dest, to) {
            (Dest::Element(coll, addr), _) => self.send_to_element(coll, addr, payload, opts),
            (dest @ (Dest::Array(_) | Dest::Group(_)), None) => self.broadcast(dest, payload, opts),
            (dest, Some(pe)) => self.send_user(pe, dest, payload, opts),
            (dest, None) => self.fail(RuntimeError::Invalid(format!(
                "callback to {dest:?} has no PE"
            ))),
        }
    }

    /// End the job: broadcast an exit down the tree rooted here and down PE 0's.
    pub(crate) fn exit(&mut self, error: Option<RuntimeError>) {
        if self.me != 0 {
            // PE 0 always hears, so the broadcast over PE 0's tree (see `Kind::Exit`)
            // always starts.
            let kind = Kind::Exit {
                root: self.me,
                error: error.clone(),
            };
            self.uncounted(0, kind);
        }
        let mut env = self.envelope(
            Kind::Exit {
                root: self.me,
                error,
            },
            SendOpts::expedited(),
        );
        env.counted = false;
        self.post(self.me, env);
    }

    /// Counted like any message, so a request still in flight keeps the job from
    /// looking quiescent: every request made before quiescence fires at its detection.
    pub(crate) fn request_quiescence(&mut self, callback: Callback) {
        let env = self.envelope(Kind::QdRequest { callback }, SendOpts::expedited());
        self.post(0, env);
    }

    pub(crate) fn work(&mut self, d: Duration) {
        self.worked = true;
        // What the handler sent so far leaves before the compute, as an MPI_Isend
        // posted before computing would.
        self.net.flush();
        self.net.work(d, self.work_mode);
    }

    pub(crate) fn on_pe_failure(&mut self, callback: Callback) {
        self.net.subscribe_failures(self.me, callback);
    }

    fn uncounted(&mut self, to: Pe, kind: Kind) {
        let mut env = self.envelope(kind, SendOpts::expedited());
        env.counted = false;
        self.post(to, env);
    }

    fn tree_parent(&self) -> Option<Pe> {
        tree::parent(self.me, 0, self.npes, self.arity)
    }

    fn tree_children(&self) -> impl Iterator<Item = Pe> {
        tree::children(self.me, 0, self.npes, self.arity)
    }
}

/// Per-collection reduction progress on this PE.
struct PendingReduction {
    reducer: Reducer,
    callback: Callback,
    partial: Option<Partial>,
    local: u64,
    children: usize,
}

/// Who takes part in a collection's reductions below this PE.
#[derive(Default)]
struct Census {
    epoch: u32,
    /// Local members counted for this epoch.
    local: u64,
    /// Children with members in their subtree; valid once `done`.
    active_children: Vec<Pe>,
    done: bool,
    /// Children's subtree counts by epoch (a child may report before we advance).
    reports: HashMap<u32, Vec<(Pe, u64)>>,
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
}

enum Members {
    Group {
        member: Box<dyn AnyChare>,
        contributed: u64,
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

/// Reductions in progress on this PE, by sequence number. Rarely more than a few, so
/// a sorted vector, freed when empty: idle PEs (10^5 and more on the sim layer) keep
/// no memory for them.
#[derive(Default)]
struct Pending(Vec<(u64, PendingReduction)>);

impl Pending {
    fn seqs(&self) -> Vec<u64> {
        self.0.iter().map(|(s, _)| *s).collect()
    }

    fn get(&self, seq: u64) -> Option<&PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        Some(&self.0[i].1)
    }

    fn get_mut(&mut self, seq: u64) -> Option<&mut PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        Some(&mut self.0[i].1)
    }

    fn get_or_insert_with(
        &mut self,
        seq: u64,
        make: impl FnOnce() -> PendingReduction,
    ) -> &mut PendingReduction {
        let i = match self.0.binary_search_by_key(&seq, |(s, _)| *s) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (seq, make()));
                i
            }
        };
        &mut self.0[i].1
    }

    fn remove(&mut self, seq: u64) -> Option<PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        let (_, p) = self.0.remove(i);
        if self.0.is_empty() {
            self.0 = Vec::new();
        }
        Some(p)
    }
}

/// One PE: the core handlers see, plus the chares and collections living here.
pub(crate) struct PeRuntime {
    pub(crate) core: PeCore,
    /// Singleton chares living here, in creation order.
    chare_slab: Vec<Box<dyn AnyChare>>,
    chare_slot: HashMap<ChareId, usize>,
    /// The last chare looked up: runs of messages to one chare skip the hash.
    last_chare: Option<(ChareId, usize)>,
    chares_announced: Announced,
    waiting_for_chare: HashMap<ChareId, Vec<Envelope>>,
    /// Boxed so the table of an idle PE stays small.
    colls: HashMap<CollectionId, Box<Collection>>,
    colls_announced: Announced,
    waiting_for_coll: HashMap<CollectionId, Vec<Envelope>>,
}

/// Settings a PE is built from.
pub(crate) struct PeSetup {
    pub(crate) me: Pe,
    pub(crate) npes: usize,
    pub(crate) arity: usize,
    pub(crate) seed: u64,
    pub(crate) policy: ErrorPolicy,
    pub(crate) work_mode: WorkMode,
    /// This PE's recorder when the job is traced.
    pub(crate) trace: Option<Box<PeTrace>>,
}

impl PeRuntime {
    pub(crate) fn new(setup: PeSetup, reg: Arc<Registry>, net: Box<dyn Transport>) -> Self {
        PeRuntime {
            core: PeCore {
                me: setup.me,
                npes: setup.npes,
                arity: setup.arity,
                seed: setup.seed,
                reg,
                net,
                policy: setup.policy,
                work_mode: setup.work_mode,
                queue: ReadyQueue::default(),
                sent: 0,
                processed: 0,
                current: Current::Main,
                next_chare_seq: HashMap::default(),
                next_coll_seq: 0,
                arrays: HashMap::default(),
                deferred: Vec::new(),
                qd: Quiescence::default(),
                exiting: false,
                worked: false,
                report: PeReport::new(setup.me),
                next_seq: 0,
                trace: setup.trace,
                loc: Locations::default(),
                moves: Vec::new(),
                leaving: false,
            },
            chare_slab: Vec::new(),
            chare_slot: HashMap::default(),
            last_chare: None,
            chares_announced: Announced::default(),
            waiting_for_chare: HashMap::default(),
            colls: HashMap::default(),
            colls_announced: Announced::default(),
            waiting_for_coll: HashMap::default(),
        }
    }

    /// Run the program's main function on this PE (PE 0 of the job).
    pub(crate) fn run_main(&mut self, main: Box<dyn FnOnce(&mut Ctx) + Send>) {
        let core = &mut self.core;
        core.current = Current::Main;
        if let Some(t) = core.trace.as_deref_mut() {
            t.runtime_begin(ns(core.net.now()), "chorus::main");
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
        self.apply_deferred();
        self.apply_moves();
        self.core.net.flush();
    }

    /// Accept an envelope that arrived from another PE.
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
        self.core.net.flush();
    }

    /// Give back the queue's memory if it is empty (many idle simulated PEs).
    pub(crate) fn release_idle_memory(&mut self) {
        self.core.queue.release_if_empty();
    }

    /// Messages waiting in this PE's queue.
    pub(crate) fn queued(&self) -> usize {
        self.core.queue.len()
    }

    /// Drop every queued message (the PE failed); returns how many messages they held.
    pub(crate) fn discard_queue(&mut self) -> u64 {
        let mut n = 0;
        while let Some(env) = self.core.queue.pop() {
            n += env.weight();
        }
        n
    }

    /// Queue the machine layer's notice that `pe` failed for `callback`. It is counted
    /// as a message sent here so quiescence detection waits for it.
    pub(crate) fn notify_failure(&mut self, pe: Pe, callback: Callback) {
        let env = self
            .core
            .envelope(Kind::PeFailed { pe, callback }, SendOpts::expedited());
        self.core.post(self.core.me, env);
    }

    /// Called by the layer when this PE has nothing queued. Loops because a finished
    /// wave may start the next one, which this idle PE can answer at once.
    pub(crate) fn on_idle(&mut self) {
        while self.core.queue.is_empty() && !self.core.exiting {
            let snapshot = (self.core.sent, self.core.processed);
            let parent = self.core.tree_parent();
            let out = self.core.qd.on_idle(snapshot, parent.is_none());
            if out == crate::quiescence::Outcome::Nothing {
                break;
            }
            self.qd_outcome(out, parent);
        }
        self.core.net.flush();
    }

    /// Mark the start of an idle period in the trace (it ends when a message runs).
    pub(crate) fn trace_idle(&mut self) {
        if let Some(t) = self.core.trace.as_deref_mut() {
            t.idle_begin(ns(self.core.net.now()));
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

    fn process(&mut self, env: Envelope) {
        if env.counted {
            self.core.processed += env.weight();
        }
        if let Some(t) = self.core.trace.as_deref_mut() {
            let ts = ns(self.core.net.now());
            t.idle_end(ts);
            t.incoming(ts, env.src, env.msg_id(), env.wire_bytes());
            if let Some(what) = env.kind.runtime_entry() {
                t.runtime_begin(ts, what);
            }
        }
        if self.target_missing(&env) {
            return self.wait_or_fail(env);
        }
        let src = env.src;
        match env.kind {
            Kind::User {
                dest,
                payload,
                hops,
            } => {
                let via = Via {
                    src,
                    seq: env.seq,
                    prio: env.prio,
                    expedited: env.expedited,
                    hops,
                };
                self.deliver(dest, payload, via)
            }
            Kind::Bcast {
                dest,
                root,
                payload,
            } => {
                let opts = SendOpts {
                    prio: env.prio,
                    expedited: env.expedited,
                };
                self.deliver_broadcast(dest, root, payload, opts)
            }
            Kind::CreateChare { id, ty, init } => self.create_chare(id, ty, init),
            Kind::CreateGroup {
                coll,
                ty,
                root,
                init,
            } => self.create_group(coll, ty, root, init),
            Kind::CreateArray {
                coll,
                ty,
                root,
                init,
                shape,
                map,
            } => self.create_array(coll, ty, root, init, shape, map),
            Kind::Insert {
                coll,
                addr,
                init,
                hops,
            } => self.insert(coll, addr, init, hops),
            Kind::DoneInserting { coll, root } => self.recount(coll, root),
            Kind::Census { coll, epoch, count } => {
                if let Some(c) = self.colls.get_mut(&coll) {
                    c.census
                        .reports
                        .entry(epoch)
                        .or_default()
                        .push((src, count));
                    self.advance_census(coll);
                }
            }
            Kind::Contribute {
                coll,
                seq,
                reducer,
                body,
            } => {
                let (callback, partial) = *body;
                self.add_partial(coll, seq, reducer, callback, partial, false)
            }
            Kind::QdRequest { callback } => {
                let start = self.core.qd.request(callback);
                if start {
                    self.start_wave();
                }
            }
            Kind::QdWave { wave } => {
                let children: Vec<Pe> = self.core.tree_children().collect();
                for &c in &children {
                    self.core.uncounted(c, Kind::QdWave { wave });
                }
                self.core.qd.join_wave(wave, children.len());
            }
            Kind::QdReply {
                wave,
                sent,
                processed,
            } => {
                let parent = self.core.tree_parent();
                let out = self
                    .core
                    .qd
                    .child_reply(wave, sent, processed, parent.is_none());
                self.qd_outcome(out, parent);
            }
            Kind::Orphans { root } => self.report_orphans(root),
            Kind::Exit { root, error } => {
                let (me, n, k) = (self.core.me, self.core.npes, self.core.arity);
                // A PE stops at the first exit it sees, so it passes on only that one.
                // When PEs exit at once from several roots, a PE's parent in one tree
                // may have stopped on another's exit: every PE also passes its exit
                // down PE 0's tree, which PE 0 always starts, so each PE hears of one.
                let mut kids: Vec<Pe> = tree::children(me, root, n, k).collect();
                if root != 0 {
                    kids.extend(tree::children(me, 0, n, k).filter(|c| *c != root));
                    kids.sort_unstable();
                    kids.dedup();
                }
                for c in kids {
                    self.core.uncounted(
                        c,
                        Kind::Exit {
                            root,
                            error: error.clone(),
                        },
                    );
                }
                if let Some(e) = error {
                    if !self.core.report.errors.contains(&e) {
                        self.core.report.errors.push(e);
                    }
                    self.core.report.aborted = true;
                }
                self.core.exiting = true;
            }
            Kind::PeFailed { pe, callback } => {
                self.core.fire(&callback, RedData::U64(vec![u64::from(pe)]));
            }
            Kind::Migrate {
                coll,
                addr,
                home,
                moves,
                contributed,
                state,
            } => self.arrive(coll, addr, home, moves, contributed, state),
            Kind::Moved {
                coll,
                addr,
                home,
                pe,
                moves,
            } => {
                let homed_here = home == self.core.me;
                self.core.loc.learn(
                    coll,
                    &addr.key,
                    Loc {
                        pe,
                        moves,
                        order: addr.order,
                        homed_here,
                    },
                );
            }
            Kind::HomeContribute {
                coll,
                seq,
                reducer,
                body,
            } => {
                // The home counts an element away as one of its own.
                let (callback, partial) = *body;
                self.add_partial(coll, seq, reducer, callback, partial, true)
            }
        }
        self.core.trace_entries_end();
        self.apply_deferred();
        self.apply_moves();
    }

    fn start_wave(&mut self) {
        let wave = self.core.qd.begin_wave();
        let children: Vec<Pe> = self.core.tree_children().collect();
        for &c in &children {
            self.core.uncounted(c, Kind::QdWave { wave });
        }
        self.core.qd.join_wave(wave, children.len());
    }

    fn qd_outcome(&mut self, out: crate::quiescence::Outcome, parent: Option<Pe>) {
        use crate::quiescence::Outcome;
        match out {
            Outcome::Nothing => {}
            Outcome::Reply {
                wave,
                sent,
                processed,
            } => {
                if let Some(p) = parent {
                    self.core.uncounted(
                        p,
                        Kind::QdReply {
                            wave,
                            sent,
                            processed,
                        },
                    );
                }
            }
            Outcome::Quiescent(callbacks) => {
                self.report_orphans(self.core.me);
                for cb in callbacks {
                    self.core.fire(&cb, RedData::List(Vec::new()));
                }
            }
            Outcome::AnotherWave => self.start_wave(),
        }
    }

    /// True if the chare or collection the envelope needs is not (yet) on this PE.
    fn target_missing(&mut self, env: &Envelope) -> bool {
        match &env.kind {
            Kind::User {
                dest: Dest::Chare(id),
                ..
            } => self.find_chare(*id).is_none(),
            Kind::User { dest, .. } | Kind::Bcast { dest, .. } => {
                dest.coll().is_some_and(|c| !self.colls.contains_key(&c))
            }
            Kind::Insert { coll, .. }
            | Kind::DoneInserting { coll, .. }
            | Kind::Census { coll, .. }
            | Kind::Contribute { coll, .. }
            | Kind::Migrate { coll, .. }
            | Kind::Moved { coll, .. }
            | Kind::HomeContribute { coll, .. } => !self.colls.contains_key(coll),
            _ => false,
        }
    }

    /// Put a message aside until the chare or collection it names is created, or
    /// report it if that can no longer happen. A waiting message counts as processed
    /// and is counted as sent again when requeued, so quiescence can be reached with
    /// messages still waiting: at quiescence no creation is in flight, and they are
    /// reported as undeliverable (see `Kind::Orphans`).
    fn wait_or_fail(&mut self, env: Envelope) {
        let me = self.core.me;
        let dest_coll = match &env.kind {
            Kind::User { dest, .. } | Kind::Bcast { dest, .. } => dest.coll().ok_or(dest.clone()),
            Kind::Insert { coll, .. }
            | Kind::DoneInserting { coll, .. }
            | Kind::Census { coll, .. }
            | Kind::Contribute { coll, .. }
            | Kind::Migrate { coll, .. }
            | Kind::Moved { coll, .. }
            | Kind::HomeContribute { coll, .. } => Ok(*coll),
            _ => return,
        };
        match dest_coll {
            Ok(coll) => {
                if !self.colls_announced.contains(coll.creator, coll.seq) {
                    self.waiting_for_coll.entry(coll).or_default().push(env);
                } else {
                    self.core
                        .fail(RuntimeError::UnknownCollection { pe: me, coll });
                }
            }
            Err(Dest::Chare(id)) => {
                if !self.chares_announced.contains(id.creator, id.seq) {
                    self.waiting_for_chare.entry(id).or_default().push(env);
                } else {
                    self.core.fail(RuntimeError::UnknownChare {
                        pe: me,
                        chare: id.to_string(),
                    });
                }
            }
            Err(_) => {}
        }
    }

    /// At quiescence: messages still waiting for a creation can never be delivered.
    fn report_orphans(&mut self, root: Pe) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            self.core.uncounted(c, Kind::Orphans { root });
        }
        let me = self.core.me;
        let chares: Vec<ChareId> = self.waiting_for_chare.drain().map(|(id, _)| id).collect();
        for id in chares {
            self.core.fail(RuntimeError::UnknownChare {
                pe: me,
                chare: id.to_string(),
            });
        }
        let colls: Vec<CollectionId> = self.waiting_for_coll.drain().map(|(c, _)| c).collect();
        for coll in colls {
            self.core
                .fail(RuntimeError::UnknownCollection { pe: me, coll });
        }
        // Messages for an element that never arrived: its state was lost on the way.
        for (coll, key, envs) in self.core.loc.drain_waiting() {
            let order = envs.iter().find_map(|env| match &env.kind {
                Kind::User {
                    dest: Dest::ElementAt(_, addr, _),
                    ..
                } => Some(addr.order),
                _ => None,
            });
            let addr = ElemAddr {
                key,
                order: order.unwrap_or_default(),
            };
            let messages = envs.iter().map(Envelope::weight).sum();
            self.core
                .fail_move(coll, &addr, MigrateError::Lost { pe: me, messages });
        }
    }

    /// Put messages that waited for a creation or a migration back in line, ahead of
    /// what arrived after them and in their own order: a sender's messages to one
    /// destination run in the order it sent them. (Queued behind later arrivals, they
    /// ran after them, or never when one of those ended the job.)
    fn requeue(&mut self, waiting: Option<Vec<Envelope>>) {
        let waiting = waiting.unwrap_or_default();
        for env in &waiting {
            if env.counted {
                self.core.sent += env.weight();
            }
        }
        let (expedited, normal): (Vec<_>, Vec<_>) =
            waiting.into_iter().partition(|env| env.expedited);
        for env in expedited {
            self.core.queue.push(env, 0, true);
        }
        for env in normal.into_iter().rev() {
            let prio = env.prio;
            self.core.queue.push_front(env, prio);
        }
    }

    fn deliver(&mut self, dest: Dest, payload: Payload, via: Via) {
        let me = self.core.me;
        let prio = via.prio;
        match dest {
            // `process` has put messages for absent chares and collections aside.
            Dest::Chare(id) => {
                if let Some(slot) = self.find_chare(id) {
                    let chare = self.chare_slab[slot].as_mut();
                    if let Some(rest) = invoke(&mut self.core, Current::Chare(id), chare, payload) {
                        self.requeue_rest(Dest::Chare(id), rest, prio);
                    }
                }
            }
            Dest::Group(coll) => match self.colls.get_mut(&coll).map(|b| &mut **b) {
                Some(Collection {
                    members: Members::Group { member, .. },
                    ..
                }) => {
                    let cur = Current::Group(coll);
                    if let Some(rest) = invoke(&mut self.core, cur, member.as_mut(), payload) {
                        self.requeue_rest(Dest::Group(coll), rest, prio);
                    }
                }
                Some(_) => self.core.fail(RuntimeError::Invalid(format!(
                    "PE {me}: {coll} is an array, but the message was addressed to a group"
                ))),
                None => {}
            },
            Dest::Element(coll, addr) => self.deliver_element(coll, addr, 0, payload, via),
            Dest::ElementAt(coll, addr, moves) => {
                self.deliver_element(coll, addr, moves, payload, via)
            }
            Dest::Array(coll) => self.core.fail(RuntimeError::Invalid(format!(
                "PE {me}: point-to-point message for a whole array {coll}"
            ))),
        }
    }

    /// Deliver to an array element here, or route the message on if it is elsewhere.
    fn deliver_element(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
        moves: u32,
        payload: Payload,
        via: Via,
    ) {
        let me = self.core.me;
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let Members::Array { elements, .. } = &mut c.members else {
            return self.core.fail(RuntimeError::Invalid(format!(
                "PE {me}: {coll} is a group, but the message was addressed to an array element"
            )));
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return self.element_absent(coll, addr, moves, payload, via);
        };
        // Messages routed by news name the element by key; its order key is here.
        let addr = ElemAddr {
            order: e.order,
            ..addr
        };
        // Only a run can stop early; its address is kept for the rest.
        let keep = payload.is_run().then(|| addr.clone());
        let cur = Current::Element(coll, addr);
        let rest = invoke(&mut self.core, cur, e.chare.as_mut(), payload);
        if let (Some(rest), Some(addr)) = (rest, keep) {
            let dest = if moves == 0 {
                Dest::Element(coll, addr)
            } else {
                Dest::ElementAt(coll, addr, moves)
            };
            self.requeue_rest(dest, rest, via.prio);
        }
    }

    /// Put the messages a run did not get to back at the head of their priority.
    fn requeue_rest(&mut self, dest: Dest, rest: Payload, prio: i32) {
        self.core.processed -= rest.count() as u64;
        let kind = Kind::User {
            dest,
            payload: rest,
            hops: 0,
        };
        let env = self.core.envelope(kind, SendOpts::prio(prio));
        self.core.queue.push_front(env, prio);
    }

    fn find_chare(&mut self, id: ChareId) -> Option<usize> {
        match self.last_chare {
            Some((last, slot)) if last == id => Some(slot),
            _ => {
                let slot = *self.chare_slot.get(&id)?;
                self.last_chare = Some((id, slot));
                Some(slot)
            }
        }
    }

    fn deliver_broadcast(&mut self, dest: Dest, root: Pe, payload: Payload, opts: SendOpts) {
        let Some(coll) = dest.coll() else { return };
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let env = self.core.envelope(
                Kind::Bcast {
                    dest: dest.clone(),
                    root,
                    payload: payload.duplicate(),
                },
                opts,
            );
            self.core.post(c, env);
        }
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        // A broadcast carries one message, never a run, so nothing is ever left over.
        match &mut c.members {
            Members::Group { member, .. } => {
                invoke(
                    &mut self.core,
                    Current::Group(coll),
                    member.as_mut(),
                    payload,
                );
            }
            Members::Array { elements, .. } => {
                // Each element gets a broadcast through its home: here if it is here,
                // else as a message that follows it (see `send_to_away`), so an
                // element on the move gets it once.
                let me = self.core.me;
                let (away, homed) = if self.core.loc.is_empty() {
                    (Vec::new(), elements.len())
                } else {
                    let homed = elements.values().filter(|e| e.home == me).count();
                    (self.core.loc.away_from_home(coll, me), homed)
                };
                self.core.send_to_away(coll, away, &payload, opts);
                let mut payload = Some(payload);
                let homed_here = elements.iter_mut().filter(|(_, e)| e.home == me);
                for (i, (key, e)) in homed_here.enumerate() {
                    // Handing the last receiver the original saves one duplicate.
                    let p = if i + 1 == homed {
                        payload.take()
                    } else {
                        payload.as_ref().map(Payload::duplicate)
                    };
                    let Some(p) = p else { break };
                    let addr = ElemAddr {
                        key: key.clone(),
                        order: e.order,
                    };
                    invoke(
                        &mut self.core,
                        Current::Element(coll, addr),
                        e.chare.as_mut(),
                        p,
                    );
                }
            }
        }
    }

    fn construct(&mut self, ty: u32, init: Payload, current: Current) -> Option<Box<dyn AnyChare>> {
        let Some(ctor) = self.core.reg.chares.get(ty as usize).map(|t| t.construct) else {
            let err =
                RuntimeError::Invalid(format!("chare type {ty} is not registered in this process"));
            self.core.fail(err);
            return None;
        };
        let name = self.core.reg.chares[ty as usize].name.clone();
        guarded(&mut self.core, current, &name, |ctx| ctor(init, ctx))
    }

    fn create_chare(&mut self, id: ChareId, ty: u32, init: Payload) {
        self.chares_announced.insert(id.creator, id.seq);
        if let Some(chare) = self.construct(ty, init, Current::Chare(id)) {
            self.chare_slot.insert(id, self.chare_slab.len());
            self.chare_slab.push(chare);
        }
        let waiting = self.waiting_for_chare.remove(&id);
        self.requeue(waiting);
    }

    fn announce_collection(&mut self, coll: CollectionId) {
        self.colls_announced.insert(coll.creator, coll.seq);
    }

    fn create_group(&mut self, coll: CollectionId, ty: u32, root: Pe, init: Payload) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let kind = Kind::CreateGroup {
                coll,
                ty,
                root,
                init: init.duplicate(),
            };
            self.core.create(c, kind);
        }
        self.announce_collection(coll);
        if let Some(member) = self.construct(ty, init, Current::Group(coll)) {
            let census = Census {
                local: 1,
                active_children: self.core.tree_children().collect(),
                done: true,
                ..Census::default()
            };
            self.colls.insert(
                coll,
                Box::new(Collection {
                    ty,
                    members: Members::Group {
                        member,
                        contributed: 0,
                    },
                    census,
                    reductions: Pending::default(),
                }),
            );
        }
        let waiting = self.waiting_for_coll.remove(&coll);
        self.requeue(waiting);
    }

    fn create_array(
        &mut self,
        coll: CollectionId,
        ty: u32,
        root: Pe,
        init: Payload,
        shape: Arc<Shape>,
        map: ArrayMap,
    ) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let kind = Kind::CreateArray {
                coll,
                ty,
                root,
                init: init.duplicate(),
                shape: shape.clone(),
                map,
            };
            self.core.create(c, kind);
        }
        self.announce_collection(coll);
        self.core.register_array(coll, ty, shape.clone(), map);
        let me = self.core.me;
        let mut elements = HashMap::default();
        for addr in shape.addresses() {
            match self.core.locate(coll, &addr) {
                Ok(pe) if pe == me => {
                    let order = addr.order;
                    let key = addr.key.clone();
                    if let Some(chare) =
                        self.construct(ty, init.duplicate(), Current::Element(coll, addr))
                    {
                        elements.insert(
                            key,
                            Element {
                                chare,
                                order,
                                contributed: 0,
                                home: me,
                                moves: 0,
                            },
                        );
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    self.core.fail(e);
                    break;
                }
            }
        }
        let census = Census {
            local: elements.len() as u64,
            ..Census::default()
        };
        self.colls.insert(
            coll,
            Box::new(Collection {
                ty,
                members: Members::Array {
                    elements,
                    seq_floor: 0,
                },
                census,
                reductions: Pending::default(),
            }),
        );
        self.advance_census(coll);
        let waiting = self.waiting_for_coll.remove(&coll);
        self.requeue(waiting);
    }

    fn insert(&mut self, coll: CollectionId, addr: ElemAddr, init: Payload, hops: u8) {
        let me = self.core.me;
        let Some(c) = self.colls.get(&coll) else {
            return;
        };
        let ty = c.ty;
        let home = match self.core.locate(coll, &addr) {
            Ok(home) => home,
            Err(e) => return self.core.fail(e),
        };
        if home != me {
            // Sent by a PE that did not know the array yet, so to its creator: an
            // element living off its home would be missed by broadcasts and censuses.
            if hops >= MAX_INSERT_HOPS {
                return self.core.fail(RuntimeError::Invalid(format!(
                    "PE {me}: insert of index {} of {coll} was forwarded {hops} times without reaching its home PE {home}",
                    describe_index(&addr)
                )));
            }
            let kind = Kind::Insert {
                coll,
                addr,
                init,
                hops: hops + 1,
            };
            let env = self.core.envelope(kind, SendOpts::expedited());
            return self.core.post(home, env);
        }
        let resident = match &c.members {
            Members::Array { elements, .. } => elements.contains_key(&addr.key),
            Members::Group { .. } => false,
        };
        // An element that moved away is still homed here: a second one would be a twin.
        let away = self
            .core
            .loc
            .get(coll, &addr.key)
            .filter(|l| l.homed_here && l.pe != me)
            .map(|l| l.pe);
        if resident || away.is_some() {
            return self.core.fail(RuntimeError::DuplicateIndex {
                pe: me,
                coll,
                index: describe_index(&addr),
                on: away.unwrap_or(me),
            });
        }
        let order = addr.order;
        let key = addr.key.clone();
        let Some(chare) = self.construct(ty, init, Current::Element(coll, addr)) else {
            return;
        };
        if let Some(Collection {
            members:
                Members::Array {
                    elements,
                    seq_floor,
                },
            ..
        }) = self.colls.get_mut(&coll).map(|b| &mut **b)
        {
            elements.insert(
                key,
                Element {
                    chare,
                    order,
                    contributed: *seq_floor,
                    home,
                    moves: 0,
                },
            );
        }
    }

    fn recount(&mut self, coll: CollectionId, root: Pe) {
        for ch in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let env = self
                .core
                .envelope(Kind::DoneInserting { coll, root }, SendOpts::default());
            self.core.post(ch, env);
        }
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if let Members::Array { elements, .. } = &c.members {
            // A PE counts the elements it is home to, here or away (see `location.rs`).
            let me = self.core.me;
            let homed = elements.values().filter(|e| e.home == me).count() as u64;
            c.census.epoch += 1;
            c.census.local = homed + self.core.loc.away_count(coll, me);
            c.census.done = false;
            self.advance_census(coll);
        }
    }

    /// Finish this PE's census once every child has reported its subtree count.
    fn advance_census(&mut self, coll: CollectionId) {
        let children: Vec<Pe> = self.core.tree_children().collect();
        let parent = self.core.tree_parent();
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if c.census.done {
            return;
        }
        let epoch = c.census.epoch;
        let reports = c.census.reports.get(&epoch).map_or(0, Vec::len);
        if reports < children.len() {
            return;
        }
        let reports = c.census.reports.remove(&epoch).unwrap_or_default();
        let subtree = c.census.local + reports.iter().map(|r| r.1).sum::<u64>();
        c.census.active_children = reports.iter().filter(|r| r.1 > 0).map(|r| r.0).collect();
        c.census.done = true;
        if let Some(p) = parent {
            let env = self.core.envelope(
                Kind::Census {
                    coll,
                    epoch,
                    count: subtree,
                },
                SendOpts::expedited(),
            );
            self.core.post(p, env);
        }
        let seqs: Vec<u64> = self.colls[&coll].reductions.seqs();
        for seq in seqs {
            self.try_complete(coll, seq);
        }
    }

    fn apply_deferred(&mut self) {
        while !self.core.deferred.is_empty() {
            let batch = std::mem::take(&mut self.core.deferred);
            for c in batch {
                self.local_contribution(c);
            }
        }
    }

    fn local_contribution(&mut self, lc: LocalContribution) {
        let mut away_home = None;
        let Some(c) = self.colls.get_mut(&lc.coll) else {
            return;
        };
        let seq = match (&mut c.members, &lc.member) {
            (Members::Group { contributed, .. }, None) => {
                *contributed += 1;
                *contributed - 1
            }
            (Members::Array { elements, .. }, Some(key)) => match elements.get_mut(key) {
                Some(e) => {
                    e.contributed += 1;
                    if e.home != self.core.me {
                        away_home = Some(e.home);
                    }
                    e.contributed - 1
                }
                None => return,
            },
            _ => return,
        };
        if let Err(what) = reduction::check_value(lc.reducer, &lc.value) {
            return self.core.fail(RuntimeError::ReducerMismatch {
                coll: lc.coll,
                seq,
                what,
            });
        }
        let partial = reduction::partial_of(lc.reducer, lc.key, lc.value);
        if let Some(home) = away_home {
            // The home counts its elements in reductions wherever they are.
            let kind = Kind::HomeContribute {
                coll: lc.coll,
                seq,
                reducer: lc.reducer,
                body: Box::new((lc.callback, partial)),
            };
            let env = self.core.envelope(kind, SendOpts::default());
            return self.core.post(home, env);
        }
        self.add_partial(lc.coll, seq, lc.reducer, lc.callback, partial, true);
    }

    /// Merge a member's contribution (`local`: of a member this PE counts) or a
    /// child's partial into reduction `seq`, and finish the reduction here if it can.
    fn add_partial(
        &mut self,
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        callback: Callback,
        partial: Partial,
        local: bool,
    ) {
        if self.merge(coll, seq, reducer, callback, partial) {
            if let Some(p) = self
                .colls
                .get_mut(&coll)
                .and_then(|c| c.reductions.get_mut(seq))
            {
                if local {
                    p.local += 1;
                } else {
                    p.children += 1;
                }
            }
            self.try_complete(coll, seq);
        }
    }

    /// Merge a partial into reduction `seq`; false (with the error reported) on mismatch.
    fn merge(
        &mut self,
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        callback: Callback,
        partial: Partial,
    ) -> bool {
        let reg = self.core.reg.clone();
        let Some(c) = self.colls.get_mut(&coll) else {
            return false;
        };
        let pending = c.reductions.get_or_insert_with(seq, || PendingReduction {
            reducer,
            callback,
            partial: None,
            local: 0,
            children: 0,
        });
        if pending.reducer != reducer {
            let what = format!(
                "members used different reducers ({:?} and {:?})",
                pending.reducer, reducer
            );
            self.core
                .fail(RuntimeError::ReducerMismatch { coll, seq, what });
            return false;
        }
        let merged = match pending.partial.take() {
            None => Ok(partial),
            Some(acc) => {
                reduction::merge_partials(reducer, acc, partial, &|id| reg.custom_reducer(id))
            }
        };
        match merged {
            Ok(p) => {
                pending.partial = Some(p);
                true
            }
            Err(what) => {
                self.core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what });
                false
            }
        }
    }

    fn try_complete(&mut self, coll: CollectionId, seq: u64) {
        let parent = self.core.tree_parent();
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let Some(p) = c.reductions.get(seq) else {
            return;
        };
        let census = &c.census;
        if !census.done || p.local < census.local || p.children < census.active_children.len() {
            return;
        }
        let Some(p) = c.reductions.remove(seq) else {
            return;
        };
        if let Members::Array { seq_floor, .. } = &mut c.members {
            *seq_floor = (*seq_floor).max(seq + 1);
        }
        let Some(partial) = p.partial else { return };
        match parent {
            Some(parent) => {
                let kind = Kind::Contribute {
                    coll,
                    seq,
                    reducer: p.reducer,
                    body: Box::new((p.callback, partial)),
                };
                let env = self.core.envelope(kind, SendOpts::default());
                self.core.post(parent, env);
            }
            None => match reduction::finish(p.reducer, partial) {
                Ok(value) => self.core.fire(&p.callback, value),
                Err(what) => self
                    .core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what }),
            },
        }
    }

    /// Statistics and outputs of this PE, at the end of the run.
    pub(crate) fn into_report(mut self) -> PeReport {
        self.core.report.sent = self.core.sent;
        self.core.report.processed = self.core.processed;
        // Messages still waiting for a creation when the job exited never ran either.
        let waiting: usize = self
            .waiting_for_chare
            .values()
            .chain(self.waiting_for_coll.values())
            .map(Vec::len)
            .sum::<usize>()
            + self.core.loc.waiting_count();
        self.core.report.unprocessed = (self.core.queue.len() + waiting) as u64;
        self.core.report.qd_waves = self.core.qd.waves_run();
        self.core.report
    }
}

/// Forwards an insert may take to its element's home (one is all a correct map needs).
const MAX_INSERT_HOPS: u8 = 4;

fn describe_index(addr: &ElemAddr) -> String {
    format!("with order key {} ({} bytes)", addr.order, addr.key.0.len())
}

pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Run `f` as the chare `current`, turning a panic or an error into the job's policy.
fn guarded<R>(
    core: &mut PeCore,
    current: Current,
    name: &str,
    f: impl FnOnce(&mut Ctx) -> Result<R, RuntimeError>,
) -> Option<R> {
    core.current = current;
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut Ctx { core: &mut *core })));
    core.current = Current::Main;
    core.trace_entries_end();
    match outcome {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            core.fail(e);
            None
        }
        Err(p) => {
            let message = panic_message(p);
            core.fail(RuntimeError::HandlerPanic {
                pe: core.me,
                chare: name.to_string(),
                message,
            });
            None
        }
    }
}

/// Run a chare on a payload; returns the messages of a run it stopped before.
fn invoke(
    core: &mut PeCore,
    current: Current,
    chare: &mut dyn AnyChare,
    payload: Payload,
) -> Option<Payload> {
    core.current = current;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        chare.deliver(payload, &mut Ctx { core: &mut *core })
    }));
    core.current = Current::Main;
    core.trace_entries_end();
    match outcome {
        Ok(Ok(rest)) => rest,
        Ok(Err(e)) => {
            core.fail(e);
            None
        }
        Err(p) => {
            let err = RuntimeError::HandlerPanic {
                pe: core.me,
                chare: chare.type_name().to_string(),
                message: panic_message(p),
            };
            core.fail(err);
            None
        }
    }
}
