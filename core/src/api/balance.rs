//! Measurement-based load balancing of chare arrays: what a strategy is told about
//! the last balancing period, what it answers, and the trait a strategy implements.
//!
//! Array elements call [`Ctx::at_sync`](crate::Ctx::at_sync) at a step boundary. When
//! every element of the array has, the runtime gathers the load it measured (the
//! time each element's handlers ran: wall time on threads and mpi, virtual time on
//! sim), asks the strategy chosen with `--array-lb` where elements should go, moves
//! them, and calls each element's
//! [`Migratable::resume_from_sync`](crate::Migratable::resume_from_sync).

pub use crate::base::error::DecisionError;
use crate::base::ids::{IndexKey, Pe};

/// One array element's measured load over the last balancing period.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjLoad {
    /// The element's index, encoded.
    pub key: IndexKey,
    /// The PE the element is on.
    pub pe: Pe,
    /// Seconds its handlers ran during the period.
    pub load: f64,
}

/// Messages and bytes one element sent another during the period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommEdge {
    /// The sender, a position in [`LoadStats::objs`].
    pub from: u32,
    /// The receiver, a position in [`LoadStats::objs`].
    pub to: u32,
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent (payload sizes as the trace counts them).
    pub bytes: u64,
}

/// What a strategy decides from: every element's load and place, each PE's load
/// outside the array, and the heaviest communication between elements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadStats {
    /// PEs in the job; a move names a PE in `0..num_pes`.
    pub num_pes: usize,
    /// The array's elements, sorted by key so positions are the same on every run.
    pub objs: Vec<ObjLoad>,
    /// Per PE, seconds of work outside this array's handlers during the period.
    pub background: Vec<f64>,
    /// The heaviest edges per sender (each element keeps its top
    /// [`COMM_EDGES_PER_OBJ`] receivers); empty unless the strategy asks for them.
    pub comm: Vec<CommEdge>,
}

/// How many receivers each element's communication record keeps (the heaviest, by
/// bytes), so the graph's memory is bounded by the number of elements.
pub const COMM_EDGES_PER_OBJ: usize = 8;

impl LoadStats {
    /// Per PE, its background plus the load of the elements on it.
    pub fn pe_loads(&self) -> Vec<f64> {
        let mut loads = self.background.clone();
        loads.resize(self.num_pes, 0.0);
        for o in &self.objs {
            if let Some(l) = loads.get_mut(o.pe as usize) {
                *l += o.load;
            }
        }
        loads
    }

    /// The most loaded PE's load over the mean: 1.0 is perfect balance.
    pub fn max_over_avg(&self) -> f64 {
        max_over_avg(&self.pe_loads())
    }
}

/// The largest of `loads` over their mean (1.0 for no load at all).
pub fn max_over_avg(loads: &[f64]) -> f64 {
    let total: f64 = loads.iter().sum();
    if loads.is_empty() || total <= 0.0 {
        return 1.0;
    }
    let max = loads.iter().copied().fold(0.0, f64::max);
    max / (total / loads.len() as f64)
}

/// Move the element at position `obj` of [`LoadStats::objs`] to PE `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// Position of the element in [`LoadStats::objs`].
    pub obj: u32,
    /// The PE it goes to.
    pub to: Pe,
}

/// A load-balancing strategy for chare arrays (Charm++'s `CentralLB` strategies).
///
/// Register one with [`Registry::balancer`](crate::Registry::balancer) and choose it
/// with `--array-lb NAME`. The runtime checks every decision: a move naming an element
/// or a PE that does not exist, or an element twice, is a
/// `RuntimeError::BadLbDecision` naming the strategy, and nothing moves.
pub trait ArrayStrategy: Send + Sync + 'static {
    /// The name `--array-lb` chooses it by.
    fn name(&self) -> &str;

    /// Whether it reads [`LoadStats::comm`] (the runtime records the graph only then).
    fn needs_comm(&self) -> bool {
        false
    }

    /// Where elements should go; elements not named stay where they are.
    fn decide(&self, stats: &LoadStats) -> Vec<Move>;
}

/// Check a decision against the statistics it was made from, dropping moves that
/// leave an element where it is.
pub fn check_decision(stats: &LoadStats, moves: Vec<Move>) -> Result<Vec<Move>, DecisionError> {
    let mut seen = vec![u32::MAX; stats.objs.len()];
    let mut kept = Vec::with_capacity(moves.len());
    for (index, m) in moves.into_iter().enumerate() {
        let Some(o) = stats.objs.get(m.obj as usize) else {
            return Err(DecisionError::NoSuchObject {
                index,
                obj: m.obj,
                objs: stats.objs.len(),
            });
        };
        if m.to as usize >= stats.num_pes {
            return Err(DecisionError::NoSuchPe {
                index,
                obj: m.obj,
                to: m.to,
                num_pes: stats.num_pes,
            });
        }
        let first = &mut seen[m.obj as usize];
        if *first != u32::MAX {
            return Err(DecisionError::MovedTwice {
                first: *first as usize,
                index,
                obj: m.obj,
            });
        }
        *first = index as u32;
        if o.pe != m.to {
            kept.push(m);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(pes: &[Pe], loads: &[f64]) -> LoadStats {
        LoadStats {
            num_pes: 3,
            objs: pes
                .iter()
                .zip(loads)
                .enumerate()
                .map(|(i, (&pe, &load))| ObjLoad {
                    key: IndexKey::from(vec![i as u8]),
                    pe,
                    load,
                })
                .collect(),
            background: vec![0.0; 3],
            comm: Vec::new(),
        }
    }

    #[test]
    fn pe_loads_add_the_elements_to_the_background() {
        let mut s = stats(&[0, 0, 2], &[1.0, 2.0, 3.0]);
        s.background[1] = 0.5;
        assert_eq!(s.pe_loads(), vec![3.0, 0.5, 3.0]);
        assert!((s.max_over_avg() - 3.0 / (6.5 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn a_decision_is_checked_move_by_move() {
        let s = stats(&[0, 0, 2], &[1.0, 2.0, 3.0]);
        let mv = |obj, to| Move { obj, to };
        assert_eq!(
            check_decision(&s, vec![mv(0, 1), mv(2, 2)]),
            Ok(vec![mv(0, 1)])
        );
        assert_eq!(
            check_decision(&s, vec![mv(3, 1)]),
            Err(DecisionError::NoSuchObject {
                index: 0,
                obj: 3,
                objs: 3
            })
        );
        assert_eq!(
            check_decision(&s, vec![mv(0, 1), mv(1, 3)]),
            Err(DecisionError::NoSuchPe {
                index: 1,
                obj: 1,
                to: 3,
                num_pes: 3
            })
        );
        assert_eq!(
            check_decision(&s, vec![mv(1, 1), mv(0, 2), mv(1, 2)]),
            Err(DecisionError::MovedTwice {
                first: 0,
                index: 2,
                obj: 1
            })
        );
    }
}
