//! Load-balancing strategies for chare arrays: pure algorithms from one period's
//! [`LoadStats`](chorus_core::LoadStats) to [`Move`](chorus_core::Move)s, each an
//! [`ArrayStrategy`](chorus_core::ArrayStrategy) the runtime calls at `at_sync`, and
//! a [`Planner`] that also models what deciding would cost on the machine.

pub mod catalog;
pub mod comm;
pub mod distributed;
pub mod greedy;
pub mod hierarchical;
pub mod plan;
pub mod refine;
pub mod scale;
pub mod workload;

#[cfg(test)]
mod tests;

pub use catalog::{build, register_all, StrategyParams, UnknownStrategy, NAMES};
pub use comm::{edge_cut, Comm};
pub use distributed::Distributed;
pub use greedy::Greedy;
pub use hierarchical::Hierarchical;
pub use plan::{DecisionCost, Plan, Planner};
pub use refine::Refine;
pub use scale::{scale_report, ScaleError, ScaleInput, ScaleReport, ScaleRow};
pub use workload::Topology;
