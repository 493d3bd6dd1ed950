//! Sections for chorus: system-ranked process groups built by distributed
//! spanning-tree construction, and range sections.
#![forbid(unsafe_code)]

pub mod centralized;
pub mod collectives;
pub mod driver;
pub mod hash;
pub mod host;
pub mod kary;
pub mod neighbour_discovery;
pub mod protocol;
pub mod range;
pub mod section;
pub mod shrink;
pub mod shrink_and_balance;
pub mod shrink_and_hash;
pub mod tune;
