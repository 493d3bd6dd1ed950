//! Starting a creation and running its state machines: the start, early
//! messages, local delivery and sending (one message each, or bundled for a split);
//! the runs of merges and rebuilds (`launch`), and announcements routed by rank.

use super::creations::Routed;
use super::split::{Call, HeldSplit};
use super::*;

impl Builder {
    pub(super) fn on_create(&mut self, ctx: &mut Ctx, mut req: Request) -> Result<(), HostError> {
        req.validate()?;
        req.normalize(self.npes)?;
        let token = SectionId::token(self.me, self.counter);
        self.counter += req.membership.sections();
        match req.parent {
            // A dead PE forwards no broadcast: after a failure the start floods the
            // tree of the PEs this one knows alive, and the creation runs over them.
            Parent::World if !self.failed.is_empty() => {
                let dead: Vec<Pe> = self.failed.iter().copied().collect();
                self.on_start(ctx, token, None, req, dead)
            }
            Parent::World => {
                let start = CreationMsg::Start {
                    token,
                    from: None,
                    req,
                    dead: Vec::new(),
                };
                self.proxy().broadcast(ctx, start.into());
                Ok(())
            }
            Parent::Section(id) => {
                if !self.kept.sections.contains_key(&id) {
                    return Err(self.missing(id));
                }
                self.on_start(ctx, token, None, req, Vec::new())
            }
        }
    }

    /// This PE's place in the parent's tree; `dead` are the PEs a creation from the
    /// world leaves out.
    pub(super) fn parent_tree(&self, req: &Request, dead: &[Pe]) -> Result<TreePlace, HostError> {
        if let Some(s) = survivors::view(self.me, self.npes, req.k, dead) {
            return Ok(TreePlace::of(&s));
        }
        match req.parent {
            Parent::World => Ok(TreePlace {
                up: kary::parent(self.me, req.k),
                down: kary::children(self.me, self.npes, req.k).collect(),
                generation: kary::generation(self.me, req.k),
            }),
            Parent::Section(id) => {
                let s = self
                    .kept
                    .sections
                    .get(&id)
                    .ok_or_else(|| self.missing(id))?;
                Ok(TreePlace::of(s))
            }
        }
    }

    pub(super) fn on_start(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        from: Option<Pe>,
        req: Request,
        dead: Vec<Pe>,
    ) -> Result<(), HostError> {
        if self.creations.aborted.contains(token) {
            return Ok(());
        }
        if let Some(pe) = self.unknown_failure(&req, &dead) {
            // The start left out fewer PEs than have failed: its tree cannot finish.
            return self.abort_start(ctx, token, &req, &dead, pe);
        }
        // The neighbour that sent it may have finished the parent's creation before
        // this PE did.
        if let (Parent::Section(id), Some(from)) = (req.parent, from) {
            if !self.kept.sections.contains_key(&id) {
                return self.hold(token, from, id, req);
            }
        }
        let place = self.parent_tree(&req, &dead)?;
        if matches!(req.parent, Parent::Section(_)) || !dead.is_empty() {
            // Flood the parent section's tree from wherever the creation began.
            let next = place.up.iter().chain(&place.down).copied();
            for n in next.filter(|&n| Some(n) != from) {
                let start = CreationMsg::Start {
                    token,
                    from: Some(self.me),
                    req: req.clone(),
                    dead: dead.clone(),
                };
                self.send(ctx, n, start);
            }
        }
        // A split by colour and key runs once this PE has said its colour and key.
        let call = match req.membership {
            Membership::Called { seq, .. } => match self.splits.calls.remove(&(req.parent, seq)) {
                Some(call) => Some(*call),
                None => {
                    let held = HeldSplit { token, req };
                    self.splits
                        .held
                        .insert((held.req.parent, seq), Box::new(held));
                    return Ok(());
                }
            },
            _ => None,
        };
        let (parent, call_started) = (req.parent, call.is_some());
        self.join(ctx, token, req, call, &dead)?;
        // A free of the parent may have waited for this PE's call to start.
        if let (Parent::Section(id), true) = (parent, call_started) {
            self.free_if_ready(ctx, id);
        }
        Ok(())
    }

