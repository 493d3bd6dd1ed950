//! `hierarchical`: a tree of PE groups, each deciding for its own subtree (as
//! Charm++'s TreeLB). Leaf groups are `group_size` consecutive PEs; each level above
//! joins `branching` groups. From the root down, a node moves only its children's
//! excess load between them (a child above its share gives its heaviest-fitting
//! elements from its most loaded PEs to the least loaded PEs of a child below its
//! share); then every leaf group rebalances its own PEs with GreedyRefine (greedy's
//! balance, keeping each element home while its PE stays under greedy's maximum). Nodes of one level
//! decide independently, so a level's time is its slowest node's, not their sum.

use super::greedy::greedy_refine_range;
use super::plan::{lg, DecisionCost, LoadKey, Placement, Plan, Planner};
use super::plan::{OBJ_BYTES, PE_BYTES};
use super::refine::DEFAULT_TOLERANCE;
use chorus_core::api::balance::{LoadStats, Move};
use chorus_core::ArrayStrategy;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// Per-subtree decisions over a tree of PE groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hierarchical {
    /// PEs in a leaf group.
    pub group_size: usize,
    /// Children of each node above the leaves.
    pub branching: usize,
    /// How far above the average a PE may stay after its leaf group refines.
    pub tolerance: f64,
}

