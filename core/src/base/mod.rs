//! The base layer: ids, configuration, errors, hashing, byte strings and the
//! spanning tree every PE computes alike. Imports nothing else of the crate.

pub mod bytes;
pub mod checkpoint_error;
pub mod cli;
pub mod config;
pub(crate) mod entry_name;
pub mod error;
pub mod exit;
pub(crate) mod hash;
pub mod ids;
mod index_key;
pub(crate) mod lazy;
pub mod logging;
pub mod packed;
#[cfg(feature = "cli")]
pub(crate) mod progress;
#[cfg(not(feature = "cli"))]
#[path = "progress_off.rs"]
pub(crate) mod progress;
pub mod section_error;
pub mod trace_select;
pub mod tree;
pub(crate) mod vec_map;
