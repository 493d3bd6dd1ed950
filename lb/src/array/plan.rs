//! What every array strategy here answers besides its moves (the modelled cost of
//! deciding), and the bookkeeping they share: where each element is, each PE's load.

use chorus_core::api::balance::{LoadStats, Move};
use chorus_core::{ArrayStrategy, NetworkModel};
use std::cmp::Ordering;

/// Modelled size of one element's record when statistics travel (key, PE, load).
pub const OBJ_BYTES: u64 = 24;
/// Modelled size of one move when a decision travels (element, PE).
pub const MOVE_BYTES: u64 = 8;
/// Modelled size of one PE's entry in a load message (PE, load).
pub const PE_BYTES: u64 = 12;
/// Arity of the reduction tree central strategies gather statistics over.
pub const GATHER_ARITY: usize = 4;

/// The work and messages a decision would take on the machine, as the algorithm runs
/// there (central strategies on PE 0 after a gather; the others per group or per PE).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecisionCost {
    /// Compute steps on the critical path (comparisons, heap levels, list merges).
    pub critical_ops: u64,
    /// Compute steps over all PEs.
    pub total_ops: u64,
    /// Messages one after another on the critical path.
    pub critical_hops: u64,
    /// Bytes received one after another on the critical path.
    pub critical_bytes: u64,
    /// Messages over all PEs.
    pub messages: u64,
    /// Tree levels, or gossip rounds, or 1 for a central decision.
    pub rounds: u32,
}

impl DecisionCost {
    /// Modelled time of the decision in nanoseconds: the critical path's compute at
    /// `ns_per_op` plus its messages under `net`'s LogP costs.
    pub fn modelled_ns(&self, net: &NetworkModel, ns_per_op: f64) -> f64 {
        let per_hop = net.send_overhead_ns + net.alpha_ns + net.recv_overhead_ns + net.handler_ns;
        let per_byte = net.beta_ns_per_byte + net.gamma_ns_per_byte;
        self.critical_ops as f64 * ns_per_op
            + (self.critical_hops * per_hop) as f64
            + self.critical_bytes as f64 * per_byte
    }

    /// The cost of a central decision of `ops` steps: gather every element's record
    /// up a tree to PE 0, decide there, send the moves back down.
    pub fn central(stats: &LoadStats, ops: u64, moves: usize, extra_bytes: u64) -> Self {
        let n = stats.objs.len() as u64;
        let p = stats.num_pes.max(1);
        let hops = 2 * tree_depth(p, GATHER_ARITY);
        DecisionCost {
            critical_ops: ops + n,
            total_ops: ops + n,
            critical_hops: hops,
            critical_bytes: n * OBJ_BYTES + extra_bytes + moves as u64 * MOVE_BYTES,
            messages: 2 * (p as u64 - 1),
            rounds: 1,
        }
    }
}

/// A decision and what it would cost to make.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Where elements go (each at most once, never to the PE it is on).
    pub moves: Vec<Move>,
    /// The modelled cost of deciding.
    pub cost: DecisionCost,
}

/// An [`ArrayStrategy`] that also says what its decision costs.
pub trait Planner: ArrayStrategy {
    /// The decision for `stats` with its modelled cost; `decide` returns its moves.
    fn plan(&self, stats: &LoadStats) -> Plan;
}

/// Levels of a `k`-ary tree over `n` nodes (0 for one node).
pub fn tree_depth(n: usize, k: usize) -> u64 {
    let (mut depth, mut span) = (0, 1usize);
    while span < n {
        span = span.saturating_mul(k.max(2));
        depth += 1;
    }
    depth
}

/// Steps of a sort or a heap walk over `n` items: about log2(n), at least 1.
pub(crate) fn lg(n: usize) -> u64 {
    u64::from(usize::BITS - n.leading_zeros()).max(1)
}

/// A load as a measure: negative, NaN and infinite loads count as none, so one bad
/// measurement cannot poison a whole decision.
pub(crate) fn clean(load: f64) -> f64 {
    if load.is_finite() && load > 0.0 {
        load
    } else {
        0.0
    }
}

/// A (load, PE) key ordered by load, then PE, for the heaps of PEs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LoadKey(pub f64, pub u32);

impl Eq for LoadKey {}

impl PartialOrd for LoadKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LoadKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Where every element is while a strategy works, and each PE's load.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    /// Per element, the PE it was on.
    pub home: Vec<u32>,
    /// Per element, the PE it is on now.
    pub pe_of: Vec<u32>,
    /// Per element, its load.
    pub weight: Vec<f64>,
    /// Per PE, its background plus its elements' loads.
    pub loads: Vec<f64>,
    /// Per PE, the elements on it (an element on a PE outside the job is on none
    /// and never moves).
    pub on_pe: Vec<Vec<u32>>,
}

impl Placement {
    /// The placement the statistics describe.
    pub fn new(stats: &LoadStats) -> Self {
        let p = stats.num_pes;
        let mut loads: Vec<f64> = (0..p)
            .map(|i| clean(stats.background.get(i).copied().unwrap_or(0.0)))
            .collect();
        let mut on_pe = vec![Vec::new(); p];
        let home: Vec<u32> = stats.objs.iter().map(|o| o.pe).collect();
        let weight: Vec<f64> = stats.objs.iter().map(|o| clean(o.load)).collect();
        for (i, o) in stats.objs.iter().enumerate() {
            if let Some(l) = loads.get_mut(o.pe as usize) {
                *l += weight[i];
                on_pe[o.pe as usize].push(i as u32);
            }
        }
        Placement {
            pe_of: home.clone(),
            home,
            weight,
            loads,
            on_pe,
        }
    }

    /// Move element `obj` to PE `to`.
    pub fn move_obj(&mut self, obj: u32, to: u32) {
        let from = self.pe_of[obj as usize];
        if from == to {
            return;
        }
        let list = &mut self.on_pe[from as usize];
        // `remove` keeps the list's order: `refine` bisects lists sorted by load.
        if let Some(at) = list.iter().position(|&o| o == obj) {
            list.remove(at);
        }
        let w = self.weight[obj as usize];
        self.loads[from as usize] -= w;
        self.loads[to as usize] += w;
        self.on_pe[to as usize].push(obj);
        self.pe_of[obj as usize] = to;
    }

    /// The moves from the statistics' placement to this one, in element order.
    pub fn moves(&self) -> Vec<Move> {
        self.home
            .iter()
            .zip(&self.pe_of)
            .enumerate()
            .filter(|(_, (h, p))| h != p)
            .map(|(i, (_, &to))| Move { obj: i as u32, to })
            .collect()
    }

    /// Sum of the loads of PEs `range`.
    pub fn range_load(&self, range: std::ops::Range<usize>) -> f64 {
        self.loads[range].iter().sum()
    }
}
