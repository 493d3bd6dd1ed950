//! The programming interface: chares, the context handlers act through, proxies,
//! the registry of types and entries, migration, array load balancing and run reports.

pub mod balance;
pub mod callback;
pub mod chare;
pub mod ctx;
pub mod migration;
pub mod proxy;
pub mod registry;
pub mod report;
