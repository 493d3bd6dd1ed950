//! Sections for chorus: system-ranked process groups built by distributed
//! spanning-tree construction, and range sections. Start with [`Sections`]: a split
//! by colour and key and an allreduce over what it made.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod callback;
pub mod collectives;
pub mod creation;
pub mod free;
pub mod hash;
pub mod host;
pub mod kary;
pub mod range;
pub mod section;
pub mod tune;

pub use api::{Sections, SectionsInit};
pub use free::SectionsStats;
pub use host::{Parent, Request, Split};
pub use section::Section;

// The creation modules' first paths (`chorus_sections::protocol`, ...) stay valid.
pub use creation::{
    centralized, driver, neighbour_discovery, protocol, shrink, shrink_and_balance, shrink_and_hash,
};
