//! `comm`: communication-aware placement. Elements that talk much go to the same
//! PE while every PE gets its share of load:
//!
//! 1. Greedy graph growing: PE by PE, a part starts from the heaviest element still
//!    unplaced on that PE and takes in, one at a time, the unplaced element most
//!    strongly connected to it, until it holds the PE's share of the load (the
//!    average less the PE's background).
//! 2. Balance: `refine` over the parts, so no PE stays above the tolerance.
//! 3. Refinement: passes over the elements moving each to the PE it talks to most
//!    when that cuts traffic and keeps the target PE under the threshold.
//!
//! Graph-partitioning crates were weighed, not adopted: `metis` binds the C library
//! (a C build and a system dependency for every user of chorus), and `coupe` (pure
//! Rust) was not trialled against this graph yet; this partitioner is small, pure
//! Rust and reads the bounded graph [`LoadStats::comm`] gives.

use super::plan::{clean, lg, DecisionCost, Placement, Plan, Planner};
use super::refine::{refine_range, DEFAULT_TOLERANCE};
use chorus_core::api::balance::{CommEdge, LoadStats, Move};
use chorus_core::ArrayStrategy;
use std::collections::BinaryHeap;

/// Modelled bytes a message costs beyond its payload, so that many small messages
/// weigh as communication too.
pub const ENVELOPE_BYTES: u64 = 64;
/// The part of an element on no PE of the job.
const STAYS: u32 = u32::MAX - 1;
/// Modelled size of one edge of the graph when statistics travel.
const EDGE_BYTES: u64 = 24;

/// Heavy communicators together, load balanced within a tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comm {
    /// How far above the average a PE may stay.
    pub tolerance: f64,
    /// Refinement passes over the elements after balancing.
    pub passes: u32,
}

impl Default for Comm {
    fn default() -> Self {
        Comm {
            tolerance: DEFAULT_TOLERANCE,
            passes: 4,
        }
    }
}

impl ArrayStrategy for Comm {
    fn name(&self) -> &str {
        "comm"
    }

    fn needs_comm(&self) -> bool {
        true
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        self.plan(stats).moves
    }
}

/// The element graph, undirected, as adjacency lists in one array.
struct Graph {
    start: Vec<usize>,
    adj: Vec<(u32, f64)>,
}

impl Graph {
    fn new(n: usize, edges: &[CommEdge]) -> Self {
        let ok = |e: &&CommEdge| (e.from as usize) < n && (e.to as usize) < n && e.from != e.to;
        let mut degree = vec![0usize; n + 1];
        for e in edges.iter().filter(ok) {
            degree[e.from as usize] += 1;
            degree[e.to as usize] += 1;
        }
        let mut start = vec![0usize; n + 1];
        for i in 0..n {
            start[i + 1] = start[i] + degree[i];
        }
        let mut fill = start.clone();
        let mut adj = vec![(0u32, 0.0); start[n]];
        for e in edges.iter().filter(ok) {
            let w = edge_weight(e);
            adj[fill[e.from as usize]] = (e.to, w);
            fill[e.from as usize] += 1;
            adj[fill[e.to as usize]] = (e.from, w);
            fill[e.to as usize] += 1;
        }
        Graph { start, adj }
    }

    fn neighbours(&self, v: u32) -> &[(u32, f64)] {
        &self.adj[self.start[v as usize]..self.start[v as usize + 1]]
    }
}

/// An edge's weight: its bytes plus [`ENVELOPE_BYTES`] per message.
fn edge_weight(e: &CommEdge) -> f64 {
    (e.bytes + e.messages * ENVELOPE_BYTES) as f64
}

/// The weight of the edges whose ends are on different PEs once `moves` are made
/// (edges naming elements that do not exist are left out).
pub fn edge_cut(stats: &LoadStats, moves: &[Move]) -> f64 {
    let mut pe: Vec<u32> = stats.objs.iter().map(|o| o.pe).collect();
    for m in moves {
        if let Some(p) = pe.get_mut(m.obj as usize) {
            *p = m.to;
        }
    }
    stats
        .comm
        .iter()
        .filter(|e| {
            let (a, b) = (pe.get(e.from as usize), pe.get(e.to as usize));
            a.is_some() && b.is_some() && a != b
        })
        .map(edge_weight)
        .sum()
}

impl Planner for Comm {
    fn plan(&self, stats: &LoadStats) -> Plan {
        let p = stats.num_pes;
        let mut pl = Placement::new(stats);
        if p == 0 {
            return Plan::default();
        }
        let graph = Graph::new(stats.objs.len(), &stats.comm);
        let mut ops = grow(&mut pl, &graph) + stats.comm.len() as u64;
        ops += refine_range(&mut pl, 0..p, self.tolerance);
        let threshold = pl.loads.iter().sum::<f64>() / p as f64 * (1.0 + self.tolerance.max(0.0));
        for _ in 0..self.passes {
            let (moved, pass_ops) = improve(&mut pl, &graph, threshold);
            ops += pass_ops;
            if moved == 0 {
                break;
            }
        }
        let moves = pl.moves();
        let extra = stats.comm.len() as u64 * EDGE_BYTES;
        let cost = DecisionCost::central(stats, ops, moves.len(), extra);
        Plan { moves, cost }
    }
}

