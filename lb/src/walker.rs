//! The walker group chare: one member per PE; the members of a walker group step its
//! Markov chain together (each does its share of an item, then the group
//! synchronises with an allreduce over its range section) and regroup as the
//! strategy says.

use crate::regroup::{self, GroupLoad};
use crate::strategy::Strategy;
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Pe, Reducer, SendOpts};
use chorus_sections::collectives::{Collectives, Member, RangeMember, TreeMember};
use chorus_sections::range::RangeSection;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Branching factor of the walker groups' section trees.
const K: u32 = 4;

/// What every walker member starts from.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound = "S: Strategy")]
pub struct WalkerInit<S> {
    /// The load-balancing strategy.
    pub strategy: S,
    /// PEs per initial group.
    pub group_size: u32,
    /// Cost of one work item on one PE (a group of g PEs takes item/g per item).
    pub item: Duration,
    /// Items of every chain, one chain per initial group.
    pub chains: Arc<Vec<u64>>,
    /// The job's section collectives.
    pub collectives: Collectives,
    /// Where chain ends go, as `Encoded<ChainEnd>`: a callback rather than the
    /// driver's proxy, so walkers need not know the chare that drives them.
    pub on_chain_end: Callback,
    /// The walkers' own entries, for collective callbacks.
    pub entries: WalkerEntries<S>,
    /// Survive PE failures (`--sim-kill`): leaders replicate each commit to the
    /// driver, and walkers stop and report their state when a PE fails.
    pub fault_tolerant: bool,
    /// Where fault-tolerant walkers send `Encoded<Snapshot>` and `Encoded<Commit>`.
    pub on_recovery: Callback,
}

/// Entries of the walker chare that collectives deliver to.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct WalkerEntries<S> {
    /// The result of a step's allreduce.
    pub stepped: Entry<Walker<S>, Vec<u64>>,
    /// The result of a load exchange among all PEs.
    pub exchanged: Entry<Walker<S>, Vec<u64>>,
    /// A PE failed.
    pub pe_failed: Entry<Walker<S>, Pe>,
}

impl<S> Clone for WalkerEntries<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for WalkerEntries<S> {}

/// A chain's end, as its group's leader reports it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChainEnd {
    /// The chain.
    pub chain: u32,
    /// When its last item ended, seconds since the job began.
    pub at: f64,
    /// Items run.
    pub items: u64,
    /// Sum of the indices of the items run (checks each ran once).
    pub index_sum: u64,
    /// The step ledger: the XOR of [`ledger_entry`] over the items committed, so an
    /// item committed twice or never changes it.
    pub ledger: u64,
}

/// A chain's item `item` as the step ledger records it.
pub fn ledger_entry(chain: u32, item: u64) -> u64 {
    chorus_core::mix64(u64::from(chain) << 40 ^ item ^ 0x1ED6_E500)
}

/// What a fault-tolerant walker sends the driver.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Recovery {
    /// A walker stopped for recovery number `epoch` (the PEs failed so far), with the
    /// chain state it holds.
    Snapshot {
        /// Recovery number.
        epoch: u64,
        /// The walker's PE.
        pe: Pe,
        /// Its group's committed state.
        state: GroupState,
    },
    /// A group leader committed a step: the chain's replica at the driver.
    Commit(GroupState),
}

