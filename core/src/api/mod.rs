//! The programming interface: chares, the context handlers act through, proxies
//! (nodegroups' in `node_group`),
//! the registry of types and entries, migration, array load balancing, run reports, and the
//! targets and results of declared entry methods (`#[chare]`).

pub mod balance;
pub mod callback;
pub mod chare;
pub mod ctx;
pub mod migration;
pub mod node_group;
pub mod proxy;
pub mod registry;
pub mod report;
pub(crate) mod result;
pub mod section;
pub mod target;
pub mod task;
