//! The builder group: one member per PE runs that PE's part of every creation over
//! chorus messages, keyed by the creation's token.

use crate::hash::mix64;
use crate::host::algo::{self, Proto, ProtoMsg};
use crate::host::merge::{Hop, MergeRequest, MergeState, Route, Way};
use crate::host::rebuild::{self, Patched};
use crate::host::spec::{CreationReport, HostError, Parent, Request};
use crate::host::tally::Tally;
use crate::kary;
use crate::neighbour_discovery::{Intermediaries, ToIntermediary};
use crate::protocol::{Algorithm, Outbox, Protocol, ProtocolError, Setup, Wire};
use crate::section::{Placement, Section, SectionId};
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Pe};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Key of the intermediary hash, mixed with each creation's token.
const SALT: u64 = 0x5EC7_104A_5400;

/// Messages of the builder group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BuilderMsg {
    /// From the application to the builder on its own PE: start a creation.
    Create(Request),
    /// The start of creation `token`, from the creator (world) or from a tree
    /// neighbour in the parent section (`from`).
    Start {
        /// The creation.
        token: u64,
        /// The parent-section neighbour it came from (None from a broadcast).
        from: Option<Pe>,
        /// What to create.
        req: Request,
    },
    /// A message of the creation protocol.
    Proto {
        /// The creation.
        token: u64,
        /// The sending PE.
        from: Pe,
        /// Which section of a split (0 otherwise).
        part: u32,
        /// The protocol's message.
        wire: Wire<ProtoMsg>,
    },
    /// Messages of several sections of one split for one PE, sent as one.
    Bundle {
        /// The creation.
        token: u64,
        /// The sending PE.
        from: Pe,
        /// (section of the split, message), in the order they were produced.
        parts: Vec<(u32, Wire<ProtoMsg>)>,
    },
    /// A parent-tree subtree has finished; its figures.
    Done {
        /// The creation.
        token: u64,
        /// The subtree's figures.
        tally: Tally,
    },
    /// From the application to the builder on a member of `req.a`: merge two sections.
    Merge(MergeRequest),
    /// A merge request on its way up section `a` to its root, with its cost so far.
    MergeAsk {
        /// The request.
        req: MergeRequest,
        /// Messages so far.
        messages: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// A's root offers the merge; it travels up section `b` to its root.
    Offer {
        /// The merge.
        token: u64,
        /// The request.
        req: MergeRequest,
        /// A's root.
        a_root: Pe,
        /// Members of A.
        a_size: u32,
        /// Messages so far.
        messages: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// B's root accepts: the merged size, and where B's root is.
    Accept {
        /// The merge.
        token: u64,
        /// Members of the merged section.
        size: u32,
        /// B's root.
        b_root: Pe,
    },
    /// The start of a merge, down one of the old trees.
    Go {
        /// The merge.
        token: u64,
        /// The request.
        req: MergeRequest,
        /// The old section this tree belongs to.
        old: SectionId,
        /// Merged rank of its rank 0.
        offset: u32,
        /// Members of the merged section.
        size: u32,
    },
    /// A neighbour-discovery announcement of a merge, routed by merged rank.
    Routed {
        /// The merge.
        token: u64,
        /// Merged rank of the intermediary.
        dest: u32,
        /// The announcement.
        msg: ToIntermediary,
    },
    /// The runtime reports that a PE failed (sim layer).
    Failed(Pe),
    /// A neighbour of a dead rank arrives at the rendezvous of the repair.
    Hello {
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The neighbour's rank.
        rank: u32,
        /// The neighbour's PE.
        pe: Pe,
        /// How many neighbours will come.
        expect: u32,
    },
    /// The rendezvous introduces the dead rank's neighbours to each other.
    Links {
        /// The rebuild (its new section's name).
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// (rank, PE) of every neighbour.
        parties: Vec<(u32, Pe)>,
    },
    /// Which rank died, spread over the patched tree.
    Notice {
        /// The rebuild.
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The PE it came from.
        from: Pe,
    },
    /// Every PE has finished: report state peaks and let go of the creation.
    Release {
        /// The creation.
        token: u64,
    },
    /// A parent-tree subtree's largest per-PE state.
    Peak {
        /// The creation.
        token: u64,
        /// Bytes.
        bytes: u64,
    },
}

/// Something that reached a PE before the creation started there.
#[derive(Debug)]
enum Early {
    Wire(Pe, u32, Wire<ProtoMsg>, u64),
    Done(Tally),
    Routed(u32, ToIntermediary),
}

/// The state machine of one section of a creation.
enum Engine {
    /// A creation algorithm.
    Algo(Box<Proto>),
    /// A member's part in a merge.
    Merge(Box<MergeState>),
}

impl Engine {
    fn finished(&self) -> bool {
        match self {
            Engine::Algo(p) => p.finished(),
            Engine::Merge(m) => m.placement().is_some(),
        }
    }

    fn placement(&self) -> Option<&Placement> {
        match self {
            Engine::Algo(p) => p.placement(),
            Engine::Merge(m) => m.placement(),
        }
    }

    fn peak_state_bytes(&self) -> usize {
        match self {
            Engine::Algo(p) => p.peak_state_bytes(),
            Engine::Merge(m) => m.peak_state_bytes(),
        }
    }
}

/// A protocol message on its way inside one PE: (from, to, part, message, bytes to
/// count on arrival).
type Item = (Pe, Pe, u32, Wire<ProtoMsg>, u64);

/// Where a section's members and report go; kept for rebuilds.
#[derive(Debug, Clone)]
struct Meta {
    on_member: Callback,
    on_report: Callback,
    tag: u64,
}

/// What the builder group is created with: [`crate::host::register`] returns it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BuilderInit {
    /// The entry the runtime reports failed PEs to.
    pub on_failure: Entry<Builder, Pe>,
}