/// Messages of a walker member.
#[derive(Clone, Serialize, Deserialize)]
pub enum WalkerMsg {
    /// This PE's share of the current item is done (in recovery epoch `.0`).
    Worked(u64),
    /// Per member in rank order: [epoch, item index, n, n requests as (first, last)].
    Stepped(Vec<u64>),
    /// Per group leader in PE order: [epoch, first, last, chain or u64::MAX, left,
    /// next item, items done, index sum, ledger].
    Exchanged(Vec<u64>),
    /// A finished group (PEs first..=last) asks to merge.
    MergeRequest {
        /// The group's first world PE.
        first: u32,
        /// The group's last world PE.
        last: u32,
        /// The recovery epoch it was sent in (a request of an earlier one is stale).
        epoch: u64,
    },
    /// This PE now belongs to a busy group (sent in recovery epoch `.1`).
    Joined(GroupState, u64),
    /// Contribute this PE's regroup count to the callback.
    Report(Callback),
    /// A PE failed (fault-tolerant walkers only).
    PeFailed(Pe),
    /// Recovery `epoch` is over: walk on in the group of PEs first..=last (the
    /// survivors among them), with the chain state given, or idle with none.
    Resume {
        /// Recovery number.
        epoch: u64,
        /// The group's first world PE.
        first: u32,
        /// The group's last world PE.
        last: u32,
        /// The chain's committed state, if the group has one.
        state: Option<GroupState>,
    },
}

impl WalkerMsg {
    /// True for the messages a walker ignores while it waits for the driver's Resume
    /// (`recovery.rs`).
    fn paused_by_recovery(&self) -> bool {
        matches!(
            self,
            WalkerMsg::Worked(_)
                | WalkerMsg::Stepped(_)
                | WalkerMsg::Exchanged(_)
                | WalkerMsg::MergeRequest { .. }
                | WalkerMsg::Joined(..)
        )
    }
}

/// A busy group's shared state, as new members receive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupState {
    /// The group's first world PE.
    pub first: u32,
    /// The group's last world PE.
    pub last: u32,
    /// The chain, or u32::MAX for none.
    pub chain: u32,
    /// Items left.
    pub left: u64,
    /// The next item's index.
    pub next_item: u64,
    /// Items committed.
    pub items: u64,
    /// Sum of their indices.
    pub index_sum: u64,
    /// Their step ledger.
    pub ledger: u64,
}

/// Priority of a member's own "share done" message: after merge requests (smaller
/// runs first), which may have arrived while the share was computed.
const AFTER_REQUESTS: i32 = 1;

/// Fixed-point scale of the work shares PEs report (2^32 per item).
pub const WORK_UNIT: f64 = 4_294_967_296.0;

/// One PE's walker.
pub struct Walker<S> {
    init: WalkerInit<S>,
    me: Pe,
    npes: u32,
    first: u32,
    last: u32,
    /// The chain this PE's group walks (None once it has ended).
    chain: Option<u32>,
    left: u64,
    next_item: u64,
    items: u64,
    index_sum: u64,
    steps_since_exchange: u32,
    /// Merge requests this PE received and its group has not yet taken in.
    held: Vec<(u32, u32)>,
    /// A group that took this PE's group in before this PE saw its chain end: the
    /// group's first member forwards the request when it sees the last step's result,
    /// and the taker's `Joined` can overtake that result on its way to a slower member.
    joined_early: Option<GroupState>,
    regroups: u64,
    /// Items' worth of work this PE has done (a share of 1/g per step in a group of g).
    work_share: f64,
    ledger: u64,
    /// PEs reported failed: at most the job's PEs. Their number is the recovery
    /// epoch, which salts the sections made after each failure.
    dead: BTreeSet<Pe>,
    /// Stopped for a recovery, until the driver's `Resume`.
    recovering: bool,
}

impl<S: Strategy> Chare for Walker<S> {
    type Init = WalkerInit<S>;
    type Msg = WalkerMsg;

    fn create(init: WalkerInit<S>, ctx: &mut Ctx) -> Self {
        let me = ctx.my_pe();
        let npes = ctx.num_pes() as u32;
        let chain = me / init.group_size;
        let first = chain * init.group_size;
        let left = init.chains.get(chain as usize).copied().unwrap_or(0);
        let mut w = Walker {
            me,
            npes,
            first,
            last: (first + init.group_size - 1).min(npes - 1),
            chain: Some(chain),
            left,
            next_item: 0,
            items: 0,
            index_sum: 0,
            steps_since_exchange: 0,
            held: Vec::new(),
            joined_early: None,
            regroups: 0,
            work_share: 0.0,
            ledger: 0,
            dead: BTreeSet::new(),
            recovering: false,
            init,
        };
        if w.init.fault_tolerant {
            let g = Self::proxy(ctx);
            ctx.on_pe_failure(Callback::group_member(&g, me, w.init.entries.pe_failed));
        }
        if left == 0 {
            w.chain_ended(ctx);
        } else {
            w.step(ctx);
        }
        w
    }

