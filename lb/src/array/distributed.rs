//! `distributed`: GrapevineLB (Menon and Kale, SC'13), every PE deciding for itself.
//!
//! 1. An all-reduce gives every PE the average load.
//! 2. Gossip: PEs below the average start a rumour of their load; in each round
//!    every PE whose view changed in the last 3 rounds (at first, the underloaded
//!    PEs) sends what it knows to `fanout` PEs chosen at random, for about log
//!    base `fanout` of the PEs rounds. A view is bounded to `known_cap` entries, a
//!    uniform sample of what the PE heard (the entries of least rank under a hash
//!    private to the PE), so messages stay small at any scale.
//! 3. Transfer, in phases: each starts with a max-reduction and sets a bar halfway
//!    between the maximum and the average (never under `avg * (1 + tolerance)`);
//!    PEs above the bar send elements, each to a known underloaded PE drawn with
//!    probability proportional to `1 - load / avg` (the paper's informed
//!    transfer): the heaviest element that fits the PE's known room and leaves the
//!    sender at or above the average, else the lightest that fits. The receiver
//!    accepts only if it stays under the bar (the paper's check, with Charm++'s
//!    DistributedLB's phase threshold); a refusal carries the receiver's load, and
//!    the sender draws again, up to `max_trials` times. A phase that moves nothing
//!    lowers the bar halfway to the average; at most `max_phases` phases. After a
//!    phase in which a donor stopped above the bar with nowhere to send, the next
//!    starts with a fresh gossip of the loads as they are (at most `refreshes`
//!    times): the first gossip's views go stale as their PEs fill.
//! 4. Coarse elements (Jacobi2D's hot blocks: one weighs almost a PE's average, so
//!    no PE has room for one under the bar until light elements leave it): a donor
//!    whose every element is too heavy for the drawn PE offers a swap, its lightest
//!    element for the fewest of the receiver's lighter ones that keep the receiver
//!    under the bar; and once a phase at the threshold moves nothing, phases in
//!    which a receiver takes an element if it stays below the donor's load, so each
//!    transfer lowers the larger of the two (refine's last phase, made local).
//!
//! The simulation is sequential and seeded: a round is one message latency, and
//! messages within a round apply in sender order, as if they arrived in that order;
//! in a transfer phase the senders take turns, one element each.

use super::plan::{lg, tree_depth, DecisionCost, Placement, Plan, Planner, PE_BYTES};
use super::refine::DEFAULT_TOLERANCE;
use chorus_core::api::balance::{LoadStats, Move};
use chorus_core::{mix64, ArrayStrategy};

/// Rounds a PE keeps sending its view after it last changed.
const LINGER: u32 = 3;

/// Epidemic load information and randomized transfer, as GrapevineLB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distributed {
    /// PEs each informed PE sends its view to per round.
    pub fanout: usize,
    /// Gossip rounds (0: log base `fanout` of the PEs, plus two).
    pub max_rounds: u32,
    /// Most underloaded PEs a view keeps.
    pub known_cap: usize,
    /// How far above the average a PE may stay.
    pub tolerance: f64,
    /// Draws of a receiver per element before a sender stops for the phase.
    pub max_trials: u32,
    /// Transfer phases, each lowering the bar for who gives.
    pub max_phases: u32,
    /// Most fresh gossips of the current loads, each after a phase that left a
    /// donor with nowhere to send.
    pub refreshes: u32,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for Distributed {
    fn default() -> Self {
        Distributed {
            fanout: 2,
            max_rounds: 0,
            known_cap: 32,
            tolerance: DEFAULT_TOLERANCE,
            max_trials: 8,
            max_phases: 8,
            refreshes: 3,
            seed: 0x6A09_E667_F3BC_C908,
        }
    }
}

impl ArrayStrategy for Distributed {
    fn name(&self) -> &str {
        "distributed"
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        self.plan(stats).moves
    }
}

/// A seeded stream of random numbers (splitmix64).
struct Rng(u64);