/// One section's state machine of a creation on this PE.
struct Part {
    proto: Engine,
    inter: Intermediaries,
    finished: bool,
}

/// One PE's part in one creation.
struct Run {
    on_member: Callback,
    on_report: Callback,
    tag: u64,
    algorithm: Option<Algorithm>,
    parts: Vec<Part>,
    up: Option<Pe>,
    down: Vec<Pe>,
    tally: Tally,
    children_done: usize,
    finished: bool,
    sent_up: bool,
    released: bool,
    peak: u64,
    children_peaked: usize,
}

/// The per-PE builder: register it with [`crate::host::register`] and create it once
/// with `ctx.create_group::<Builder>(())`.
pub struct Builder {
    me: Pe,
    npes: u32,
    counter: u32,
    proxy: Option<GroupProxy<Builder>>,
    sections: HashMap<SectionId, Section>,
    meta: HashMap<SectionId, Meta>,
    failed: BTreeSet<Pe>,
    meetings: HashMap<(SectionId, u32), Vec<(u32, Pe)>>,
    runs: HashMap<u64, Run>,
    early: HashMap<u64, Vec<Early>>,
    orphans: HashMap<(u64, u32), Intermediaries>,
    pending_merges: HashMap<u64, (MergeRequest, Section)>,
    outgoing: Vec<(Pe, u32, Wire<ProtoMsg>)>,
}

impl Chare for Builder {
    type Init = BuilderInit;
    type Msg = BuilderMsg;

    fn create(init: BuilderInit, ctx: &mut Ctx) -> Self {
        let proxy: Option<GroupProxy<Builder>> = ctx.this_group();
        if let Some(g) = &proxy {
            let me = ctx.my_pe();
            ctx.on_pe_failure(Callback::group_member(g, me, init.on_failure));
        }
        Builder {
            me: ctx.my_pe(),
            npes: ctx.num_pes() as u32,
            counter: 0,
            proxy,
            sections: HashMap::new(),
            meta: HashMap::new(),
            failed: BTreeSet::new(),
            meetings: HashMap::new(),
            runs: HashMap::new(),
            early: HashMap::new(),
            orphans: HashMap::new(),
            pending_merges: HashMap::new(),
            outgoing: Vec::new(),
        }
    }

    fn handle(&mut self, msg: BuilderMsg, ctx: &mut Ctx) {
        if let Err(e) = self.dispatch(msg, ctx) {
            panic!("section builder: {e}");
        }
    }
}

/// Where a member's callback goes on PE `pe`: a group-wide callback means the local
/// member of that group; any other callback is used as given.
fn local_callback(cb: &Callback, pe: Pe) -> Callback {
    match cb {
        Callback::GroupAll { coll, entry } => Callback::GroupMember {
            coll: *coll,
            pe,
            entry: *entry,
        },
        other => other.clone(),
    }
}

/// A member's view of the section it was placed in (ids are PEs on the builder).
fn section_of(p: &Placement) -> Section {
    Section {
        id: SectionId::from_token(p.token, p.size),
        rank: p.rank,
        size: p.size,
        k: p.k,
        parent: p.parent,
        children: p.children.clone(),
    }
}

fn encoded_len(msg: &BuilderMsg) -> u64 {
    bincode::serialized_size(msg).unwrap_or(0)
}

fn unexpected(me: Pe, from: Pe, token: u64, what: &'static str) -> HostError {
    HostError::Protocol {
        token,
        source: ProtocolError::Unexpected { me, from, what },
    }
}

fn is_answer(w: &Wire<ProtoMsg>) -> bool {
    matches!(w, Wire::FromIntermediary(_))
}