    fn handle(&mut self, msg: WalkerMsg, ctx: &mut Ctx) {
        if self.recovering && msg.paused_by_recovery() {
            // The driver's Resume restarts every group from committed state.
            return;
        }
        match msg {
            WalkerMsg::PeFailed(pe) => self.pe_failed(pe, ctx),
            WalkerMsg::Resume {
                epoch,
                first,
                last,
                state,
            } => self.resume(epoch, (first, last), state, ctx),
            // A share of a step cut by a failure: the Resume started another.
            WalkerMsg::Worked(epoch) if epoch != self.epoch() => {}
            WalkerMsg::Worked(_) => self.synchronise(ctx),
            WalkerMsg::Stepped(v) => self.stepped(&v, ctx),
            WalkerMsg::Exchanged(v) => self.exchanged(&v, ctx),
            // The partition a stale request or join was made in is gone.
            WalkerMsg::MergeRequest { epoch, .. } | WalkerMsg::Joined(_, epoch)
                if epoch != self.epoch() => {}
            WalkerMsg::MergeRequest { first, last, .. } => self.merge_request(first, last, ctx),
            WalkerMsg::Joined(g, _) => match (self.chain, &self.joined_early) {
                (None, _) => self.join(g, ctx),
                (Some(_), None) => self.joined_early = Some(g),
                (Some(c), Some(first)) => panic!(
                    "PE {} was asked to join group {}..={} while walking chain {c} and \
                     already taken in by group {}..={}: a PE would be in two groups",
                    self.me, g.first, g.last, first.first, first.last
                ),
            },
            WalkerMsg::Report(cb) => {
                let share = (self.work_share * WORK_UNIT).round() as u64;
                if self.init.fault_tolerant {
                    // A reduction cannot pass a failed PE: answer the driver alone.
                    let v = vec![u64::from(self.me), self.regroups, share];
                    ctx.send_to_callback(&cb, v);
                } else {
                    ctx.contribute(vec![self.regroups, share], Reducer::Concat, cb)
                }
            }
        }
    }
}

impl<S: Strategy> Walker<S> {
    fn proxy(ctx: &Ctx) -> GroupProxy<Walker<S>> {
        ctx.this_group::<Walker<S>>()
            .expect("a walker runs as a group member")
    }

    fn callback(&self, ctx: &Ctx, entry: Entry<Walker<S>, Vec<u64>>) -> Callback {
        Callback::group_member(&Self::proxy(ctx), self.me, entry)
    }

    /// This PE's member of the group of PEs first..=last: a range section until a
    /// PE fails, then a fresh section of the survivors per recovery epoch.
    fn section(&self, first: u32, last: u32) -> Member {
        if self.dead.is_empty() {
            let world = RangeSection::world(self.npes, K).expect("a job has PEs");
            let range = world
                .split(first, last, 1)
                .expect("groups are ranges of the world");
            return RangeMember::new(range, self.me)
                .expect("a walker is a member of its group")
                .into();
        }
        let roster = self.alive(first, last);
        TreeMember::of_roster(roster, K, self.me, self.epoch())
            .expect("a walker is a member of its group")
            .into()
    }

    /// The PEs first..=last not known to have failed.
    fn alive(&self, first: u32, last: u32) -> Vec<Pe> {
        (first..=last).filter(|p| !self.dead.contains(p)).collect()
    }

    /// The recovery epoch: how many PEs have failed.
    fn epoch(&self) -> u64 {
        self.dead.len() as u64
    }

