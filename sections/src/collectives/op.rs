//! A collective as a member starts it, and the state machine that runs it. A mock-up
//! of the tuner is an `Op` too, whose machine chains other `Op`s' machines, so this
//! module and `tuned` use each other: the recursion is the design.

use super::allgather_bruck::Bruck;
use super::allgather_kport::StandardExchange;
use super::allgather_ring::Ring;
use super::alltoall::{self, Alltoall};
use super::broadcast::Broadcast;
use super::choice::Allgather;
use super::machine::Machine;
use super::reduce::{Delivery, Reduce};
use super::reduce_scatter;
use super::scan::Scan;
use super::scan_doubling::DoublingScan;
use super::scatter::Scatter;
use super::tuned::{self, MockUp};
use super::value::Fold;
use chorus_core::{RedData, Reducer};
use serde::{Deserialize, Serialize};

/// A collective as a member starts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Op {
    /// Broadcast from `root`; the root gives the value.
    Broadcast {
        /// Rank of the root.
        root: u32,
        /// The value, at the root.
        value: Option<RedData>,
    },
    /// A reduction (also gather, gatherv, allreduce, barrier, tree allgather).
    Reduce {
        /// How values combine.
        fold: Fold,
        /// This member's value.
        value: RedData,
        /// Who gets the result.
        delivery: Delivery,
    },
    /// An inclusive or exclusive prefix reduction.
    Scan {
        /// How values combine.
        fold: Fold,
        /// This member's value.
        value: RedData,
        /// True for the exclusive prefix.
        exclusive: bool,
    },
    /// An allgather by a roster algorithm (Bruck, standard exchange, ring).
    Allgather {
        /// The resolved algorithm.
        algorithm: Allgather,
        /// This member's block.
        value: RedData,
    },
    /// Scatter from `root`: the root gives one block per rank.
    Scatter {
        /// Rank of the root.
        root: u32,
        /// The blocks, by rank, at the root.
        blocks: Option<Vec<RedData>>,
    },
    /// Reduce-scatter: reduce to rank 0, then scatter blocks of `counts` elements.
    ReduceScatter {
        /// How values combine (element-wise).
        fold: Fold,
        /// This member's vector.
        value: RedData,
        /// Elements of each rank's block.
        counts: Vec<u32>,
    },
    /// An alltoall by a roster algorithm (pairwise exchange, Bruck).
    Alltoall {
        /// The resolved algorithm.
        algorithm: Alltoall,
        /// This member's blocks, one per rank.
        blocks: Vec<RedData>,
    },
    /// A collective run by a mock-up of the tuner (a composition of others).
    MockUp {
        /// The mock-up.
        mock_up: MockUp,
        /// The collective as the member started it.
        op: Box<Op>,
    },
}

impl Op {
    /// The collective's name, with the implementation when it is not the default
    /// (e.g. `allreduce`, `allgather (ring)`, `allreduce (as reduce+broadcast)`).
    pub(crate) fn name(&self) -> String {
        match self {
            Op::Broadcast { .. } => "broadcast".into(),
            Op::Reduce { fold, delivery, .. } => match (fold.reducer(), delivery) {
                (_, Delivery::Barrier) => "barrier",
                (Reducer::Gather, _) => "gatherv",
                (Reducer::Concat, Delivery::Root(_)) => "gather",
                (Reducer::Concat, Delivery::All) => "allgather",
                (_, Delivery::Root(_)) => "reduce",
                (_, Delivery::All) => "allreduce",
            }
            .into(),
            Op::Scan { exclusive, .. } => if *exclusive { "exscan" } else { "scan" }.into(),
            Op::Allgather { algorithm, .. } => format!("allgather ({})", algorithm.name()),
            Op::Scatter { .. } => "scatter".into(),
            Op::ReduceScatter { .. } => "reduce-scatter".into(),
            Op::Alltoall { algorithm, .. } => format!("alltoall ({})", algorithm.name()),
            Op::MockUp { mock_up, op } => format!("{} (as {})", op.name(), mock_up.name()),
        }
    }

    /// With a roster, a rooted collective runs on the tree re-rooted at its root: the
    /// root to use for the view, and the op with root 0 in that view.
    pub(crate) fn reroot(self, has_roster: bool) -> (u32, Op) {
        match self {
            Op::Broadcast { root, value } if has_roster && root != 0 => {
                (root, Op::Broadcast { root: 0, value })
            }
            Op::Scatter {
                root,
                blocks: Some(mut blocks),
            } if has_roster && root != 0 => {
                // The view's rank v is rank v + root: its block moves with it.
                let n = blocks.len();
                blocks.rotate_left(root as usize % n.max(1));
                (
                    root,
                    Op::Scatter {
                        root: 0,
                        blocks: Some(blocks),
                    },
                )
            }
            Op::Scatter { root, blocks: None } if has_roster && root != 0 => (
                root,
                Op::Scatter {
                    root: 0,
                    blocks: None,
                },
            ),
            Op::Reduce {
                fold,
                value,
                delivery: Delivery::Root(root),
            } if has_roster && root != 0 => (
                root,
                Op::Reduce {
                    fold,
                    value,
                    delivery: Delivery::Root(0),
                },
            ),
            op => (0, op),
        }
    }

    /// The state machine of member `rank` (absolute) for this op. `Collectives`
    /// resolves an allgather's algorithm before it builds the op.
    pub(crate) fn machine(self, rank: u32, has_roster: bool) -> Box<dyn Machine> {
        match self {
            Op::Broadcast { root, value } => Box::new(Broadcast::new(root, value)),
            Op::Reduce {
                fold,
                value,
                delivery,
            } => Box::new(Reduce::new(fold, value, rank, delivery)),
            Op::Scan {
                fold,
                value,
                exclusive,
            } if has_roster && !fold.is_ranked() => {
                Box::new(DoublingScan::new(fold, value, exclusive))
            }
            Op::Scan {
                fold,
                value,
                exclusive,
            } => {
                // Members with integer values double where this one climbs the tree.
                let probe = has_roster && fold.kind_decides_shape();
                Box::new(Scan::new(fold, value, rank, exclusive, probe))
            }
            Op::Allgather { algorithm, value } => match algorithm {
                Allgather::Bruck(k) => Box::new(Bruck::new(k, rank, value)),
                Allgather::StandardExchange(k) => Box::new(StandardExchange::new(k, rank, value)),
                Allgather::Ring => Box::new(Ring::new(rank, value)),
                other => panic!(
                    "allgather {} is not resolved to a roster algorithm",
                    other.name()
                ),
            },
            Op::Scatter { root, blocks } => Box::new(Scatter::new(root, blocks)),
            Op::ReduceScatter {
                fold,
                value,
                counts,
            } => reduce_scatter::machine(fold, value, counts, rank),
            Op::Alltoall { algorithm, blocks } => match algorithm {
                Alltoall::Bruck => Box::new(alltoall::Bruck::new(rank, blocks)),
                Alltoall::Pairwise => Box::new(alltoall::Pairwise::new(rank, blocks)),
                Alltoall::Auto => panic!("alltoall auto is not resolved to an algorithm"),
            },
            Op::MockUp { mock_up, op } => tuned::machine(mock_up, *op, rank, has_roster),
        }
    }
}