impl Default for Hierarchical {
    fn default() -> Self {
        Hierarchical {
            group_size: 64,
            branching: 16,
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

impl ArrayStrategy for Hierarchical {
    fn name(&self) -> &str {
        "hierarchical"
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        self.plan(stats).moves
    }
}

/// What one node of a level did: its compute steps and the bytes it took in.
#[derive(Debug, Clone, Copy, Default)]
struct NodeWork {
    ops: u64,
    bytes: u64,
    messages: u64,
}

impl Planner for Hierarchical {
    fn plan(&self, stats: &LoadStats) -> Plan {
        let mut pl = Placement::new(stats);
        let levels = self.levels(stats.num_pes);
        let mut cost = DecisionCost::default();
        // From the root down: the levels above the leaves move load between groups.
        for pair in levels.windows(2).rev() {
            let (children, parents) = (&pair[0], &pair[1]);
            let mut worst = NodeWork::default();
            let mut first = 0;
            for parent in parents {
                let count = children[first..]
                    .iter()
                    .take_while(|c| c.end <= parent.end)
                    .count();
                let kids = &children[first..first + count];
                first += count;
                let w = self.balance_children(&mut pl, kids);
                worst.ops = worst.ops.max(w.ops);
                worst.bytes = worst.bytes.max(w.bytes);
                cost.messages += w.messages;
                cost.total_ops += w.ops;
            }
            // Loads up, flows down, elements across.
            cost.critical_hops += 3;
            cost.critical_ops += worst.ops;
            cost.critical_bytes += worst.bytes;
            cost.rounds += 1;
        }
        let mut worst = NodeWork::default();
        for leaf in levels.first().map(Vec::as_slice).unwrap_or(&[]) {
            let objs: u64 = leaf.clone().map(|pe| pl.on_pe[pe].len() as u64).sum();
            let ops = greedy_refine_range(&mut pl, leaf.clone(), self.tolerance) + objs;
            worst.ops = worst.ops.max(ops);
            worst.bytes = worst.bytes.max(objs * OBJ_BYTES);
            cost.total_ops += ops;
            cost.messages += 2 * leaf.len() as u64;
        }
        // Each PE's elements up to its leaf group's root, and the moves back.
        cost.critical_hops += 2;
        cost.critical_ops += worst.ops;
        cost.critical_bytes += worst.bytes;
        cost.rounds += 1;
        Plan {
            moves: pl.moves(),
            cost,
        }
    }
}

impl Hierarchical {
    /// The groups of each level, leaves first, root last (one range of all PEs).
    fn levels(&self, num_pes: usize) -> Vec<Vec<Range<usize>>> {
        let g = self.group_size.max(1);
        let b = self.branching.max(2);
        let leaves: Vec<Range<usize>> = (0..num_pes)
            .step_by(g)
            .map(|s| s..(s + g).min(num_pes))
            .collect();
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().map(Vec::as_slice).unwrap_or(&[]);
            let above = below
                .chunks(b)
                .map(|c| c[0].start..c[c.len() - 1].end)
                .collect();
            levels.push(above);
        }
        levels
    }

    /// Move load from the children above their share to those below it.
    fn balance_children(&self, pl: &mut Placement, kids: &[Range<usize>]) -> NodeWork {
        let total: f64 = kids.iter().map(|k| pl.range_load(k.clone())).sum();
        let pes: usize = kids.iter().map(|k| k.len()).sum();
        let mut work = NodeWork {
            ops: kids.len() as u64 * lg(kids.len()),
            bytes: kids.len() as u64 * PE_BYTES,
            messages: 2 * kids.len() as u64,
        };
        if pes == 0 || total <= 0.0 {
            return work;
        }
        let avg = total / pes as f64;
        let slack = self.tolerance.max(0.0) / 4.0;
        let mut donors = Vec::new();
        let mut takers = Vec::new();
        for (i, k) in kids.iter().enumerate() {
            let share = avg * k.len() as f64;
            let load = pl.range_load(k.clone());
            if load > share * (1.0 + slack) {
                donors.push((load - share, i));
            } else if load < share {
                takers.push((share - load, i));
            }
        }
        let by_amount =
            |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        donors.sort_by(by_amount);
        takers.sort_by(by_amount);
        let (mut d, mut t) = (0, 0);
        let mut worst_kid = 0;
        while d < donors.len() && t < takers.len() {
            let amount = donors[d].0.min(takers[t].0);
            let (from, to) = (&kids[donors[d].1], &kids[takers[t].1]);
            let (moved, ops) = transfer(pl, from.clone(), to.clone(), amount);
            worst_kid = worst_kid.max(ops);
            work.bytes = work.bytes.max(moved * OBJ_BYTES);
            work.messages += 1;
            donors[d].0 -= amount;
            takers[t].0 -= amount;
            if donors[d].0 <= takers[t].0 {
                d += 1;
            } else {
                t += 1;
            }
        }
        work.ops += worst_kid;
        work
    }
}

/// Move up to `amount` of load from the most loaded PEs of `from` to the least
/// loaded PEs of `to`, each time the heaviest element that still fits the amount;
/// returns the elements moved and the compute steps.
fn transfer(pl: &mut Placement, from: Range<usize>, to: Range<usize>, amount: f64) -> (u64, u64) {
    if amount <= 0.0 {
        return (0, 0);
    }
    let mut ops = (from.len() + to.len()) as u64;
    let mut givers: BinaryHeap<LoadKey> = from.map(|p| LoadKey(pl.loads[p], p as u32)).collect();
    let mut getters: BinaryHeap<Reverse<LoadKey>> = to
        .map(|p| Reverse(LoadKey(pl.loads[p], p as u32)))
        .collect();
    let (mut left, mut moved) = (amount, 0);
    while left > 0.0 {
        let Some(LoadKey(_, giver)) = givers.pop() else {
            break;
        };
        let list = &pl.on_pe[giver as usize];
        ops += list.len() as u64 + lg(givers.len());
        let best = list
            .iter()
            .copied()
            .filter(|&o| pl.weight[o as usize] > 0.0 && pl.weight[o as usize] <= left)
            .max_by(|&a, &b| pl.weight[a as usize].total_cmp(&pl.weight[b as usize]));
        // A PE with nothing that fits stays out of this transfer.
        let Some(obj) = best else { continue };
        let Some(Reverse(LoadKey(_, getter))) = getters.pop() else {
            break;
        };
        pl.move_obj(obj, getter);
        left -= pl.weight[obj as usize];
        moved += 1;
        ops += 2 * lg(getters.len() + 1);
        getters.push(Reverse(LoadKey(pl.loads[getter as usize], getter)));
        givers.push(LoadKey(pl.loads[giver as usize], giver));
    }
    (moved, ops)
}