impl Rng {
    fn new(seed: u64, a: u64, b: u64) -> Self {
        Rng(mix64(seed ^ mix64(a.wrapping_mul(0x9E37_79B9) ^ (b << 32))))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One entry of a view: its rank in the holder's sample, the PE, its load.
#[derive(Debug, Clone, Copy)]
struct Known {
    rank: u64,
    pe: u32,
    load: f64,
}

/// What the gossip left: each PE's view, and its modelled cost.
struct Gossip {
    views: Vec<Vec<Known>>,
    cost: DecisionCost,
}

impl Planner for Distributed {
    fn plan(&self, stats: &LoadStats) -> Plan {
        let p = stats.num_pes;
        let mut pl = Placement::new(stats);
        if p < 2 {
            return Plan::default();
        }
        let avg = pl.loads.iter().sum::<f64>() / p as f64;
        // The all-reduce of the total load: up and down a binary tree.
        let mut cost = DecisionCost {
            critical_hops: 2 * tree_depth(p, 2),
            critical_ops: 2 * tree_depth(p, 2),
            total_ops: 2 * p as u64,
            messages: 2 * p as u64,
            ..DecisionCost::default()
        };
        if avg <= 0.0 {
            return Plan {
                moves: Vec::new(),
                cost,
            };
        }
        let gossip = self.gossip(&pl.loads, avg, self.round_limit(p));
        add(&mut cost, &gossip.cost);
        let threshold = avg * (1.0 + self.tolerance.max(0.0));
        let mut views = gossip.views;
        // A max-reduction starts each phase: only PEs above halfway between the
        // maximum and the average give, so the most loaded place their elements
        // first, while the lightest PEs still have room; a phase that moves nothing
        // lowers the bar halfway to the average (as Charm++'s DistributedLB).
        let mut target = f64::INFINITY;
        let (mut stuck, mut refreshed) = (false, 0);
        for _ in 0..self.max_phases.max(1) {
            let max = pl.loads.iter().copied().fold(0.0, f64::max);
            if max <= threshold {
                break;
            }
            // Donors left above the bar know of no room though thousands of PEs
            // still have some: at 131,072 PEs max/avg stopped at 1.172 without.
            if stuck && refreshed < self.refreshes {
                let fresh = self.gossip(&pl.loads, avg, self.refresh_rounds(p));
                add(&mut cost, &fresh.cost);
                views = fresh.views;
                refreshed += 1;
            }
            target = threshold.max(((max + avg) / 2.0).min(target));
            let moved;
            (moved, stuck) = self.phase(&mut pl, &mut views, avg, Bar::At(target), &mut cost);
            if moved == 0 {
                if target <= threshold {
                    break;
                }
                target = threshold.max((target + avg) / 2.0);
            }
        }
        for _ in 0..self.max_phases.max(1) {
            let max = pl.loads.iter().copied().fold(0.0, f64::max);
            if max <= threshold
                || self
                    .phase(
                        &mut pl,
                        &mut views,
                        avg,
                        Bar::Lowering(threshold),
                        &mut cost,
                    )
                    .0
                    == 0
            {
                break;
            }
        }
        Plan {
            moves: pl.moves(),
            cost,
        }
    }
}

/// Who gives and who may take in a transfer phase.
#[derive(Debug, Clone, Copy)]
enum Bar {
    /// PEs above the load give; a receiver takes what leaves it at or under it.
    At(f64),
    /// PEs above the load give; a receiver takes what leaves it below the donor.
    Lowering(f64),
}

impl Bar {
    /// The load above which a PE gives.
    fn target(self) -> f64 {
        match self {
            Bar::At(t) | Bar::Lowering(t) => t,
        }
    }

    /// Whether a receiver may end at `load` taking from a donor at `donor`.
    fn admits(self, load: f64, donor: f64) -> bool {
        match self {
            Bar::At(t) => load <= t,
            Bar::Lowering(_) => load < donor,
        }
    }
}

/// Add one phase's cost to a decision's.
fn add(total: &mut DecisionCost, phase: &DecisionCost) {
    total.critical_ops += phase.critical_ops;
    total.total_ops += phase.total_ops;
    total.critical_hops += phase.critical_hops;
    total.critical_bytes += phase.critical_bytes;
    total.messages += phase.messages;
    total.rounds += phase.rounds;
}

impl Distributed {
    /// The most gossip rounds for `p` PEs.
    fn round_limit(&self, p: usize) -> u32 {
        if self.max_rounds > 0 {
            return self.max_rounds;
        }
        tree_depth(p, self.fanout.max(2)) as u32 + 2
    }

    /// Rounds of a fresh gossip: every PE with room starts a rumour, so a view
    /// fills in about log base `fanout` of its cap rounds, not of the PEs.
    fn refresh_rounds(&self, p: usize) -> u32 {
        // Two rounds fewer left max/avg at 1.139 at 16,384 PEs; these reach 1.05.
        let fill = tree_depth(self.known_cap.max(1), self.fanout.max(2)) as u32 + 4;
        fill.min(self.round_limit(p))
    }

    /// Spread the underloaded PEs' loads by rumour, for at most `rounds` rounds.
    fn gossip(&self, loads: &[f64], avg: f64, rounds: u32) -> Gossip {
        let p = loads.len();
        let cap = self.known_cap.max(1);
        let salts: Vec<u64> = (0..p as u64).map(|pe| mix64(self.seed ^ pe)).collect();
        let mut views: Vec<Vec<Known>> = vec![Vec::new(); p];
        let mut news: Vec<u32> = Vec::new();
        for (pe, &load) in loads.iter().enumerate() {
            if load < avg {
                let rank = mix64(salts[pe] ^ pe as u64);
                views[pe].push(Known {
                    rank,
                    pe: pe as u32,
                    load,
                });
                news.push(pe as u32);
            }
        }
        let mut cost = DecisionCost::default();
        // A PE sends only in the `LINGER` rounds after its view last changed: a
        // view long unchanged has already gone out to enough PEs, and resending
        // it was most of the messages once every PE was informed.
        let mut listed: Vec<bool> = views.iter().map(|v| !v.is_empty()).collect();
        let mut last = vec![0u32; p];
        let mut took = vec![0u64; p];
        let fanout = self.fanout.clamp(1, p - 1);
        let mut round = 0;
        while !news.is_empty() && round < rounds {
            let mut next = Vec::new();
            let mut touched = Vec::new();
            let (mut worst_ops, mut worst_in) = (0u64, 0u64);
            for &sender in &news {
                let mut rng = Rng::new(self.seed, u64::from(sender), u64::from(round));
                let mut sent = 0;
                while sent < fanout {
                    let to = rng.below(p);
                    if to == sender as usize {
                        continue;
                    }
                    sent += 1;
                    let (view, incoming) = pair_mut(&mut views, to, sender as usize);
                    let (ops, grew) = merge(view, incoming, salts[to], cap);
                    if grew {
                        last[to] = round + 1;
                        if !listed[to] {
                            listed[to] = true;
                            next.push(to as u32);
                        }
                    }
                    if took[to] == 0 {
                        touched.push(to);
                    }
                    took[to] += ops;
                    worst_ops = worst_ops.max(took[to] + fanout as u64);
                    worst_in = worst_in.max(incoming.len() as u64 * PE_BYTES);
                    cost.total_ops += ops;
                    cost.messages += 1;
                }
            }
            for pe in touched {
                took[pe] = 0;
            }
            cost.critical_ops += worst_ops;
            cost.critical_bytes += worst_in;
            cost.critical_hops += 1;
            cost.rounds += 1;
            round += 1;
            news.retain(|&pe| {
                let keep = last[pe as usize] + LINGER > round;
                listed[pe as usize] = keep;
                keep
            });
            news.extend(next);
        }
        Gossip { views, cost }
    }

    /// One transfer phase: every PE above the bar's target sheds elements, donors
    /// taking turns, to PEs the bar admits; returns the transfers made and whether
    /// a donor stopped above the target with nowhere to send.
    fn phase(
        &self,
        pl: &mut Placement,
        views: &mut [Vec<Known>],
        avg: f64,
        bar: Bar,
        cost: &mut DecisionCost,
    ) -> (usize, bool) {
        let p = pl.loads.len();
        let target = bar.target();
        let mut donors: Vec<Donor> = (0..p)
            .filter(|&pe| pl.loads[pe] > target)
            .map(|pe| Donor::new(pl, pe, self.seed ^ cost.rounds as u64))
            .collect();
        let (mut moved, mut stuck) = (0, false);
        // Donors take turns, one element each, as their requests would interleave on
        // the machine: no donor finds every receiver it knows filled by the others.
        let mut active: Vec<usize> = (0..donors.len()).collect();
        while !active.is_empty() {
            active.retain(|&d| {
                let donor = &mut donors[d];
                if pl.loads[donor.pe] <= target {
                    return false;
                }
                let placed = self.shed_one(pl, donor, &mut views[donor.pe], avg, bar);
                moved += usize::from(placed);
                stuck |= !placed;
                placed
            });
        }
        let worst_ops = donors.iter().map(|d| d.ops).max().unwrap_or(0);
        let worst_chain = donors.iter().map(|d| d.chain).max().unwrap_or(0);
        let depth = tree_depth(p, 2);
        cost.total_ops += donors.iter().map(|d| d.ops).sum::<u64>() + 2 * p as u64;
        cost.messages += 2 * donors.iter().map(|d| d.sent).sum::<u64>() + 2 * p as u64;
        // The reduction of the maximum, then requests and answers, refusals retried
        // one after another.
        cost.critical_hops += 2 * depth + 2 * (1 + worst_chain);
        cost.critical_ops += 2 * depth + worst_ops;
        cost.rounds += 1;
        (moved, stuck)
    }

    /// Place one element of `donor` on a PE it knows, drawn by the paper's rule: the
    /// heaviest element that fits the drawn PE's known room (and leaves the donor at
    /// or above the average, if one does); if none fits, a swap (`Bar::At` only).
    /// False if no draw succeeded.
    fn shed_one(
        &self,
        pl: &mut Placement,
        donor: &mut Donor,
        view: &mut [Known],
        avg: f64,
        bar: Bar,
    ) -> bool {
        let have = pl.loads[donor.pe];
        let spare = have - avg;
        let mut refusals = 0;
        while refusals < self.max_trials {
            donor.ops += view.len() as u64 + donor.objs.len() as u64;
            // Nobody known is under the average any more: nowhere to send.
            let Some(i) = draw(view, avg, &mut donor.rng) else {
                break;
            };
            let known = view[i].load;
            let fits = |o: &u32| {
                let w = pl.weight[*o as usize];
                w > 0.0 && bar.admits(known + w, have)
            };
            let objs = &donor.objs;
            let pick = objs
                .iter()
                .position(|o| fits(o) && pl.weight[*o as usize] <= spare)
                .or_else(|| objs.iter().rposition(fits));
            let to = view[i].pe as usize;
            let Some(at) = pick else {
                if let Bar::At(cap) = bar {
                    if swap(pl, donor, to, cap) {
                        view[i].load = pl.loads[to];
                        return true;
                    }
                }
                refusals += 1;
                continue;
            };
            let obj = donor.objs[at];
            let w = pl.weight[obj as usize];
            donor.sent += 1;
            if bar.admits(pl.loads[to] + w, have) {
                pl.move_obj(obj, to as u32);
                donor.objs.remove(at);
                view[i].load += w;
                donor.chain = donor.chain.max(u64::from(refusals));
                return true;
            }
            view[i].load = pl.loads[to];
            refusals += 1;
        }
        donor.chain = donor.chain.max(u64::from(refusals));
        false
    }
}

/// An overloaded PE shedding elements: what it has left to offer and its tallies.
struct Donor {
    pe: usize,
    /// Its elements not yet offered, heaviest first.
    objs: Vec<u32>,
    rng: Rng,
    ops: u64,
    /// The longest run of refusals of one element.
    chain: u64,
    /// Requests sent.
    sent: u64,
}

impl Donor {
    fn new(pl: &Placement, pe: usize, seed: u64) -> Self {
        let mut objs = pl.on_pe[pe].clone();
        let weight = &pl.weight;
        objs.sort_unstable_by(|&a, &b| {
            weight[b as usize]
                .total_cmp(&weight[a as usize])
                .then(a.cmp(&b))
        });
        Donor {
            pe,
            ops: objs.len() as u64 * lg(objs.len()),
            objs,
            rng: Rng::new(seed, pe as u64, u64::MAX),
            chain: 0,
            sent: 0,
        }
    }
}

/// Offer PE `to` the donor's lightest element for the fewest of `to`'s lighter
/// elements (lightest first) that leave `to` at or under `cap`; the donor comes
/// down by the difference. False (nothing moves) if no such set exists.
fn swap(pl: &mut Placement, donor: &mut Donor, to: usize, cap: f64) -> bool {
    let weight = &pl.weight;
    let Some(at) = donor.objs.iter().rposition(|&o| weight[o as usize] > 0.0) else {
        return false;
    };
    let give = donor.objs[at];
    let w = weight[give as usize];
    let need = pl.loads[to] + w - cap;
    let mut lighter: Vec<u32> = pl.on_pe[to]
        .iter()
        .copied()
        .filter(|&o| weight[o as usize] > 0.0 && weight[o as usize] < w)
        .collect();
    lighter.sort_unstable_by(|&a, &b| {
        weight[a as usize]
            .total_cmp(&weight[b as usize])
            .then(a.cmp(&b))
    });
    donor.ops += pl.on_pe[to].len() as u64 + lighter.len() as u64 * lg(lighter.len());
    donor.sent += 1;
    let (mut back, mut sum) = (Vec::new(), 0.0);
    for o in lighter {
        if sum >= need {
            break;
        }
        sum += weight[o as usize];
        back.push(o);
    }
    // The donor must come down, and the receiver end under the cap.
    if sum < need || sum >= w {
        return false;
    }
    pl.move_obj(give, to as u32);
    donor.objs.remove(at);
    for o in back {
        pl.move_obj(o, donor.pe as u32);
    }
    true
}

/// The view of `to`, to change, and the view of `from` (`to != from`), to read.
fn pair_mut(views: &mut [Vec<Known>], to: usize, from: usize) -> (&mut Vec<Known>, &[Known]) {
    if to < from {
        let (a, b) = views.split_at_mut(from);
        (&mut a[to], &b[0])
    } else {
        let (a, b) = views.split_at_mut(to);
        (&mut b[0], &a[from])
    }
}

/// A known PE drawn with probability proportional to `1 - load / avg` (none if no
/// known PE is under the average).
fn draw(view: &[Known], avg: f64, rng: &mut Rng) -> Option<usize> {
    let weight = |k: &Known| (1.0 - k.load / avg).max(0.0);
    let total: f64 = view.iter().map(weight).sum();
    if total <= 0.0 {
        return None;
    }
    let mut x = rng.unit() * total;
    for (i, k) in view.iter().enumerate() {
        let w = weight(k);
        if w > 0.0 && x < w {
            return Some(i);
        }
        x -= w;
    }
    view.iter().rposition(|k| weight(k) > 0.0)
}

/// Merge `incoming` into `view`, keeping the `cap` entries of least rank under the
/// holder's `salt`; returns the compute steps (one an entry, and a search of the
/// view for each entry not ranked past a full view's last) and whether the view
/// changed.
fn merge(view: &mut Vec<Known>, incoming: &[Known], salt: u64, cap: usize) -> (u64, bool) {
    let mut changed = false;
    let mut ops = incoming.len() as u64;
    for k in incoming {
        let rank = mix64(salt ^ u64::from(k.pe));
        // Once the view is full, most entries rank past its last: skip the search.
        if view.len() >= cap && view.last().is_some_and(|v| (v.rank, v.pe) < (rank, k.pe)) {
            continue;
        }
        ops += lg(cap);
        let at = view.partition_point(|v| (v.rank, v.pe) < (rank, k.pe));
        if view.get(at).is_some_and(|v| v.pe == k.pe) || (at >= cap) {
            continue;
        }
        view.insert(
            at,
            Known {
                rank,
                pe: k.pe,
                load: k.load,
            },
        );
        view.truncate(cap);
        changed = true;
    }
    (ops, changed)
}
