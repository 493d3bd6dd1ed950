//! The builder group: one member per PE runs that PE's part of every creation over
//! chorus messages, keyed by the creation's token.

use crate::hash::mix64;
use crate::host::algo::{self, Proto, ProtoMsg};
use crate::host::spec::{CreationReport, HostError, Parent, Request};
use crate::host::tally::Tally;
use crate::kary;
use crate::neighbour_discovery::Intermediaries;
use crate::protocol::{Outbox, Protocol, Setup, Wire};
use crate::section::{Placement, Section, SectionId};
use chorus_core::{Callback, Chare, Ctx, Encoded, GroupProxy, Pe};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

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
        /// The protocol's message.
        wire: Wire<ProtoMsg>,
    },
    /// A parent-tree subtree has finished; its figures.
    Done {
        /// The creation.
        token: u64,
        /// The subtree's figures.
        tally: Tally,
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
    Wire(Pe, Wire<ProtoMsg>, u64),
    Done(Tally),
}

/// One PE's part in one creation.
struct Run {
    req: Request,
    proto: Proto,
    up: Option<Pe>,
    down: Vec<Pe>,
    inter: Intermediaries,
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
    runs: HashMap<u64, Run>,
    early: HashMap<u64, Vec<Early>>,
    orphans: HashMap<u64, Intermediaries>,
}

impl Chare for Builder {
    type Init = ();
    type Msg = BuilderMsg;

    fn create(_: (), ctx: &mut Ctx) -> Self {
        Builder {
            me: ctx.my_pe(),
            npes: ctx.num_pes() as u32,
            counter: 0,
            proxy: ctx.this_group(),
            sections: HashMap::new(),
            runs: HashMap::new(),
            early: HashMap::new(),
            orphans: HashMap::new(),
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

impl Builder {
    /// Ask the builder on this PE to create a section.
    pub fn create_section(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: Request) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, BuilderMsg::Create(req));
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
            BuilderMsg::Proto { token, from, wire } => {
                let bytes = match &wire {
                    Wire::FromIntermediary(_) => encoded_len(&BuilderMsg::Proto {
                        token,
                        from,
                        wire: wire.clone(),
                    }),
                    _ => 0,
                };
                let mut queue = VecDeque::new();
                queue.push_back((from, self.me, wire, bytes));
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
        self.counter += 1;
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
        let member = req.membership.joins(self.me);
        let setup = Setup {
            me: self.me,
            world: self.npes,
            member,
            k: req.k,
            tree_parent: up,
            tree_children: down.clone(),
            generation,
            salt: mix64(token ^ SALT),
            token,
        };
        let proto = algo::protocol(req.algorithm, setup)?;
        let run = Run {
            req,
            proto,
            up,
            down,
            inter: self.orphans.remove(&token).unwrap_or_default(),
            tally: Tally::joined(member, ctx.now()),
            children_done: 0,
            finished: false,
            sent_up: false,
            released: false,
            peak: 0,
            children_peaked: 0,
        };
        let mut out = Outbox::new();
        let mut run = run;
        run.proto
            .start(&mut out)
            .map_err(|source| HostError::Protocol { token, source })?;
        self.runs.insert(token, run);
        let mut queue: VecDeque<_> = out.into_iter().map(|(to, w)| (self.me, to, w, 0)).collect();
        for early in self.early.remove(&token).unwrap_or_default() {
            match early {
                Early::Wire(from, wire, bytes) => queue.push_back((from, self.me, wire, bytes)),
                Early::Done(tally) => {
                    let run = self.run(token, "done")?;
                    run.tally.merge(&tally);
                    run.children_done += 1;
                }
            }
        }
        self.pump(ctx, token, queue)
    }

    /// Deliver protocol messages until none is left for this PE: (from, to, message,
    /// bytes to count at the receiver).
    fn pump(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        mut queue: VecDeque<(Pe, Pe, Wire<ProtoMsg>, u64)>,
    ) -> Result<(), HostError> {
        while let Some((from, to, wire, bytes)) = queue.pop_front() {
            if to != self.me {
                self.send_wire(ctx, token, to, wire);
                continue;
            }
            let mut out = Outbox::new();
            let me = self.me;
            match (self.runs.get_mut(&token), wire) {
                (Some(run), Wire::ToIntermediary(m)) => run.inter.handle(m, &mut out),
                (None, Wire::ToIntermediary(m)) => {
                    let inter = self.orphans.entry(token).or_default();
                    inter.handle(m, &mut out);
                    if inter.is_idle() {
                        self.orphans.remove(&token);
                    }
                }
                (Some(run), Wire::Role(m)) => run
                    .proto
                    .handle(from, m, &mut out)
                    .map_err(|source| HostError::Protocol { token, source })?,
                (Some(run), Wire::FromIntermediary(m)) => {
                    if from != me {
                        run.tally.message(bytes);
                    }
                    run.proto
                        .found(from, m, &mut out)
                        .map_err(|source| HostError::Protocol { token, source })?
                }
                (None, wire) => {
                    let early = Early::Wire(from, wire, bytes);
                    self.early.entry(token).or_default().push(early);
                }
            }
            queue.extend(out.into_iter().map(|(to, w)| (me, to, w, 0)));
        }
        self.check_finished(ctx, token)
    }

    /// Send one protocol message; the sender counts it unless it is an intermediary's
    /// answer (those are counted where they arrive, which is always a member).
    fn send_wire(&mut self, ctx: &mut Ctx, token: u64, to: Pe, wire: Wire<ProtoMsg>) {
        let counted = !matches!(wire, Wire::FromIntermediary(_));
        let msg = BuilderMsg::Proto {
            token,
            from: self.me,
            wire,
        };
        if counted {
            let bytes = encoded_len(&msg);
            if let Some(run) = self.runs.get_mut(&token) {
                run.tally.message(bytes);
            }
        }
        self.send(ctx, to, msg);
    }

    fn check_finished(&mut self, ctx: &mut Ctx, token: u64) -> Result<(), HostError> {
        let me = self.me;
        let now = ctx.now();
        let Some(run) = self.runs.get_mut(&token) else {
            return Ok(());
        };
        if run.finished || !run.proto.finished() {
            return Ok(());
        }
        run.finished = true;
        run.tally.last_done = run.tally.last_done.max(now);
        if let Some(section) = run.proto.placement().map(section_of) {
            let cb = local_callback(&run.req.on_member, me);
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
        let own = run.proto.peak_state_bytes() + run.inter.peak_state_bytes();
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
                let report = CreationReport {
                    tag: run.req.tag,
                    id: SectionId::from_token(token, t.members as u32),
                    algorithm: run.req.algorithm,
                    parent_pes: t.pes,
                    members: t.members,
                    messages: t.messages,
                    bytes: t.bytes,
                    time_us: t.time_us(),
                    max_pe_state_bytes: run.peak,
                };
                ctx.send_to_callback(&run.req.on_report, Encoded(report));
            }
        }
        Ok(())
    }

    /// The sections this PE is a member of, by id.
    pub fn sections(&self) -> &HashMap<SectionId, Section> {
        &self.sections
    }
}
