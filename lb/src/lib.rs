//! Load balancing for chorus: Markov-chain walker groups over range sections,
//! regrouped by pluggable strategies — none, periodic collective regrouping, and
//! asynchronous noncollective merge (the dinan paper's MCMC benchmark kernel); and,
//! in [`array`](mod@array), the strategies that balance chare arrays at `at_sync`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod array;
pub mod driver;
pub mod recovery;
pub mod regroup;
pub mod report;
pub mod strategy;
pub mod walker;
pub mod workload;

pub use driver::{run, run_spec, LbError, McmcParams};
pub use report::{McmcReport, RegroupStats};
pub use strategy::{AsyncMerge, Collective, NoBalancing, Strategy, StrategySpec};
pub use workload::Workload;
