//! The array strategies by name: one registration call for a program, and a
//! builder with parameters for benchmarks.

use super::comm::Comm;
use super::distributed::Distributed;
use super::greedy::Greedy;
use super::hierarchical::Hierarchical;
use super::plan::Planner;
use super::refine::{Refine, DEFAULT_TOLERANCE};
use chorus_core::Registry;

/// The names of the strategies this crate provides, as `--array-lb` takes them.
pub const NAMES: [&str; 5] = ["greedy", "refine", "comm", "hierarchical", "distributed"];

/// Register every strategy of this crate with its default parameters.
pub fn register_all(reg: &mut Registry) {
    reg.balancer(Greedy)
        .balancer(Refine::default())
        .balancer(Comm::default())
        .balancer(Hierarchical::default())
        .balancer(Distributed::default());
}

/// The parameters of every strategy; each reads the ones it has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrategyParams {
    /// How far above the average a PE may stay (refine, comm, hierarchical,
    /// distributed).
    pub tolerance: f64,
    /// PEs per leaf group (hierarchical).
    pub group_size: usize,
    /// Children per node above the leaves (hierarchical).
    pub branching: usize,
    /// Gossip targets per PE and round (distributed).
    pub fanout: usize,
    /// Underloaded PEs a gossip view keeps (distributed).
    pub known_cap: usize,
    /// Seed of the random choices (distributed).
    pub seed: u64,
}

impl Default for StrategyParams {
    fn default() -> Self {
        let h = Hierarchical::default();
        let d = Distributed::default();
        StrategyParams {
            tolerance: DEFAULT_TOLERANCE,
            group_size: h.group_size,
            branching: h.branching,
            fanout: d.fanout,
            known_cap: d.known_cap,
            seed: d.seed,
        }
    }
}

/// A strategy name this crate does not provide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no array load-balancing strategy is named {name:?}; choose one of greedy, refine, comm, hierarchical, distributed")]
pub struct UnknownStrategy {
    /// The name asked for.
    pub name: String,
}

/// The strategy called `name`, built with `params`.
pub fn build(name: &str, params: &StrategyParams) -> Result<Box<dyn Planner>, UnknownStrategy> {
    let tolerance = params.tolerance;
    Ok(match name {
        "greedy" => Box::new(Greedy),
        "refine" => Box::new(Refine { tolerance }),
        "comm" => Box::new(Comm {
            tolerance,
            ..Comm::default()
        }),
        "hierarchical" => Box::new(Hierarchical {
            group_size: params.group_size,
            branching: params.branching,
            tolerance,
        }),
        "distributed" => Box::new(Distributed {
            fanout: params.fanout,
            known_cap: params.known_cap,
            seed: params.seed,
            tolerance,
            ..Distributed::default()
        }),
        _ => {
            return Err(UnknownStrategy {
                name: name.to_string(),
            })
        }
    })
}