    /// The group's leader: its first live PE.
    fn leader(&self) -> Option<Pe> {
        (self.first..=self.last).find(|p| !self.dead.contains(p))
    }

    /// Run this PE's share of the next item, then synchronise the group — through
    /// the queue, behind any merge request that came in during the work, so the
    /// request joins this step's allreduce rather than the next one's.
    fn step(&mut self, ctx: &mut Ctx) {
        let g = self.last - self.first + 1;
        self.work_share += 1.0 / f64::from(g);
        ctx.work(self.init.item / g);
        Self::proxy(ctx).send_with(
            ctx,
            self.me,
            WalkerMsg::Worked(self.epoch()),
            SendOpts::prio(AFTER_REQUESTS),
        );
    }

    /// Offer the item index and the held merge requests to the group's allreduce.
    fn synchronise(&mut self, ctx: &mut Ctx) {
        let mut v = vec![self.epoch(), self.next_item, self.held.len() as u64];
        for &(f, l) in &self.held {
            v.extend([u64::from(f), u64::from(l)]);
        }
        let member = self.section(self.first, self.last);
        let cb = self.callback(ctx, self.init.entries.stepped);
        self.init
            .collectives
            .allreduce(ctx, member, v, Reducer::Concat, cb)
            .expect("a walker's allreduce is well formed");
    }

    fn stepped(&mut self, v: &[u64], ctx: &mut Ctx) {
        let members = self.alive(self.first, self.last).len() as u32;
        let Some((item, requests)) = parse_step(v, members, self.epoch()) else {
            // A step of an earlier epoch, which the recovery superseded.
            return;
        };
        self.left -= 1;
        self.next_item += 1;
        self.items += 1;
        self.index_sum += item;
        self.ledger ^= ledger_entry(self.chain.unwrap_or(u32::MAX), item);
        self.steps_since_exchange += 1;
        if self.init.fault_tolerant && self.leader() == Some(self.me) {
            let commit = Recovery::Commit(self.state());
            ctx.send_to_callback(&self.init.on_recovery, Encoded(commit));
        }
        if self.left == 0 {
            self.chain_ended(ctx);
            return;
        }
        if self.init.strategy.merge_when_done() {
            self.take_in(requests, ctx);
        }
        match self.init.strategy.exchange_every() {
            Some(i) if self.steps_since_exchange >= i => self.exchange(ctx),
            _ => self.step(ctx),
        }
    }

    /// Take in every requesting group adjacent on the left, in turn; the member that
    /// held a request tells the newcomers.
    fn take_in(&mut self, mut requests: Vec<(u32, u32)>, ctx: &mut Ctx) {
        let mut absorbed = Vec::new();
        while let Some(i) = requests.iter().position(|&(_, l)| l + 1 == self.first) {
            let r = requests.swap_remove(i);
            self.first = r.0;
            absorbed.push(r);
        }
        if absorbed.is_empty() {
            return;
        }
        self.regroups += 1;
        ctx.trace_event("lb::merge");
        let state = self.state();
        let proxy = Self::proxy(ctx);
        for r in absorbed {
            if let Some(pos) = self.held.iter().position(|&h| h == r) {
                self.held.swap_remove(pos);
                for pe in r.0..=r.1 {
                    if !self.dead.contains(&pe) {
                        proxy.send(ctx, pe, WalkerMsg::Joined(state, self.epoch()));
                    }
                }
            }
        }
    }

    fn state(&self) -> GroupState {
        GroupState {
            first: self.first,
            last: self.last,
            chain: self.chain.unwrap_or(u32::MAX),
            left: self.left,
            next_item: self.next_item,
            items: self.items,
            index_sum: self.index_sum,
            ledger: self.ledger,
        }
    }

    /// Walk on with the group that took this PE's group in.
    fn join(&mut self, g: GroupState, ctx: &mut Ctx) {
        self.adopt(g);
        self.regroups += 1;
        self.steps_since_exchange = 0;
        self.step(ctx);
    }

