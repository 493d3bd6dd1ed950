//! The merges part of the builder: a noncollective merge's request climbs A, the
//! offer climbs B, and both roots start their trees; each member then runs its part
//! (`create.rs`, `launch`).

use super::create::Launch;
use super::*;

/// Messages of merges.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MergeMsg {
    /// From the application to the builder on a member of `req.a`: merge two sections.
    Merge(MergeRequest),
    /// A merge request on its way up section `a` to its root, with its cost so far.
    Ask {
        /// The request.
        req: MergeRequest,
        /// Messages and bytes so far.
        cost: Cost,
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
        /// Messages and bytes so far.
        cost: Cost,
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
}

/// The messages and bytes a merge has cost before it started.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Cost {
    /// Messages.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A merge this PE offered as A's root.
struct Offered {
    req: MergeRequest,
    /// This PE's view of A.
    a: Section,
}

/// The merges this PE offered as A's root and B has not accepted yet.
#[derive(Default)]
pub(super) struct Merges {
    /// Removed when B accepts, or when this PE frees A (a merge B refuses is
    /// reported there), so merges in flight.
    pending: HashMap<u64, Offered>,
}

impl Merges {
    /// Forget the merges offered from section `id`, freed here.
    pub(super) fn forget(&mut self, id: SectionId) {
        self.pending.retain(|_, o| o.a.id != id);
    }

    /// How many merges are offered.
    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }
}

/// Where a member's part in a merge starts: its old tree, and the merged tree.
struct MergeStart {
    token: u64,
    req: MergeRequest,
    route: Route,
    up: Option<Pe>,
    size: u32,
}

/// Count a request or offer with its own message: counts are fixed-width in
/// bincode, so a message's size does not depend on the counts it carries.
fn with_own_size(mut msg: MergeMsg) -> MergeMsg {
    let size = encoded_len(&msg);
    if let MergeMsg::Ask { cost, .. } | MergeMsg::Offer { cost, .. } = &mut msg {
        cost.bytes += size;
    }
    msg
}

/// The cost so far and one more message.
fn one_more(cost: Cost) -> Cost {
    Cost {
        messages: cost.messages + 1,
        bytes: cost.bytes,
    }
}

impl Builder {
    /// Handle a merge message.
    pub(super) fn on_merge_msg(&mut self, ctx: &mut Ctx, msg: MergeMsg) -> Result<(), HostError> {
        match msg {
            MergeMsg::Merge(req) => self.on_merge_ask(ctx, req, Cost::default()),
            MergeMsg::Ask { req, cost } => self.on_merge_ask(ctx, req, cost),
            MergeMsg::Offer {
                token,
                req,
                a_root,
                a_size,
                cost,
            } => self.on_offer(ctx, token, req, (a_root, a_size), cost),
            MergeMsg::Accept {
                token,
                size,
                b_root,
            } => self.on_accept(ctx, token, size, b_root),
            MergeMsg::Go {
                token,
                req,
                old,
                offset,
                size,
            } => self.on_go(ctx, token, req, old, offset, size),
        }
    }

    /// A merge request climbs section a to its root, which offers the merge to b.
    fn on_merge_ask(
        &mut self,
        ctx: &mut Ctx,
        req: MergeRequest,
        cost: Cost,
    ) -> Result<(), HostError> {
        if !(kary::MIN_K..=kary::MAX_K).contains(&req.k) {
            return Err(HostError::BadK(req.k));
        }
        let a = self.view(req.a)?;
        let cost = one_more(cost);
        if let Some(p) = a.parent {
            self.send(ctx, p, with_own_size(MergeMsg::Ask { req, cost }));
            return Ok(());
        }
        let token = SectionId::token(self.me, self.counter);
        self.counter += 1;
        let to = req.b_contact;
        let offered = Offered {
            req: req.clone(),
            a: a.clone(),
        };
        self.merges.pending.insert(token, offered);
        let offer = MergeMsg::Offer {
            token,
            req,
            a_root: self.me,
            a_size: a.size,
            cost,
        };
        self.send(ctx, to, with_own_size(offer));
        Ok(())
    }

    /// The offer climbs section b to its root, which accepts and starts b's side.
    fn on_offer(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: MergeRequest,
        (a_root, a_size): (Pe, u32),
        cost: Cost,
    ) -> Result<(), HostError> {
        let b = self.view(req.b)?;
        if let Some(p) = b.parent {
            let offer = MergeMsg::Offer {
                token,
                req,
                a_root,
                a_size,
                cost: one_more(cost),
            };
            self.send(ctx, p, with_own_size(offer));
            return Ok(());
        }
        let size = a_size + b.size;
        let accept = MergeMsg::Accept {
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
        tally.messages += cost.messages;
        tally.bytes += cost.bytes;
        tally.message(accept_bytes);
        let start = MergeStart {
            token,
            req,
            route,
            up: Some(a_root),
            size,
        };
        self.start_merge(ctx, start, tally)
    }

    /// A's root hears that b accepted, and starts a's side.
    fn on_accept(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        size: u32,
        b_root: Pe,
    ) -> Result<(), HostError> {
        let Some(Offered { req, a }) = self.merges.pending.remove(&token) else {
            return Err(HostError::UnknownCreation {
                pe: self.me,
                token,
                what: "merge acceptance",
            });
        };
        let route = Route {
            old: a,
            offset: 0,
            link: Some(b_root),
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        let start = MergeStart {
            token,
            req,
            route,
            up: None,
            size,
        };
        self.start_merge(ctx, start, tally)
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
        if self.creations.runs.contains_key(&token) {
            return Err(HostError::Overlap { pe: self.me, token });
        }
        let route = Route {
            old: self.view(old)?,
            offset,
            link: None,
        };
        let tally = Tally::joined(Some(0), 1, ctx.now());
        let up = route.old.parent;
        let start = MergeStart {
            token,
            req,
            route,
            up,
            size,
        };
        self.start_merge(ctx, start, tally)
    }

    /// Start this member's part: tell its old children, then announce itself to the
    /// intermediaries of its merged rank and its parent's.
    fn start_merge(
        &mut self,
        ctx: &mut Ctx,
        start: MergeStart,
        mut tally: Tally,
    ) -> Result<(), HostError> {
        let MergeStart {
            token,
            req,
            route,
            up,
            size,
        } = start;
        let mut down = route.old.children.clone();
        for &c in &down {
            let go = MergeMsg::Go {
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
        let launch = Launch {
            token,
            meta,
            way: Way::Joined(route),
            up,
            down,
            size,
            k: req.k,
        };
        self.launch(ctx, launch, tally)
    }
}