/// Greedy graph growing: one part per PE, each filled to the PE's share; returns
/// the compute steps.
fn grow(pl: &mut Placement, graph: &Graph) -> u64 {
    let p = pl.loads.len();
    let n = pl.weight.len();
    let background: Vec<f64> = (0..p)
        .map(|pe| {
            pl.loads[pe]
                - pl.on_pe[pe]
                    .iter()
                    .map(|&o| pl.weight[o as usize])
                    .sum::<f64>()
        })
        .collect();
    let avg = pl.loads.iter().sum::<f64>() / p as f64;
    let mut part = vec![u32::MAX; n];
    // Elements on no PE of the job never move, so no part may take them.
    for (o, slot) in part.iter_mut().enumerate() {
        if pl.pe_of[o] as usize >= p {
            *slot = STAYS;
        }
    }
    let mut conn = vec![0.0f64; n];
    let mut ops = 0u64;
    let mut next_free = 0usize;
    for (pe, &bg) in background.iter().enumerate() {
        let share = clean(avg - bg);
        let home = &pl.on_pe[pe];
        let seed = home
            .iter()
            .copied()
            .filter(|&o| part[o as usize] == u32::MAX)
            .max_by(|&a, &b| {
                pl.weight[a as usize]
                    .total_cmp(&pl.weight[b as usize])
                    .then(b.cmp(&a))
            });
        let mut frontier: BinaryHeap<(Ordered, u32)> = BinaryHeap::new();
        let mut touched = Vec::new();
        let mut load = 0.0;
        let mut candidate = seed;
        while let Some(v) = candidate.or_else(|| unplaced_from(&part, &mut next_free)) {
            let w = pl.weight[v as usize];
            // Take it if that lands nearer the share than stopping short would.
            if load + w - share > share - load {
                break;
            }
            part[v as usize] = pe as u32;
            load += w;
            for &(u, ew) in graph.neighbours(v) {
                if part[u as usize] == u32::MAX {
                    if conn[u as usize] == 0.0 {
                        touched.push(u);
                    }
                    conn[u as usize] += ew;
                    frontier.push((Ordered(conn[u as usize]), u));
                }
            }
            ops += graph.neighbours(v).len() as u64 * lg(frontier.len());
            candidate = None;
            while let Some((_, u)) = frontier.pop() {
                if part[u as usize] == u32::MAX {
                    candidate = Some(u);
                    break;
                }
            }
        }
        for u in touched {
            conn[u as usize] = 0.0;
        }
    }
    place_parts(pl, &part);
    ops + n as u64
}

/// The first element not yet in a part, from `next` on.
fn unplaced_from(part: &[u32], next: &mut usize) -> Option<u32> {
    while *next < part.len() && part[*next] != u32::MAX {
        *next += 1;
    }
    (*next < part.len()).then_some(*next as u32)
}

/// Move every element to its part's PE; elements no part took stay home.
fn place_parts(pl: &mut Placement, part: &[u32]) {
    let p = pl.loads.len() as u32;
    for (obj, &to) in part.iter().enumerate() {
        let on = pl.pe_of[obj];
        if to < p && on < p {
            pl.move_obj(obj as u32, to);
        }
    }
}

/// One pass moving each element to the PE it talks to most when that cuts traffic
/// and keeps that PE under `threshold`; returns the moves made and the steps taken.
fn improve(pl: &mut Placement, graph: &Graph, threshold: f64) -> (u64, u64) {
    let p = pl.loads.len() as u32;
    let (mut moved, mut ops) = (0u64, 0u64);
    let mut tally: Vec<(u32, f64)> = Vec::new();
    for v in 0..pl.weight.len() as u32 {
        let here = pl.pe_of[v as usize];
        if here >= p {
            continue;
        }
        tally.clear();
        for &(u, w) in graph.neighbours(v) {
            let pe = pl.pe_of[u as usize];
            match tally.iter_mut().find(|t| t.0 == pe) {
                Some(t) => t.1 += w,
                None => tally.push((pe, w)),
            }
        }
        ops += 1 + (graph.neighbours(v).len() * tally.len().max(1)) as u64;
        let stay = tally.iter().find(|t| t.0 == here).map_or(0.0, |t| t.1);
        let w = pl.weight[v as usize];
        let best = tally
            .iter()
            .filter(|t| {
                t.0 != here && t.0 < p && t.1 > stay && pl.loads[t.0 as usize] + w <= threshold
            })
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        if let Some(&(to, _)) = best {
            pl.move_obj(v, to);
            moved += 1;
        }
    }
    (moved, ops)
}

/// An `f64` ordered totally, for the frontier's heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
