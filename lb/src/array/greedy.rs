//! `greedy`: every element, heaviest first, to the PE with the least load so far
//! (Charm++'s GreedyLB); each PE starts from its background load.

use super::plan::{clean, lg, DecisionCost, LoadKey, Placement, Plan, Planner};
use chorus_core::api::balance::{LoadStats, Move};
use chorus_core::ArrayStrategy;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// Heaviest element first to the least-loaded PE; the best balance, most migrations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Greedy;

impl ArrayStrategy for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        self.plan(stats).moves
    }
}

impl Planner for Greedy {
    fn plan(&self, stats: &LoadStats) -> Plan {
        let p = stats.num_pes;
        if p == 0 {
            return Plan::default();
        }
        let mut order: Vec<(f64, u32)> = stats
            .objs
            .iter()
            .enumerate()
            .filter(|(_, o)| (o.pe as usize) < p)
            .map(|(i, o)| (clean(o.load), i as u32))
            .collect();
        // Heaviest first; equal loads in element order, so runs repeat exactly.
        order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut heap: BinaryHeap<Reverse<LoadKey>> = (0..p)
            .map(|pe| {
                let bg = clean(stats.background.get(pe).copied().unwrap_or(0.0));
                Reverse(LoadKey(bg, pe as u32))
            })
            .collect();
        let mut moves = Vec::new();
        for &(w, obj) in &order {
            let Some(Reverse(LoadKey(load, pe))) = heap.pop() else {
                break;
            };
            if stats.objs[obj as usize].pe != pe {
                moves.push(Move { obj, to: pe });
            }
            heap.push(Reverse(LoadKey(load + w, pe)));
        }
        let n = order.len();
        let ops = n as u64 * lg(n) + 2 * n as u64 * lg(p) + p as u64;
        let cost = DecisionCost::central(stats, ops, moves.len(), 0);
        Plan { moves, cost }
    }
}

/// Charm++'s GreedyRefine over the PEs of `range`: a greedy pass finds the maximum
/// load `m` greedy would reach; a second pass, heaviest element first, keeps each
/// element on its PE while that PE stays under `m * (1 + tolerance)` and sends it to
/// the least-loaded PE otherwise. Greedy's balance, few of its migrations; returns
/// the compute steps.
pub(crate) fn greedy_refine_range(pl: &mut Placement, range: Range<usize>, tolerance: f64) -> u64 {
    // Heaviest first, equal loads in element order. Loads are clean (finite, not
    // negative), so their bits order as they do, and the sort compares plain keys
    // instead of looking each weight up.
    let mut objs: Vec<(u64, u32)> = range
        .clone()
        .flat_map(|pe| pl.on_pe[pe].iter())
        .map(|&o| (!pl.weight[o as usize].to_bits(), o))
        .collect();
    objs.sort_unstable();
    let weight = |k: u64| f64::from_bits(!k);
    let mut loads: Vec<f64> = range.clone().map(|pe| pl.loads[pe]).collect();
    for &(k, o) in &objs {
        loads[pl.pe_of[o as usize] as usize - range.start] -= weight(k);
    }
    let background = loads.clone();
    let mut heap = min_heap(&loads, range.start);
    for &(k, _) in &objs {
        if let Some(Reverse(LoadKey(l, pe))) = heap.pop() {
            heap.push(Reverse(LoadKey(l + weight(k), pe)));
        }
    }
    let cap = heap.into_iter().map(|k| k.0 .0).fold(0.0, f64::max) * (1.0 + tolerance.max(0.0));
    let mut loads = background;
    let mut heap = min_heap(&loads, range.start);
    for &(k, o) in &objs {
        let w = weight(k);
        let here = pl.pe_of[o as usize] as usize - range.start;
        let to = if loads[here] + w <= cap {
            here
        } else {
            // Entries go stale when an element stays put: skip those.
            loop {
                let Some(Reverse(LoadKey(l, pe))) = heap.pop() else {
                    break here;
                };
                let i = pe as usize - range.start;
                if l == loads[i] {
                    break i;
                }
            }
        };
        loads[to] += w;
        heap.push(Reverse(LoadKey(loads[to], (to + range.start) as u32)));
        pl.move_obj(o, (to + range.start) as u32);
    }
    let n = objs.len() as u64;
    n * lg(objs.len()) + 4 * n * lg(range.len())
}

/// A min-heap of `loads`, the PE of `loads[i]` being `first + i`.
fn min_heap(loads: &[f64], first: usize) -> BinaryHeap<Reverse<LoadKey>> {
    loads
        .iter()
        .enumerate()
        .map(|(i, &l)| Reverse(LoadKey(l, (first + i) as u32)))
        .collect()
}