    /// Take part in creation `token` (the start has passed on): make this PE's state
    /// machines and run them. `call` is this PE's own part in a split by colour and key;
    /// `dead` the PEs a creation from the world leaves out.
    pub(super) fn join(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: Request,
        call: Option<Call>,
        dead: &[Pe],
    ) -> Result<(), HostError> {
        let place = self.parent_tree(&req, dead)?;
        let (world, way) = self.run_way(&req, dead)?;
        let sections = req.membership.sections();
        let then = call.as_ref().and_then(|c| c.then.clone());
        let (colour, key, on_member) = self.own_part(&req, call)?;
        let me = self.me;
        let orphans = &mut self.creations.orphans;
        let parts = (0..sections)
            .map(|part| -> Result<Part, HostError> {
                let setup = Setup {
                    me,
                    world,
                    member: colour == Some(part),
                    k: req.k,
                    tree_parent: place.up,
                    tree_children: place.down.clone(),
                    generation: place.generation,
                    salt: mix64((token + u64::from(part)) ^ SALT),
                    token: token + u64::from(part),
                };
                Ok(Part {
                    proto: Engine::Algo(Box::new(algo::protocol(req.algorithm, setup)?)),
                    inter: orphans.remove(&(token, part)).unwrap_or_default(),
                    finished: false,
                })
            })
            .collect::<Result<Vec<Part>, HostError>>()?;
        let meta = Meta {
            on_member,
            on_report: req.on_report,
            tag: req.tag,
        };
        let tally = Tally::joined(colour, sections, ctx.now());
        let run = Run {
            keep: req.keep,
            key,
            then,
            algorithm: Some(req.algorithm),
            up: place.up,
            down: place.down,
            ..Run::new(meta, way, parts, tally)
        };
        self.creations.runs.insert(token, Box::new(run));
        self.start_parts(ctx, token, sections)
    }

    /// How a run names intermediaries: the size of the id space, and the tree their
    /// ranks are routed over (None: ids are PEs).
    fn run_way(&self, req: &Request, dead: &[Pe]) -> Result<(u32, Option<Way>), HostError> {
        // From a section, intermediaries are named by parent rank and reached by
        // routing over the parent's tree, so no PE outside the parent takes part; the
        // world without its dead PEs is such a section.
        let old = match req.parent {
            Parent::World => survivors::view(self.me, self.npes, req.k, dead),
            Parent::Section(id) => Some(self.view(id)?),
        };
        Ok(match old {
            Some(old) => {
                let size = old.size;
                let route = Route {
                    old,
                    offset: 0,
                    link: None,
                };
                (size, Some(Way::Joined(route)))
            }
            None => (self.npes, None),
        })
    }

    /// This PE's colour, key and member callback: from its own call in a split by
    /// colour and key, else from the request.
    fn own_part(
        &self,
        req: &Request,
        call: Option<Call>,
    ) -> Result<(Option<u32>, Option<i64>, Callback), HostError> {
        let sections = req.membership.sections();
        match call {
            Some(Call {
                split, on_member, ..
            }) => {
                if split.colours != sections {
                    return Err(HostError::BadColours(format!(
                        "PE {} splits into {} colours, the parent's root into {sections}",
                        self.me, split.colours
                    )));
                }
                // Checked below `colours` (a split by any colour arrives here numbered).
                let colour = split.colour.and_then(|c| u32::try_from(c).ok());
                Ok((colour, Some(split.key), on_member))
            }
            None => Ok((req.membership.colour(self.me), None, req.on_member.clone())),
        }
    }

    /// Start the state machine of every section of run `token`, then take in what
    /// came early.
    fn start_parts(&mut self, ctx: &mut Ctx, token: u64, sections: u32) -> Result<(), HostError> {
        let mut queue = VecDeque::new();
        for part in 0..sections {
            let mut out = Outbox::new();
            let run = self.run(token, "start")?;
            if let Some(Engine::Algo(proto)) =
                run.parts.get_mut(part as usize).map(|p| &mut p.proto)
            {
                proto
                    .start(&mut out)
                    .map_err(|source| HostError::Protocol { token, source })?;
            }
            self.emit(ctx, token, part, out, &mut queue)?;
        }
        self.replay(ctx, token, queue)
    }

