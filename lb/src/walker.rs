//! The walker group chare: one member per PE; the members of a walker group step its
//! Markov chain together (each does its share of an item, then the group
//! synchronises with an allreduce over its range section) and regroup as the
//! strategy says.

use crate::regroup::{self, GroupLoad};
use crate::strategy::Strategy;
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Pe, Reducer, SendOpts};
use chorus_sections::collectives::{Collectives, RangeMember};
use chorus_sections::range::RangeSection;
use serde::{Deserialize, Serialize};
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
}

/// Entries of the walker chare that collectives deliver to.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct WalkerEntries<S> {
    /// The result of a step's allreduce.
    pub stepped: Entry<Walker<S>, Vec<u64>>,
    /// The result of a load exchange among all PEs.
    pub exchanged: Entry<Walker<S>, Vec<u64>>,
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
}

/// Messages of a walker member.
#[derive(Clone, Serialize, Deserialize)]
pub enum WalkerMsg {
    /// This PE's share of the current item is done.
    Worked,
    /// Per member in rank order: [item index, n, n requests as (first, last)].
    Stepped(Vec<u64>),
    /// Per group leader in PE order: [first, last, chain or u64::MAX, left, next item,
    /// items done, index sum].
    Exchanged(Vec<u64>),
    /// A finished group (PEs first..=last) asks to merge.
    MergeRequest {
        /// The group's first world PE.
        first: u32,
        /// The group's last world PE.
        last: u32,
    },
    /// This PE now belongs to a busy group.
    Joined(GroupState),
    /// Contribute this PE's regroup count to the callback.
    Report(Callback),
}

/// A busy group's shared state, as new members receive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupState {
    first: u32,
    last: u32,
    chain: u32,
    left: u64,
    next_item: u64,
    items: u64,
    index_sum: u64,
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
            init,
        };
        if left == 0 {
            w.chain_ended(ctx);
        } else {
            w.step(ctx);
        }
        w
    }

    fn handle(&mut self, msg: WalkerMsg, ctx: &mut Ctx) {
        match msg {
            WalkerMsg::Worked => self.synchronise(ctx),
            WalkerMsg::Stepped(v) => self.stepped(&v, ctx),
            WalkerMsg::Exchanged(v) => self.exchanged(&v, ctx),
            WalkerMsg::MergeRequest { first, last } => self.merge_request(first, last, ctx),
            WalkerMsg::Joined(g) => match (self.chain, &self.joined_early) {
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
                ctx.contribute(vec![self.regroups, share], Reducer::Concat, cb)
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

    fn section(&self, first: u32, last: u32) -> RangeMember {
        let world = RangeSection::world(self.npes, K).expect("a job has PEs");
        let range = world
            .split(first, last, 1)
            .expect("groups are ranges of the world");
        RangeMember::new(range, self.me).expect("a walker is a member of its group")
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
            WalkerMsg::Worked,
            SendOpts::prio(AFTER_REQUESTS),
        );
    }

    /// Offer the item index and the held merge requests to the group's allreduce.
    fn synchronise(&mut self, ctx: &mut Ctx) {
        let mut v = vec![self.next_item, self.held.len() as u64];
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
        let (item, requests) = parse_step(v, self.last - self.first + 1);
        self.left -= 1;
        self.next_item += 1;
        self.items += 1;
        self.index_sum += item;
        self.steps_since_exchange += 1;
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
                    proxy.send(ctx, pe, WalkerMsg::Joined(state));
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
    }

    /// The group's chain has no item left: report it, then do what the strategy says.
    fn chain_ended(&mut self, ctx: &mut Ctx) {
        if let (Some(chain), true) = (self.chain, self.me == self.first) {
            let end = ChainEnd {
                chain,
                at: ctx.now(),
                items: self.items,
                index_sum: self.index_sum,
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
            if self.me == self.first {
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

    /// Pass a merge request to the PE right of this group (nowhere past the end).
    fn forward(&self, first: u32, last: u32, ctx: &mut Ctx) {
        if self.last + 1 < self.npes {
            Self::proxy(ctx).send(ctx, self.last + 1, WalkerMsg::MergeRequest { first, last });
        }
    }

    fn merge_request(&mut self, first: u32, last: u32, ctx: &mut Ctx) {
        if self.chain.is_some() {
            self.held.push((first, last));
        } else {
            self.forward(first, last, ctx);
        }
    }

    /// Join the next load exchange among all PEs.
    fn exchange(&mut self, ctx: &mut Ctx) {
        self.steps_since_exchange = 0;
        let v = if self.me == self.first {
            let s = self.state();
            vec![
                u64::from(s.first),
                u64::from(s.last),
                self.chain.map_or(u64::MAX, u64::from),
                s.left,
                s.next_item,
                s.items,
                s.index_sum,
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
        let states = parse_exchange(v);
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

/// The item index the members agree on and the requests they hold.
fn parse_step(v: &[u64], members: u32) -> (u64, Vec<(u32, u32)>) {
    let mut item = None;
    let mut requests = Vec::new();
    let mut i = 0;
    for _ in 0..members {
        let (Some(&it), Some(&n)) = (v.get(i), v.get(i + 1)) else {
            panic!("a step's allreduce result is short: {v:?}");
        };
        match item {
            None => item = Some(it),
            Some(x) if x != it => panic!("group members disagree on the item: {x} and {it}"),
            Some(_) => {}
        }
        i += 2;
        for _ in 0..n {
            requests.push((v[i] as u32, v[i + 1] as u32));
            i += 2;
        }
    }
    if i != v.len() {
        panic!("a step's allreduce result has more than {members} members: {v:?}");
    }
    (item.unwrap_or(0), requests)
}

fn parse_exchange(v: &[u64]) -> Vec<GroupState> {
    v.chunks_exact(7)
        .map(|c| GroupState {
            first: c[0] as u32,
            last: c[1] as u32,
            chain: if c[2] == u64::MAX {
                u32::MAX
            } else {
                c[2] as u32
            },
            left: c[3],
            next_item: c[4],
            items: c[5],
            index_sum: c[6],
        })
        .collect()
}
