//! Creating a section over a parent's spanning tree: the algorithms of the langer
//! paper as per-PE state machines, independent of the runtime (the builder in
//! [`crate::host`] runs them over chorus messages, [`driver`] in memory).
//!
//! Layers, each using only those above it:
//! - [`protocol`]: what every algorithm shares (the [`protocol::Protocol`] trait,
//!   setups, the wire vocabulary, errors);
//! - [`neighbour_discovery`]: hash-based discovery of tree neighbours through
//!   intermediaries;
//! - [`shrink`]: the upward pass that shrinks the parent tree to the members;
//! - the algorithms: [`centralized`], [`shrink_and_balance`], [`shrink_and_hash`];
//! - [`driver`]: runs any of them to completion in memory, for tests and measurements.

pub mod centralized;
pub mod driver;
pub mod neighbour_discovery;
pub mod protocol;
pub mod shrink;
pub mod shrink_and_balance;
pub mod shrink_and_hash;
