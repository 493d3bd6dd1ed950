//! `refine`: move elements only off PEs above the average by more than a tolerance,
//! each time the heaviest element that fits on the least-loaded PE without lifting
//! it over the threshold (Charm++'s RefineLB): few migrations, most PEs untouched.
//! When elements are too coarse for any PE to take one under the threshold, a
//! second phase still lowers the most loaded PE: it moves the element that best
//! halves the gap to the least loaded PE, as long as that lowers the maximum (what
//! RefineLB's search for the lowest feasible threshold reaches); if the maximum is
//! still above the threshold, GreedyRefine from there, when it does better.

use super::greedy::greedy_refine_range;
use super::plan::{lg, DecisionCost, LoadKey, Placement, Plan, Planner};
use chorus_core::api::balance::{LoadStats, Move};
use chorus_core::ArrayStrategy;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// The tolerance `refine` and the strategies built on it use unless told otherwise.
pub const DEFAULT_TOLERANCE: f64 = 0.05;

/// Moves only from PEs above `avg * (1 + tolerance)`, fewest migrations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refine {
    /// How far above the average a PE may stay (0.05: 5%).
    pub tolerance: f64,
}

impl Default for Refine {
    fn default() -> Self {
        Refine {
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

impl ArrayStrategy for Refine {
    fn name(&self) -> &str {
        "refine"
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        self.plan(stats).moves
    }
}

impl Planner for Refine {
    fn plan(&self, stats: &LoadStats) -> Plan {
        let mut pl = Placement::new(stats);
        let ops = refine_range(&mut pl, 0..stats.num_pes, self.tolerance);
        let moves = pl.moves();
        let cost = DecisionCost::central(stats, ops, moves.len(), 0);
        Plan { moves, cost }
    }
}

/// Refine the PEs of `range` among themselves to at most their average times
/// `1 + tolerance`, where elements allow; returns the compute steps it took.
pub(crate) fn refine_range(pl: &mut Placement, range: Range<usize>, tolerance: f64) -> u64 {
    let n = range.len();
    if n < 2 {
        return 1;
    }
    let avg = pl.range_load(range.clone()) / n as f64;
    let threshold = avg * (1.0 + tolerance.max(0.0));
    let mut ops = n as u64;
    let whole = range.clone();
    let mut donors: BinaryHeap<LoadKey> = BinaryHeap::new();
    let mut receivers: BinaryHeap<Reverse<LoadKey>> = BinaryHeap::new();
    for pe in range {
        let key = LoadKey(pl.loads[pe], pe as u32);
        if key.0 > threshold {
            let weight = &pl.weight;
            // Heaviest first, so the heaviest element that fits is found by bisection.
            pl.on_pe[pe].sort_unstable_by(|&a, &b| {
                weight[b as usize]
                    .total_cmp(&weight[a as usize])
                    .then(a.cmp(&b))
            });
            ops += pl.on_pe[pe].len() as u64 * lg(pl.on_pe[pe].len());
            donors.push(key);
        } else {
            receivers.push(Reverse(key));
        }
    }
    ops += n as u64 * lg(n);
    while let Some(LoadKey(_, donor)) = donors.pop() {
        let Some(Reverse(LoadKey(r_load, receiver))) = receivers.pop() else {
            break;
        };
        let room = threshold - r_load;
        let list = &pl.on_pe[donor as usize];
        let at = list.partition_point(|&o| pl.weight[o as usize] > room);
        ops += 2 * lg(n) + lg(list.len());
        // The least-loaded PE has the most room: if nothing fits there, nothing fits
        // anywhere, and this donor is done.
        let fits = list.get(at).filter(|&&o| pl.weight[o as usize] > 0.0);
        let Some(&obj) = fits else {
            receivers.push(Reverse(LoadKey(r_load, receiver)));
            continue;
        };
        pl.move_obj(obj, receiver);
        receivers.push(Reverse(LoadKey(pl.loads[receiver as usize], receiver)));
        if pl.loads[donor as usize] > threshold {
            donors.push(LoadKey(pl.loads[donor as usize], donor));
        }
    }
    ops += lower_the_max(pl, whole.clone(), threshold);
    ops + greedy_refine_if_better(pl, whole, threshold, tolerance)
}

/// When refinement leaves a PE of `range` above `threshold` (elements too coarse: a
/// heavy element fits nowhere until a receiver's light ones make way for it, which
/// moving only off overloaded PEs never does), try GreedyRefine from the refined
/// placement and keep it if it lowers the maximum; returns the compute steps.
fn greedy_refine_if_better(
    pl: &mut Placement,
    range: Range<usize>,
    threshold: f64,
    tolerance: f64,
) -> u64 {
    let max = |pl: &Placement| pl.loads[range.clone()].iter().copied().fold(0.0, f64::max);
    let before = max(pl);
    if before <= threshold {
        return 0;
    }
    let mut tried = pl.clone();
    let ops = greedy_refine_range(&mut tried, range.clone(), tolerance);
    if max(&tried) < before {
        *pl = tried;
    }
    ops
}

/// While the most loaded PE of `range` is above `threshold`, move to the least
/// loaded PE the element of it that brings the two nearest each other, if that
/// lowers the larger of them; returns the compute steps. Every move shrinks the sum
/// of squared loads, so this ends.
fn lower_the_max(pl: &mut Placement, range: Range<usize>, threshold: f64) -> u64 {
    let n = range.len();
    if !range.clone().any(|pe| pl.loads[pe] > threshold) {
        return 0;
    }
    let mut ops = n as u64 * lg(n);
    let mut high: BinaryHeap<LoadKey> = range
        .clone()
        .map(|p| LoadKey(pl.loads[p], p as u32))
        .collect();
    let mut low: BinaryHeap<Reverse<LoadKey>> = range
        .map(|p| Reverse(LoadKey(pl.loads[p], p as u32)))
        .collect();
    loop {
        let fresh = |k: &LoadKey| k.0 == pl.loads[k.1 as usize];
        let Some(LoadKey(top, donor)) = pop_while(&mut high, |k| !fresh(k)) else {
            break;
        };
        let Some(Reverse(LoadKey(bottom, receiver))) = pop_while(&mut low, |k| !fresh(&k.0)) else {
            break;
        };
        if top <= threshold {
            break;
        }
        let gap = top - bottom;
        let list = &pl.on_pe[donor as usize];
        ops += list.len() as u64 + 2 * lg(n);
        let best = list
            .iter()
            .copied()
            .filter(|&o| pl.weight[o as usize] > 0.0 && pl.weight[o as usize] < gap)
            .min_by(|&a, &b| {
                let off = |o: u32| (pl.weight[o as usize] - gap / 2.0).abs();
                off(a).total_cmp(&off(b)).then(a.cmp(&b))
            });
        // The most loaded PE cannot come down: the maximum is as low as it gets.
        let Some(obj) = best else { break };
        pl.move_obj(obj, receiver);
        for pe in [donor, receiver] {
            high.push(LoadKey(pl.loads[pe as usize], pe));
            low.push(Reverse(LoadKey(pl.loads[pe as usize], pe)));
        }
    }
    ops
}

/// Pop entries off `heap` while `stale` says they are out of date; the first fresh
/// one, if any.
fn pop_while<T: Ord>(heap: &mut BinaryHeap<T>, stale: impl Fn(&T) -> bool) -> Option<T> {
    while let Some(top) = heap.pop() {
        if !stale(&top) {
            return Some(top);
        }
    }
    None
}
