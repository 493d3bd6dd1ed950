//! The builder's side of a noncollective merge: the request climbs A, the offer
//! climbs B, both roots start their trees, and announcements are routed by rank.

use super::*;

impl Builder {
    /// A merge request climbs section a to its root, which offers the merge to b.
    pub(super) fn on_merge_ask(
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
    pub(super) fn on_offer(
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
    pub(super) fn on_accept(
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
    pub(super) fn on_go(
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
    pub(super) fn start_merge(
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
    pub(super) fn launch(
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
        let (state, sends) = MergeState::start(self.me, &way, size, k, salt, token);
        let run = Run {
            keep: true,
            way: Some(way),
            on_member: meta.on_member,
            on_report: meta.on_report,
            tag: meta.tag,
            key: None,
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
        self.runs.insert(token, Box::new(run));
        let mut queue = VecDeque::new();
        for (dest, msg) in sends {
            if let Some(msg) = self.route(ctx, token, 0, dest, msg)? {
                queue.push_back((self.me, self.me, 0, Wire::ToIntermediary(msg), 0));
            }
        }
        self.replay(ctx, token, queue)
    }

    /// Forward a routed announcement one hop, counting it; returns it if it is for
    /// this PE.
    pub(super) fn route(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        part: u32,
        dest: u32,
        msg: ToIntermediary,
    ) -> Result<Option<ToIntermediary>, HostError> {
        let me = self.me;
        let run = self.run(token, "routed announcement")?;
        let Some(way) = &run.way else {
            return Err(unexpected(me, me, token, "routed announcement"));
        };
        match way.next_hop(dest)? {
            Hop::Here => Ok(Some(msg)),
            Hop::To(pe) => {
                let fwd = BuilderMsg::Routed {
                    token,
                    part,
                    dest,
                    msg,
                };
                let bytes = encoded_len(&fwd);
                run.tally.phase_message(Phase::Announce, bytes);
                self.send(ctx, pe, fwd);
                Ok(None)
            }
        }
    }
}