    /// Queue what a state machine produced; on a run that names intermediaries by
    /// rank, announcements are routed instead.
    fn emit(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        part: u32,
        out: Outbox<ProtoMsg>,
        queue: &mut VecDeque<Delivery>,
    ) -> Result<(), HostError> {
        let me = self.me;
        let routed = self
            .creations
            .runs
            .get(&token)
            .is_some_and(|r| r.way.is_some());
        for (to, wire) in out {
            match wire {
                Wire::ToIntermediary(msg) if routed => {
                    let routed = Routed {
                        token,
                        part,
                        dest: to,
                        msg,
                    };
                    if let Some(msg) = self.route(ctx, routed)? {
                        self.count_local(token, Phase::Announce);
                        queue.push_back(Delivery::announce_here(me, part, msg));
                    }
                }
                wire => {
                    if to == me {
                        self.count_local(token, phase_of(&wire));
                    }
                    queue.push_back(Delivery {
                        from: me,
                        to,
                        part,
                        wire,
                        bytes: 0,
                    })
                }
            }
        }
        Ok(())
    }

    /// Count a message of `phase` this PE sends itself (the paper's formulas count it).
    fn count_local(&mut self, token: u64, phase: Phase) {
        if let Some(run) = self.creations.runs.get_mut(&token) {
            run.tally.phase_local(phase);
        }
    }

    /// Take in what arrived before the run started here, then run.
    pub(super) fn replay(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        mut queue: VecDeque<Delivery>,
    ) -> Result<(), HostError> {
        for early in self.creations.early.remove(&token).unwrap_or_default() {
            match early {
                Early::Wire(delivery) => queue.push_back(delivery),
                Early::Done(tally) => {
                    let run = self.run(token, "done")?;
                    run.tally.merge(&tally);
                    run.children_done += 1;
                }
                Early::Routed(routed) => {
                    let part = routed.part;
                    if let Some(msg) = self.route(ctx, routed)? {
                        queue.push_back(Delivery::announce_here(self.me, part, msg));
                    }
                }
            }
        }
        self.pump(ctx, token, queue)
    }