impl Builder {
    /// Ask the builder on this PE to create a section.
    pub fn create_section(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: Request) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, BuilderMsg::Create(req));
    }

    /// Ask the builder on this PE (a member of `req.a`) to merge two sections.
    pub fn merge_sections(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: MergeRequest) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, BuilderMsg::Merge(req));
    }

    fn proxy(&self) -> GroupProxy<Builder> {
        self.proxy.expect("the builder is a group member")
    }

    fn send(&self, ctx: &mut Ctx, to: Pe, msg: BuilderMsg) {
        self.proxy().send(ctx, to, msg);
    }

    fn dispatch(&mut self, msg: BuilderMsg, ctx: &mut Ctx) -> Result<(), HostError> {
        match msg {
            BuilderMsg::Create(req) => self.on_create(ctx, req),
            BuilderMsg::Start { token, from, req } => self.on_start(ctx, token, from, req),
            BuilderMsg::Proto {
                token,
                from,
                part,
                wire,
            } => {
                // Intermediaries' answers are counted where they arrive.
                let bytes = if is_answer(&wire) {
                    encoded_len(&BuilderMsg::Proto {
                        token,
                        from,
                        part,
                        wire: wire.clone(),
                    })
                } else {
                    0
                };
                let queue = VecDeque::from([(from, self.me, part, wire, bytes)]);
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Bundle { token, from, parts } => {
                let answers = parts.iter().all(|(_, w)| is_answer(w));
                let mut bytes = if answers {
                    encoded_len(&BuilderMsg::Bundle {
                        token,
                        from,
                        parts: parts.clone(),
                    })
                } else {
                    0
                };
                let mut queue = VecDeque::new();
                for (part, wire) in parts {
                    // The bundle counts once, with its first answer.
                    queue.push_back((from, self.me, part, wire, std::mem::take(&mut bytes)));
                }
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Done { token, tally } => match self.runs.get_mut(&token) {
                Some(run) => {
                    run.tally.merge(&tally);
                    run.children_done += 1;
                    self.try_up(ctx, token)
                }
                None => {
                    self.early
                        .entry(token)
                        .or_default()
                        .push(Early::Done(tally));
                    Ok(())
                }
            },
            BuilderMsg::Release { token } => self.on_release(ctx, token),
            BuilderMsg::Merge(req) => self.on_merge_ask(ctx, req, 0, 0),
            BuilderMsg::Failed(pe) => self.on_failed(ctx, pe),
            BuilderMsg::Hello {
                sid,
                dead,
                rank,
                pe,
                expect,
            } => self.on_hello(ctx, sid, dead, (rank, pe), expect),
            BuilderMsg::Links {
                token,
                sid,
                dead,
                parties,
            } => self.on_links(ctx, token, sid, dead, parties),
            BuilderMsg::Notice {
                token,
                sid,
                dead,
                from,
            } => self.on_notice(ctx, token, sid, dead, from),
            BuilderMsg::MergeAsk {
                req,
                messages,
                bytes,
            } => self.on_merge_ask(ctx, req, messages, bytes),
            BuilderMsg::Offer {
                token,
                req,
                a_root,
                a_size,
                messages,
                bytes,
            } => self.on_offer(ctx, token, req, a_root, a_size, (messages, bytes)),
            BuilderMsg::Accept {
                token,
                size,
                b_root,
            } => self.on_accept(ctx, token, size, b_root),
            BuilderMsg::Go {
                token,
                req,
                old,
                offset,
                size,
            } => self.on_go(ctx, token, req, old, offset, size),
            BuilderMsg::Routed { token, dest, msg } => {
                if !self.runs.contains_key(&token) {
                    let early = Early::Routed(dest, msg);
                    self.early.entry(token).or_default().push(early);
                    return Ok(());
                }
                let queue = match self.route(ctx, token, dest, msg)? {
                    Some(msg) => {
                        VecDeque::from([(self.me, self.me, 0, Wire::ToIntermediary(msg), 0)])
                    }
                    None => VecDeque::new(),
                };
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Peak { token, bytes } => {
                let run = self.run(token, "peak")?;
                run.peak = run.peak.max(bytes);
                run.children_peaked += 1;
                self.try_peak_up(ctx, token)
            }
        }
    }

    fn run(&mut self, token: u64, what: &'static str) -> Result<&mut Run, HostError> {
        let pe = self.me;
        self.runs
            .get_mut(&token)
            .ok_or(HostError::UnknownCreation { pe, token, what })
    }

    fn on_create(&mut self, ctx: &mut Ctx, req: Request) -> Result<(), HostError> {
        req.validate()?;
        let token = SectionId::token(self.me, self.counter);
        self.counter += req.membership.sections();
        match req.parent {
            Parent::World => {
                self.proxy().broadcast(
                    ctx,
                    BuilderMsg::Start {
                        token,
                        from: None,
                        req,
                    },
                );
                Ok(())
            }
            Parent::Section(id) => {
                if !self.sections.contains_key(&id) {
                    return Err(HostError::UnknownParent { pe: self.me, id });
                }
                self.on_start(ctx, token, None, req)
            }
        }
    }

    /// This PE's place in the parent's tree: (parent, children, generation).
    fn parent_tree(&self, req: &Request) -> Result<(Option<Pe>, Vec<Pe>, u32), HostError> {
        match req.parent {
            Parent::World => Ok((
                kary::parent(self.me, req.k),
                kary::children(self.me, self.npes, req.k).collect(),
                kary::generation(self.me, req.k),
            )),
            Parent::Section(id) => {
                let s = self
                    .sections
                    .get(&id)
                    .ok_or(HostError::UnknownParent { pe: self.me, id })?;
                Ok((s.parent, s.children.clone(), kary::generation(s.rank, s.k)))
            }
        }
    }

    fn on_start(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        from: Option<Pe>,
        req: Request,
    ) -> Result<(), HostError> {
        let (up, down, generation) = self.parent_tree(&req)?;
        if let Parent::Section(_) = req.parent {
            // Flood the parent section's tree from wherever the creation began.
            for n in up.iter().chain(&down).copied().filter(|&n| Some(n) != from) {
                let start = BuilderMsg::Start {
                    token,
                    from: Some(self.me),
                    req: req.clone(),
                };
                self.send(ctx, n, start);
            }
        }
        let colour = req.membership.colour(self.me);
        let sections = req.membership.sections();
        let mut parts = Vec::with_capacity(sections as usize);
        for part in 0..sections {
            let setup = Setup {
                me: self.me,
                world: self.npes,
                member: colour == Some(part),
                k: req.k,
                tree_parent: up,
                tree_children: down.clone(),
                generation,
                salt: mix64((token + u64::from(part)) ^ SALT),
                token: token + u64::from(part),
            };
            parts.push(Part {
                proto: Engine::Algo(Box::new(algo::protocol(req.algorithm, setup)?)),
                inter: self.orphans.remove(&(token, part)).unwrap_or_default(),
                finished: false,
            });
        }
        let mut queue = VecDeque::new();
        for (i, p) in parts.iter_mut().enumerate() {
            let mut out = Outbox::new();
            if let Engine::Algo(proto) = &mut p.proto {
                proto
                    .start(&mut out)
                    .map_err(|source| HostError::Protocol { token, source })?;
            }
            queue.extend(out.into_iter().map(|(to, w)| (self.me, to, i as u32, w, 0)));
        }
        let run = Run {
            on_member: req.on_member,
            on_report: req.on_report,
            tag: req.tag,
            algorithm: Some(req.algorithm),
            parts,
            up,
            down,
            tally: Tally::joined(colour, sections, ctx.now()),
            children_done: 0,
            finished: false,
            sent_up: false,
            released: false,
            peak: 0,
            children_peaked: 0,
        };
        self.runs.insert(token, run);
        self.replay(ctx, token, queue)
    }

    /// Take in what arrived before the run started here, then run.
    fn replay(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        mut queue: VecDeque<Item>,
    ) -> Result<(), HostError> {
        for early in self.early.remove(&token).unwrap_or_default() {
            match early {
                Early::Wire(from, part, wire, bytes) => {
                    queue.push_back((from, self.me, part, wire, bytes))
                }
                Early::Done(tally) => {
                    let run = self.run(token, "done")?;
                    run.tally.merge(&tally);
                    run.children_done += 1;
                }
                Early::Routed(dest, msg) => {
                    if let Some(msg) = self.route(ctx, token, dest, msg)? {
                        queue.push_back((self.me, self.me, 0, Wire::ToIntermediary(msg), 0));
                    }
                }
            }
        }
        self.pump(ctx, token, queue)
    }

    /// Deliver protocol messages until none is left for this PE, then send the rest.
    fn pump(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        mut queue: VecDeque<Item>,
    ) -> Result<(), HostError> {
        let me = self.me;
        while let Some((from, to, part, wire, bytes)) = queue.pop_front() {
            if to != me {
                self.outgoing.push((to, part, wire));
                continue;
            }
            let mut out = Outbox::new();
            let slot = self.runs.get_mut(&token).and_then(|r| {
                let tally = &mut r.tally;
                r.parts.get_mut(part as usize).map(|p| (p, tally))
            });
            match (slot, wire) {
                (Some((p, _)), Wire::ToIntermediary(m)) => p.inter.handle(m, &mut out),
                (None, Wire::ToIntermediary(m)) => {
                    let inter = self.orphans.entry((token, part)).or_default();
                    inter.handle(m, &mut out);
                    if inter.is_idle() {
                        self.orphans.remove(&(token, part));
                    }
                }
                (Some((p, _)), Wire::Role(m)) => match &mut p.proto {
                    Engine::Algo(proto) => proto
                        .handle(from, m, &mut out)
                        .map_err(|source| HostError::Protocol { token, source })?,
                    Engine::Merge(_) => return Err(unexpected(me, from, token, "role message")),
                },
                (Some((p, tally)), Wire::FromIntermediary(m)) => {
                    if bytes > 0 {
                        tally.message(bytes);
                    }
                    match &mut p.proto {
                        Engine::Algo(proto) => proto
                            .found(from, m, &mut out)
                            .map_err(|source| HostError::Protocol { token, source })?,
                        Engine::Merge(state) => {
                            if !state.found(m) {
                                return Err(unexpected(me, from, token, "intermediary answer"));
                            }
                        }
                    }
                }
                (None, wire) => {
                    let early = Early::Wire(from, part, wire, bytes);
                    self.early.entry(token).or_default().push(early);
                }
            }
            queue.extend(out.into_iter().map(|(to, w)| (me, to, part, w, 0)));
        }
        self.flush(ctx, token);
        self.check_finished(ctx, token)
    }

    /// Send what the last handler produced: one message per protocol message, or for
    /// a split one message per destination. The sender counts what it sends unless
    /// it is only intermediaries' answers (those are counted where they arrive, which
    /// is always a member).
    fn flush(&mut self, ctx: &mut Ctx, token: u64) {
        let mut outgoing = std::mem::take(&mut self.outgoing);
        let split = !matches!(self.runs.get(&token), Some(r) if r.parts.len() == 1);
        let mut msgs: Vec<(Pe, BuilderMsg)> = Vec::new();
        let me = self.me;
        let single = |(to, part, wire): (Pe, u32, Wire<ProtoMsg>)| {
            let msg = BuilderMsg::Proto {
                token,
                from: me,
                part,
                wire,
            };
            (to, msg)
        };
        if split && outgoing.len() > 1 {
            let mut dests: Vec<Pe> = outgoing.iter().map(|o| o.0).collect();
            dests.sort_unstable();
            dests.dedup();
            let mut grouped: Vec<Vec<(u32, Wire<ProtoMsg>)>> = vec![Vec::new(); dests.len()];
            for (to, part, wire) in outgoing.drain(..) {
                let at = dests.binary_search(&to).expect("collected above");
                grouped[at].push((part, wire));
            }
            for (to, mut parts) in dests.into_iter().zip(grouped) {
                if parts.len() == 1 {
                    let (part, wire) = parts.pop().expect("one part");
                    msgs.push(single((to, part, wire)));
                } else {
                    msgs.push((
                        to,
                        BuilderMsg::Bundle {
                            token,
                            from: me,
                            parts,
                        },
                    ));
                }
            }
        } else {
            msgs.extend(outgoing.drain(..).map(single));
        }
        self.outgoing = outgoing;
        for (to, msg) in msgs {
            let counted = match &msg {
                BuilderMsg::Proto { wire, .. } => !is_answer(wire),
                BuilderMsg::Bundle { parts, .. } => !parts.iter().all(|(_, w)| is_answer(w)),
                _ => false,
            };
            if counted {
                let bytes = encoded_len(&msg);
                if let Some(run) = self.runs.get_mut(&token) {
                    run.tally.message(bytes);
                }
            }
            self.send(ctx, to, msg);
        }
    }

    fn check_finished(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let me = self.me;
        let now = ctx.now();
        let Some(run) = self.runs.get_mut(&token) else {
            return Ok(());
        };
        if run.finished {
            return Ok(());
        }
        let mut placed = Vec::new();
        for p in run.parts.iter_mut().filter(|p| !p.finished) {
            if p.proto.finished() {
                p.finished = true;
                placed.extend(p.proto.placement().map(section_of));
            }
        }
        run.finished = run.parts.iter().all(|p| p.finished);
        if run.finished {
            run.tally.last_done = run.tally.last_done.max(now);
        }
        let cb = local_callback(&run.on_member, me);
        let meta = Meta {
            on_member: run.on_member.clone(),
            on_report: run.on_report.clone(),
            tag: run.tag,
        };
        for section in placed {
            self.meta.insert(section.id, meta.clone());
            self.sections.insert(section.id, section.clone());
            ctx.send_to_callback(&cb, Encoded(section));
        }
        self.try_up(ctx, token)
    }

    fn try_up(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "done")?;
        if !run.finished || run.sent_up || run.children_done < run.down.len() {
            return Ok(());
        }
        run.sent_up = true;
        match run.up {
            Some(p) => {
                let tally = run.tally.clone();
                self.send(ctx, p, BuilderMsg::Done { token, tally });
                Ok(())
            }
            None => self.on_release(ctx, token),
        }
    }

    fn on_release(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "release")?;
        run.released = true;
        let own: usize = run
            .parts
            .iter()
            .map(|p| p.proto.peak_state_bytes() + p.inter.peak_state_bytes())
            .sum();
        run.peak = run.peak.max(own as u64);
        for c in run.down.clone() {
            self.send(ctx, c, BuilderMsg::Release { token });
        }
        self.try_peak_up(ctx, token)
    }

    fn try_peak_up(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let run = self.run(token, "peak")?;
        if !run.released || run.children_peaked < run.down.len() {
            return Ok(());
        }
        let run = self.runs.remove(&token).expect("looked up above");
        match run.up {
            Some(p) => self.send(
                ctx,
                p,
                BuilderMsg::Peak {
                    token,
                    bytes: run.peak,
                },
            ),
            None => {
                let t = &run.tally;
                let sections: Vec<SectionId> = (t.members.iter().enumerate())
                    .map(|(c, &m)| SectionId::from_token(token + c as u64, m as u32))
                    .collect();
                let report = CreationReport {
                    tag: run.tag,
                    id: sections[0],
                    sections,
                    algorithm: run.algorithm,
                    parent_pes: t.pes,
                    members: t.members.iter().sum(),
                    messages: t.messages,
                    bytes: t.bytes,
                    time_us: t.time_us(),
                    max_pe_state_bytes: run.peak,
                };
                ctx.send_to_callback(&run.on_report, Encoded(report));
            }
        }
        Ok(())
    }

    /// The sections this PE is a member of, by id.
    pub fn sections(&self) -> &HashMap<SectionId, Section> {
        &self.sections
    }

    /// The section `id` as this PE sees it.
    fn view(&self, id: SectionId) -> Result<Section, HostError> {
        self.sections
            .get(&id)
            .cloned()
            .ok_or(HostError::UnknownParent { pe: self.me, id })
    }

    /// Send a merge message that is not protocol traffic of a started run; returns
    /// its bytes.
    fn send_counted(&self, ctx: &mut Ctx, to: Pe, msg: BuilderMsg) -> u64 {
        let bytes = encoded_len(&msg);
        self.send(ctx, to, msg);
        bytes
    }

    /// A merge request climbs section a to its root, which offers the merge to b.
    fn on_merge_ask(
        &mut self,
        ctx: &mut Ctx,
        req: MergeRequest,
        messages: u64,
        bytes: u64,
    ) -> Result<(), HostError> {
        if !(kary::MIN_K..=kary::MAX_K).contains(&req.k) {
            return Err(HostError::BadK(req.k));
        }
        let a = self.view(req.a)?;
        // Counts are fixed-width in bincode, so a message's size does not depend on
        // the counts it carries: size it with its own message counted, then add.
        if let Some(p) = a.parent {
            let mut ask = BuilderMsg::MergeAsk {
                req,
                messages: messages + 1,
                bytes,
            };
            let size = encoded_len(&ask);
            if let BuilderMsg::MergeAsk { bytes, .. } = &mut ask {
                *bytes += size;
            }
            self.send(ctx, p, ask);
            return Ok(());
        }
        let token = SectionId::token(self.me, self.counter);
        self.counter += 1;
        let to = req.b_contact;
        self.pending_merges.insert(token, (req.clone(), a.clone()));
        let mut offer = BuilderMsg::Offer {
            token,
            req,
            a_root: self.me,
            a_size: a.size,
            messages: messages + 1,
            bytes,
        };
        let size = encoded_len(&offer);
        if let BuilderMsg::Offer { bytes, .. } = &mut offer {
            *bytes += size;
        }
        self.send(ctx, to, offer);
        Ok(())
    }

    /// The offer climbs section b to its root, which accepts and starts b's side.
    fn on_offer(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: MergeRequest,
        a_root: Pe,
        a_size: u32,
        cost: (u64, u64),
    ) -> Result<(), HostError> {
        let b = self.view(req.b)?;
        if let Some(p) = b.parent {
            let mut offer = BuilderMsg::Offer {
                token,
                req,
                a_root,
                a_size,
                messages: cost.0 + 1,
                bytes: cost.1,
            };
            let size = encoded_len(&offer);
            if let BuilderMsg::Offer { bytes, .. } = &mut offer {
                *bytes += size;
            }
            self.send(ctx, p, offer);
            return Ok(());
        }
        let size = a_size + b.size;
        let accept = BuilderMsg::Accept {
            token,
            size,
            b_root: self.me,
        };
        let accept_bytes = self.send_counted(ctx, a_root, accept);
        let route = Route {
            old: b.clone(),
            offset: a_size,
            link: Some(a_root),
        };
        let mut tally = Tally::joined(Some(0), 1, ctx.now());
        tally.messages += cost.0;
        tally.bytes += cost.1;
        tally.message(accept_bytes);
        self.start_merge(ctx, token, req, route, Some(a_root), size, tally)
    }

    /// A's root hears that b accepted, and starts a's side.
    fn on_accept(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        size: u32,
        b_root: Pe,
    ) -> Result<(), HostError> {
        let (req, a) = match self.pending_merges.remove(&token) {
            Some(r) => r,
            None => {
                return Err(HostError::UnknownCreation {
                    pe: self.me,
                    token,
                    what: "merge acceptance",
                })
            }
        };
        let route = Route {
            old: a,
            offset: 0,
            link: Some(b_root),
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        self.start_merge(ctx, token, req, route, None, size, tally)
    }

    /// A member hears of the merge from its old parent.
    fn on_go(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: MergeRequest,
        old: SectionId,
        offset: u32,
        size: u32,
    ) -> Result<(), HostError> {
        if self.runs.contains_key(&token) {
            return Err(HostError::Overlap { pe: self.me, token });
        }
        let route = Route {
            old: self.view(old)?,
            offset,
            link: None,
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        let up = route.old.parent;
        self.start_merge(ctx, token, req, route, up, size, tally)
    }

    /// Start this member's part: tell its old children, then announce itself to the
    /// intermediaries of its merged rank and its parent's.
    #[allow(clippy::too_many_arguments)]
    fn start_merge(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: MergeRequest,
        route: Route,
        up: Option<Pe>,
        size: u32,
        mut tally: Tally,
    ) -> Result<(), HostError> {
        let mut down = route.old.children.clone();
        for &c in &down {
            let go = BuilderMsg::Go {
                token,
                req: req.clone(),
                old: route.old.id,
                offset: route.offset,
                size,
            };
            tally.message(self.send_counted(ctx, c, go));
        }
        if route.old.parent.is_none() && route.offset == 0 {
            // A's root: B's root hangs below it in the joined tree.
            down.extend(route.link);
        }
        let meta = Meta {
            on_member: req.on_member,
            on_report: req.on_report,
            tag: req.tag,
        };
        let way = Way::Joined(route);
        self.launch(ctx, token, meta, way, (up, down), (size, req.k), tally)
    }

    /// Start a member's part in a merge or rebuild: its run over the joined or
    /// patched tree, and its announcements to the intermediaries of its new rank and
    /// its parent's.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        meta: Meta,
        way: Way,
        (up, down): (Option<Pe>, Vec<Pe>),
        (size, k): (u32, u32),
        tally: Tally,
    ) -> Result<(), HostError> {
        let salt = mix64(token ^ SALT);
        let (state, sends) = MergeState::start(self.me, way, size, k, salt, token);
        let run = Run {
            on_member: meta.on_member,
            on_report: meta.on_report,
            tag: meta.tag,
            algorithm: None,
            parts: vec![Part {
                proto: Engine::Merge(Box::new(state)),
                inter: Intermediaries::default(),
                finished: false,
            }],
            up,
            down,
            tally,
            children_done: 0,
            finished: false,
            sent_up: false,
            released: false,
            peak: 0,
            children_peaked: 0,
        };
        self.runs.insert(token, run);
        let mut queue = VecDeque::new();
        for (dest, msg) in sends {
            if let Some(msg) = self.route(ctx, token, dest, msg)? {
                queue.push_back((self.me, self.me, 0, Wire::ToIntermediary(msg), 0));
            }
        }
        self.replay(ctx, token, queue)
    }

    /// Forward a routed announcement one hop, counting it; returns it if it is for
    /// this PE.
    fn route(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        dest: u32,
        msg: ToIntermediary,
    ) -> Result<Option<ToIntermediary>, HostError> {
        let me = self.me;
        let run = self.run(token, "routed announcement")?;
        let Some(Part {
            proto: Engine::Merge(state),
            ..
        }) = run.parts.first()
        else {
            return Err(unexpected(me, me, token, "routed announcement"));
        };
        match state.route().next_hop(dest)? {
            Hop::Here => Ok(Some(msg)),
            Hop::To(pe) => {
                let fwd = BuilderMsg::Routed { token, dest, msg };
                let bytes = encoded_len(&fwd);
                run.tally.message(bytes);
                self.send(ctx, pe, fwd);
                Ok(None)
            }
        }
    }

    /// A PE failed: for every section it was a tree neighbour of this member in,
    /// go to the rendezvous of the repair.
    fn on_failed(&mut self, ctx: &mut Ctx, dead_pe: Pe) -> Result<(), HostError> {
        self.failed.insert(dead_pe);
        let mut ids: Vec<SectionId> = self.sections.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let view = &self.sections[&id];
            let Some((_, dead)) = rebuild::role(view, dead_pe) else {
                continue;
            };
            let expect = rebuild::parties(dead, view.size, view.k);
            let Some(at) = rebuild::rendezvous(id, dead, self.npes, &self.failed) else {
                continue;
            };
            let hello = BuilderMsg::Hello {
                sid: id,
                dead,
                rank: view.rank,
                pe: self.me,
                expect,
            };
            self.send(ctx, at, hello);
        }
        Ok(())
    }

    /// At the rendezvous: once every neighbour of the dead rank is here, name the
    /// new section and introduce them to each other.
    fn on_hello(
        &mut self,
        ctx: &mut Ctx,
        sid: SectionId,
        dead: u32,
        party: (u32, Pe),
        expect: u32,
    ) -> Result<(), HostError> {
        let met = self.meetings.entry((sid, dead)).or_default();
        met.push(party);
        if met.len() < expect as usize {
            return Ok(());
        }
        let mut parties = self.meetings.remove(&(sid, dead)).unwrap_or_default();
        parties.sort_unstable();
        let token = SectionId::token(self.me, self.counter);
        self.counter += 1;
        for &(_, pe) in &parties {
            let links = BuilderMsg::Links {
                token,
                sid,
                dead,
                parties: parties.clone(),
            };
            self.send(ctx, pe, links);
        }
        Ok(())
    }

    /// A neighbour of the dead rank learns the others, patches its links and starts.
    fn on_links(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        sid: SectionId,
        dead: u32,
        parties: Vec<(u32, Pe)>,
    ) -> Result<(), HostError> {
        let old = self.view(sid)?;
        // Its own hello and this introduction are the rebuild's first messages.
        let hello = BuilderMsg::Hello {
            sid,
            dead,
            rank: old.rank,
            pe: self.me,
            expect: parties.len() as u32,
        };
        let links = BuilderMsg::Links {
            token,
            sid,
            dead,
            parties: parties.clone(),
        };
        let mut tally = Tally::joined(Some(0), 1, ctx.now());
        tally.message(encoded_len(&hello));
        tally.message(encoded_len(&links));
        let k = old.k;
        let others = parties.iter().copied().filter(|p| p.0 != old.rank);
        let (mut adopted, mut across) = (Vec::new(), None);
        if kary::parent(old.rank, k) != Some(dead) {
            adopted = others.collect();
        } else if dead > 0 {
            let p = kary::parent(dead, k);
            across = parties.iter().find(|q| Some(q.0) == p).map(|q| q.1);
        } else if old.rank == 1 {
            adopted = others.collect();
        } else {
            across = parties.iter().find(|q| q.0 == 1).map(|q| q.1);
        }
        let patched = Patched {
            old,
            dead,
            adopted,
            across,
        };
        self.start_rebuild(ctx, token, patched, None, tally)
    }

    /// Any other survivor hears which rank died.
    fn on_notice(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        sid: SectionId,
        dead: u32,
        from: Pe,
    ) -> Result<(), HostError> {
        let patched = Patched {
            old: self.view(sid)?,
            dead,
            adopted: Vec::new(),
            across: None,
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        self.start_rebuild(ctx, token, patched, Some(from), tally)
    }

    /// Spread the notice over the old tree (the dead PE aside), then run.
    fn start_rebuild(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        patched: Patched,
        from: Option<Pe>,
        mut tally: Tally,
    ) -> Result<(), HostError> {
        let sid = patched.old.id;
        let dead_pe = |pe: &Pe| self.failed.contains(pe);
        let next: Vec<Pe> = (patched.old.parent.iter().chain(&patched.old.children))
            .copied()
            .filter(|pe| Some(*pe) != from && !dead_pe(pe))
            .collect();
        for pe in next {
            let notice = BuilderMsg::Notice {
                token,
                sid,
                dead: patched.dead,
                from: self.me,
            };
            tally.message(self.send_counted(ctx, pe, notice));
        }
        let meta = self
            .meta
            .get(&sid)
            .cloned()
            .ok_or(HostError::UnknownParent {
                pe: self.me,
                id: sid,
            })?;
        let (up, down) = (patched.up(), patched.down());
        let size = (patched.size(), patched.old.k);
        self.launch(
            ctx,
            token,
            meta,
            Way::Patched(patched),
            (up, down),
            size,
            tally,
        )
    }
}