    fn adopt(&mut self, g: GroupState) {
        self.first = g.first;
        self.last = g.last;
        self.chain = (g.chain != u32::MAX).then_some(g.chain);
        self.left = g.left;
        self.next_item = g.next_item;
        self.items = g.items;
        self.index_sum = g.index_sum;
        self.ledger = g.ledger;
    }

    /// The group's chain has no item left: report it, then do what the strategy says.
    fn chain_ended(&mut self, ctx: &mut Ctx) {
        if let (Some(chain), true) = (self.chain, self.leader() == Some(self.me)) {
            let end = ChainEnd {
                chain,
                at: ctx.now(),
                items: self.items,
                index_sum: self.index_sum,
                ledger: self.ledger,
            };
            ctx.send_to_callback(&self.init.on_chain_end, Encoded(end));
        }
        self.chain = None;
        self.left = 0;
        if self.init.strategy.merge_when_done() {
            // Requests from the left follow this group to the right: there they
            // become adjacent once this group has been taken in.
            let held = std::mem::take(&mut self.held);
            for (f, l) in held {
                self.forward(f, l, ctx);
            }
            if self.leader() == Some(self.me) {
                self.forward(self.first, self.last, ctx);
            }
        }
        if self.init.strategy.exchange_every().is_some() {
            self.exchange(ctx);
        }
        if let Some(g) = self.joined_early.take() {
            self.join(g, ctx);
        }
    }

    /// Pass a merge request to the first live PE right of this group (nowhere past
    /// the end).
    fn forward(&self, first: u32, last: u32, ctx: &mut Ctx) {
        let right = (self.last + 1..self.npes).find(|p| !self.dead.contains(p));
        if let Some(to) = right {
            let epoch = self.epoch();
            let msg = WalkerMsg::MergeRequest { first, last, epoch };
            Self::proxy(ctx).send(ctx, to, msg);
        }
    }

    fn merge_request(&mut self, first: u32, last: u32, ctx: &mut Ctx) {
        if self.chain.is_some() {
            self.held.push((first, last));
        } else {
            self.forward(first, last, ctx);
        }
    }

    /// A PE failed: stop, and send the driver this PE's committed chain state for
    /// recovery number `epoch`. Whatever was in flight is dropped: its results carry
    /// the old epoch, and the driver restarts every group from committed state.
    fn pe_failed(&mut self, pe: Pe, ctx: &mut Ctx) {
        if !self.dead.insert(pe) {
            return;
        }
        self.recovering = true;
        let snapshot = Recovery::Snapshot {
            epoch: self.epoch(),
            pe: self.me,
            state: self.state(),
        };
        ctx.send_to_callback(&self.init.on_recovery, Encoded(snapshot));
    }

    /// The driver ends recovery `epoch`: walk on in group first..=last from `state`,
    /// or idle.
    fn resume(
        &mut self,
        epoch: u64,
        (first, last): (u32, u32),
        state: Option<GroupState>,
        ctx: &mut Ctx,
    ) {
        if epoch != self.epoch() {
            // Another PE failed since: that recovery's Resume follows.
            return;
        }
        self.recovering = false;
        self.held.clear();
        self.joined_early = None;
        self.steps_since_exchange = 0;
        self.regroups += 1;
        match state {
            Some(g) => {
                self.adopt(GroupState { first, last, ..g });
                self.step(ctx);
            }
            None => {
                (self.first, self.last) = (first, last);
                self.chain = None;
                self.left = 0;
                self.chain_ended(ctx);
            }
        }
    }

