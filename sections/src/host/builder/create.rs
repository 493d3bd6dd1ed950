//! Starting a creation and running its state machines: the start, early
//! messages, local delivery and sending (one message each, or bundled for a split).

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
                self.proxy().broadcast(
                    ctx,
                    BuilderMsg::Start {
                        token,
                        from: None,
                        req,
                        dead: Vec::new(),
                    },
                );
                Ok(())
            }
            Parent::Section(id) => {
                if !self.sections.contains_key(&id) {
                    return Err(self.missing(id));
                }
                self.on_start(ctx, token, None, req, Vec::new())
            }
        }
    }

    /// This PE's place in the parent's tree: (parent, children, generation); `dead`
    /// are the PEs a creation from the world leaves out.
    pub(super) fn parent_tree(
        &self,
        req: &Request,
        dead: &[Pe],
    ) -> Result<(Option<Pe>, Vec<Pe>, u32), HostError> {
        if let Some(s) = survivors::view(self.me, self.npes, req.k, dead) {
            return Ok((s.parent, s.children, kary::generation(s.rank, s.k)));
        }
        match req.parent {
            Parent::World => Ok((
                kary::parent(self.me, req.k),
                kary::children(self.me, self.npes, req.k).collect(),
                kary::generation(self.me, req.k),
            )),
            Parent::Section(id) => {
                let s = self.sections.get(&id).ok_or_else(|| self.missing(id))?;
                Ok((s.parent, s.children.clone(), kary::generation(s.rank, s.k)))
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
        if self.aborted.contains(token) {
            return Ok(());
        }
        if let Some(pe) = self.unknown_failure(&req, &dead) {
            // The start left out fewer PEs than have failed: its tree cannot finish.
            return self.abort_start(ctx, token, &req, &dead, pe);
        }
        // The neighbour that sent it may have finished the parent's creation before
        // this PE did.
        if let (Parent::Section(id), Some(from)) = (req.parent, from) {
            if !self.sections.contains_key(&id) {
                return self.hold(token, from, id, req);
            }
        }
        let (up, down, _) = self.parent_tree(&req, &dead)?;
        if matches!(req.parent, Parent::Section(_)) || !dead.is_empty() {
            // Flood the parent section's tree from wherever the creation began.
            for n in up.iter().chain(&down).copied().filter(|&n| Some(n) != from) {
                let start = BuilderMsg::Start {
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
            Membership::Called { seq, .. } => match self.calls.remove(&(req.parent, seq)) {
                Some(call) => Some(*call),
                None => {
                    self.held_splits
                        .insert((req.parent, seq), Box::new((token, req)));
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
        call: Option<(Split, Callback)>,
        dead: &[Pe],
    ) -> Result<(), HostError> {
        let (up, down, generation) = self.parent_tree(&req, dead)?;
        // From a section, intermediaries are named by parent rank and reached by
        // routing over the parent's tree, so no PE outside the parent takes part; the
        // world without its dead PEs is such a section.
        let survivors = survivors::view(self.me, self.npes, req.k, dead);
        let (world, way) = match req.parent {
            Parent::World => match survivors {
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
            },
            Parent::Section(id) => {
                let old = self.view(id)?;
                let size = old.size;
                let route = Route {
                    old,
                    offset: 0,
                    link: None,
                };
                (size, Some(Way::Joined(route)))
            }
        };
        let sections = req.membership.sections();
        let (colour, key, on_member) = match call {
            Some((split, on_member)) => {
                if split.colours != sections {
                    return Err(HostError::BadColours(format!(
                        "PE {} splits into {} colours, the parent's root into {sections}",
                        self.me, split.colours
                    )));
                }
                (split.colour, Some(split.key), on_member)
            }
            None => (req.membership.colour(self.me), None, req.on_member),
        };
        let mut parts = Vec::with_capacity(sections as usize);
        for part in 0..sections {
            let setup = Setup {
                me: self.me,
                world,
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
        let run = Run {
            keep: req.keep,
            way,
            on_member,
            on_report: req.on_report,
            tag: req.tag,
            key,
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
        self.runs.insert(token, Box::new(run));
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
        queue: &mut VecDeque<Item>,
    ) -> Result<(), HostError> {
        let me = self.me;
        let routed = self.runs.get(&token).is_some_and(|r| r.way.is_some());
        for (to, wire) in out {
            match wire {
                Wire::ToIntermediary(msg) if routed => {
                    if let Some(msg) = self.route(ctx, token, part, to, msg)? {
                        self.count_local(token, Phase::Announce);
                        queue.push_back((me, me, part, Wire::ToIntermediary(msg), 0));
                    }
                }
                wire => {
                    if to == me {
                        self.count_local(token, phase_of(&wire));
                    }
                    queue.push_back((me, to, part, wire, 0))
                }
            }
        }
        Ok(())
    }

    /// Count a message of `phase` this PE sends itself (the paper's formulas count it).
    fn count_local(&mut self, token: u64, phase: Phase) {
        if let Some(run) = self.runs.get_mut(&token) {
            run.tally.phase_local(phase);
        }
    }

    /// Take in what arrived before the run started here, then run.
    pub(super) fn replay(
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
                Early::Routed(part, dest, msg) => {
                    if let Some(msg) = self.route(ctx, token, part, dest, msg)? {
                        queue.push_back((self.me, self.me, part, Wire::ToIntermediary(msg), 0));
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
        mut queue: VecDeque<Item>,
    ) -> Result<(), HostError> {
        let me = self.me;
        let now = ctx.now();
        while let Some((from, to, part, wire, bytes)) = queue.pop_front() {
            if to != me {
                self.outgoing.push((to, part, wire));
                continue;
            }
            let mut out = Outbox::new();
            let phase = phase_of(&wire);
            let slot = self.runs.get_mut(&token).and_then(|r| {
                let tally = &mut r.tally;
                tally.phase_seen(phase, now);
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
                    let early = Early::Wire(from, part, wire, bytes);
                    self.early.entry(token).or_default().push(early);
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
            // A bundle counts once, in the phase of its first part that is no answer.
            let counted = match &msg {
                BuilderMsg::Proto { wire, .. } => (!is_answer(wire)).then(|| phase_of(wire)),
                BuilderMsg::Bundle { parts, .. } => parts
                    .iter()
                    .map(|(_, w)| w)
                    .find(|w| !is_answer(w))
                    .map(phase_of),
                _ => None,
            };
            if let Some(phase) = counted {
                let bytes = encoded_len(&msg);
                if let Some(run) = self.runs.get_mut(&token) {
                    run.tally.phase_message(phase, bytes);
                }
            }
            self.send(ctx, to, msg);
        }
    }
}
