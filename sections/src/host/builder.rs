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
}

/// A protocol message on its way inside one PE: (from, to, part, message, bytes to
/// count on arrival).
type Item = (Pe, Pe, u32, Wire<ProtoMsg>, u64);

/// One section's state machine of a creation on this PE.
struct Part {
    proto: Proto,
    inter: Intermediaries,
    finished: bool,
}

/// One PE's part in one creation.
struct Run {
    req: Request,
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
    runs: HashMap<u64, Run>,
    early: HashMap<u64, Vec<Early>>,
    orphans: HashMap<(u64, u32), Intermediaries>,
    outgoing: Vec<(Pe, u32, Wire<ProtoMsg>)>,
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

fn is_answer(w: &Wire<ProtoMsg>) -> bool {
    matches!(w, Wire::FromIntermediary(_))
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
                proto: algo::protocol(req.algorithm, setup)?,
                inter: self.orphans.remove(&(token, part)).unwrap_or_default(),
                finished: false,
            });
        }
        let mut queue = VecDeque::new();
        for (i, p) in parts.iter_mut().enumerate() {
            let mut out = Outbox::new();
            p.proto
                .start(&mut out)
                .map_err(|source| HostError::Protocol { token, source })?;
            queue.extend(out.into_iter().map(|(to, w)| (self.me, to, i as u32, w, 0)));
        }
        let run = Run {
            req,
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
                (Some((p, _)), Wire::Role(m)) => p
                    .proto
                    .handle(from, m, &mut out)
                    .map_err(|source| HostError::Protocol { token, source })?,
                (Some((p, tally)), Wire::FromIntermediary(m)) => {
                    if bytes > 0 {
                        tally.message(bytes);
                    }
                    p.proto
                        .found(from, m, &mut out)
                        .map_err(|source| HostError::Protocol { token, source })?
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
        let cb = local_callback(&run.req.on_member, me);
        for section in placed {
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
                    tag: run.req.tag,
                    id: sections[0],
                    sections,
                    algorithm: run.req.algorithm,
                    parent_pes: t.pes,
                    members: t.members.iter().sum(),
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