    /// Join the next load exchange among all PEs.
    fn exchange(&mut self, ctx: &mut Ctx) {
        self.steps_since_exchange = 0;
        let v = if self.leader() == Some(self.me) {
            let s = self.state();
            vec![
                self.epoch(),
                u64::from(s.first),
                u64::from(s.last),
                self.chain.map_or(u64::MAX, u64::from),
                s.left,
                s.next_item,
                s.items,
                s.index_sum,
                s.ledger,
            ]
        } else {
            Vec::new()
        };
        let member = self.section(0, self.npes - 1);
        let cb = self.callback(ctx, self.init.entries.exchanged);
        self.init
            .collectives
            .allreduce(ctx, member, v, Reducer::Concat, cb)
            .expect("a walker's exchange is well formed");
    }

    fn exchanged(&mut self, v: &[u64], ctx: &mut Ctx) {
        let Some(states) = parse_exchange(v, self.epoch()) else {
            return;
        };
        let before: Vec<GroupLoad> = states.iter().map(|s| s.load()).collect();
        if !before.iter().any(GroupLoad::busy) {
            return;
        }
        let after = self.init.strategy.regroup(&before);
        // Every PE computes the same partition from the same exchange, so one check
        // catches a strategy's mistake; on every PE it was O(groups) work per PE.
        let checked = match self.me {
            0 => regroup::check(&before, &after, self.npes),
            _ => Ok(()),
        };
        if let Err(e) = checked {
            panic!(
                "strategy {} regrouped wrongly: {e}",
                self.init.strategy.name()
            );
        }
        let mine = after
            .iter()
            .find(|g| g.first <= self.me && self.me <= g.last)
            .copied()
            .expect("a checked partition covers every PE");
        if (mine.first, mine.last) != (self.first, self.last) {
            self.regroups += 1;
        }
        let walked = states
            .iter()
            .find(|s| s.chain != u32::MAX && Some(s.chain) == mine.chain);
        match walked {
            Some(s) if mine.busy() => {
                self.adopt(GroupState {
                    first: mine.first,
                    last: mine.last,
                    ..*s
                });
                self.step(ctx);
            }
            _ => {
                self.first = mine.first;
                self.last = mine.last;
                self.chain = None;
                self.left = 0;
                self.exchange(ctx);
            }
        }
    }
}

impl GroupState {
    fn load(&self) -> GroupLoad {
        GroupLoad {
            first: self.first,
            last: self.last,
            chain: (self.chain != u32::MAX).then_some(self.chain),
            left: self.left,
        }
    }
}

/// The item index the members agree on and the requests they hold; None for the
/// result of a step of another recovery epoch than `epoch`.
fn parse_step(v: &[u64], members: u32, epoch: u64) -> Option<(u64, Vec<(u32, u32)>)> {
    if v.first() != Some(&epoch) {
        return None;
    }
    let mut item = None;
    let mut requests = Vec::new();
    let mut i = 0;
    for _ in 0..members {
        let (Some(&it), Some(&n)) = (v.get(i + 1), v.get(i + 2)) else {
            panic!("a step's allreduce result is short: {v:?}");
        };
        match item {
            None => item = Some(it),
            Some(x) if x != it => panic!("group members disagree on the item: {x} and {it}"),
            Some(_) => {}
        }
        i += 3;
        for _ in 0..n {
            requests.push((v[i] as u32, v[i + 1] as u32));
            i += 2;
        }
    }
    if i != v.len() {
        panic!("a step's allreduce result has more than {members} members: {v:?}");
    }
    Some((item.unwrap_or(0), requests))
}

/// The leaders' states of an exchange; None for one of another recovery epoch.
fn parse_exchange(v: &[u64], epoch: u64) -> Option<Vec<GroupState>> {
    let chunks = v.chunks_exact(9);
    if chunks.clone().any(|c| c[0] != epoch) {
        return None;
    }
    Some(
        chunks
            .map(|c| GroupState {
                first: c[1] as u32,
                last: c[2] as u32,
                chain: if c[3] == u64::MAX {
                    u32::MAX
                } else {
                    c[3] as u32
                },
                left: c[4],
                next_item: c[5],
                items: c[6],
                index_sum: c[7],
                ledger: c[8],
            })
            .collect(),
    )
}