    /// Deliver protocol messages until none is left for this PE, then send the rest.
    pub(super) fn pump(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        mut queue: VecDeque<Delivery>,
    ) -> Result<(), HostError> {
        let me = self.me;
        let now = ctx.now();
        while let Some(d) = queue.pop_front() {
            if d.to != me {
                self.creations.outgoing.push(d);
                continue;
            }
            let Delivery {
                from,
                part,
                wire,
                bytes,
                ..
            } = d;
            let mut out = Outbox::new();
            let phase = phase_of(&wire);
            let slot = self.creations.runs.get_mut(&token).and_then(|r| {
                let tally = &mut r.tally;
                tally.phase_seen(phase, now);
                r.parts.get_mut(part as usize).map(|p| (p, tally))
            });
            match (slot, wire) {
                (Some((p, _)), Wire::ToIntermediary(m)) => p.inter.handle(m, &mut out),
                (None, Wire::ToIntermediary(m)) => {
                    let orphans = &mut self.creations.orphans;
                    let inter = orphans.entry((token, part)).or_default();
                    inter.handle(m, &mut out);
                    if inter.is_idle() {
                        orphans.remove(&(token, part));
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
                        tally.phase_message(Phase::Answer, bytes);
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
                    let early = Delivery {
                        from,
                        to: me,
                        part,
                        wire,
                        bytes,
                    };
                    self.creations.keep_early(token, Early::Wire(early));
                }
            }
            self.emit(ctx, token, part, out, &mut queue)?;
        }
        self.flush(ctx, token);
        self.check_finished(ctx, token)
    }

    /// Send what the last handler produced: one message per protocol message, or for
    /// a split one message per destination. The sender counts what it sends unless
    /// it is only intermediaries' answers (those are counted where they arrive, which
    /// is always a member).
    pub(super) fn flush(&mut self, ctx: &mut Ctx, token: u64) {
        let mut outgoing = std::mem::take(&mut self.creations.outgoing);
        let split = !matches!(self.creations.runs.get(&token), Some(r) if r.parts.len() == 1);
        let mut msgs: Vec<(Pe, CreationMsg)> = Vec::new();
        let me = self.me;
        let single = |to: Pe, part: u32, wire: Wire<ProtoMsg>| {
            let msg = CreationMsg::Proto {
                token,
                from: me,
                part,
                wire,
            };
            (to, msg)
        };
        if split && outgoing.len() > 1 {
            let mut dests: Vec<Pe> = outgoing.iter().map(|o| o.to).collect();
            dests.sort_unstable();
            dests.dedup();
            let mut grouped: Vec<Vec<(u32, Wire<ProtoMsg>)>> = vec![Vec::new(); dests.len()];
            for d in outgoing.drain(..) {
                let at = dests.binary_search(&d.to).expect("collected above");
                grouped[at].push((d.part, d.wire));
            }
            for (to, mut parts) in dests.into_iter().zip(grouped) {
                if parts.len() == 1 {
                    let (part, wire) = parts.pop().expect("one part");
                    msgs.push(single(to, part, wire));
                } else {
                    let bundle = CreationMsg::Bundle {
                        token,
                        from: me,
                        parts,
                    };
                    msgs.push((to, bundle));
                }
            }
        } else {
            msgs.extend(outgoing.drain(..).map(|d| single(d.to, d.part, d.wire)));
        }
        self.creations.outgoing = outgoing;
        for (to, msg) in msgs {
            // A bundle counts once, in the phase of its first part that is no answer.
            let counted = match &msg {
                CreationMsg::Proto { wire, .. } => (!is_answer(wire)).then(|| phase_of(wire)),
                CreationMsg::Bundle { parts, .. } => parts
                    .iter()
                    .map(|(_, w)| w)
                    .find(|w| !is_answer(w))
                    .map(phase_of),
                _ => None,
            };
            if let Some(phase) = counted {
                let bytes = encoded_len(&msg);
                if let Some(run) = self.creations.runs.get_mut(&token) {
                    run.tally.phase_message(phase, bytes);
                }
            }
            self.send(ctx, to, msg);
        }
    }
    /// Start a member's part in a merge or rebuild: its run over the joined or
    /// patched tree, and its announcements to the intermediaries of its new rank and
    /// its parent's.
    pub(super) fn launch(
        &mut self,
        ctx: &mut Ctx,
        launch: Launch,
        tally: Tally,
    ) -> Result<(), HostError> {
        let Launch {
            token,
            meta,
            way,
            up,
            down,
            size,
            k,
        } = launch;
        let salt = mix64(token ^ SALT);
        let (state, sends) = MergeState::start(self.me, &way, size, k, salt, token);
        let part = Part {
            proto: Engine::Merge(Box::new(state)),
            inter: Intermediaries::default(),
            finished: false,
        };
        let run = Run {
            up,
            down,
            ..Run::new(meta, Some(way), vec![part], tally)
        };
        self.creations.runs.insert(token, Box::new(run));
        let mut queue = VecDeque::new();
        for (dest, msg) in sends {
            let routed = Routed {
                token,
                part: 0,
                dest,
                msg,
            };
            if let Some(msg) = self.route(ctx, routed)? {
                queue.push_back(Delivery::announce_here(self.me, 0, msg));
            }
        }
        self.replay(ctx, token, queue)
    }

    /// Forward a routed announcement one hop, counting it; returns it if it is for
    /// this PE.
    pub(super) fn route(
        &mut self,
        ctx: &mut Ctx,
        routed: Routed,
    ) -> Result<Option<ToIntermediary>, HostError> {
        let me = self.me;
        let token = routed.token;
        let run = self.run(token, "routed announcement")?;
        let Some(way) = &run.way else {
            return Err(unexpected(me, me, token, "routed announcement"));
        };
        match way.next_hop(routed.dest)? {
            Hop::Here => Ok(Some(routed.msg)),
            Hop::To(pe) => {
                let fwd = CreationMsg::Routed(routed);
                let bytes = encoded_len(&fwd);
                run.tally.phase_message(Phase::Announce, bytes);
                self.send(ctx, pe, fwd);
                Ok(None)
            }
        }
    }
}

/// A member's start of a run over a joined or patched tree (a merge or a rebuild).
pub(super) struct Launch {
    pub(super) token: u64,
    pub(super) meta: Meta,
    pub(super) way: Way,
    /// This member's parent and children in the new tree.
    pub(super) up: Option<Pe>,
    pub(super) down: Vec<Pe>,
    /// Members of the new section.
    pub(super) size: u32,
    /// Its tree's arity.
    pub(super) k: u32,
}

/// This PE's place in a parent's tree.
pub(super) struct TreePlace {
    pub(super) up: Option<Pe>,
    pub(super) down: Vec<Pe>,
    /// Depth in the tree.
    pub(super) generation: u32,
}

impl TreePlace {
    /// A member's place in its section's tree.
    fn of(s: &Section) -> Self {
        TreePlace {
            up: s.parent,
            down: s.children.clone(),
            generation: kary::generation(s.rank, s.k),
        }
    }
}
