//! The performance-guideline tuner for section collectives (the PGMPITuneLib idea,
//! built in): a specialised collective should never be slower than a semantically
//! equivalent composition of others (allreduce ⪯ reduce + broadcast, ...).
//!
//! - [`mockups`]: the compositions ([`MockUp`]) of each tuned [`Collective`], run as
//!   one collective by a chain of the existing state machines (part of the tuned
//!   runtime, `collectives::tuned`, re-exported here).
//! - [`measure`]: latencies on the runtime with synchronised starts and the NREP rule.
//! - [`detect`]: guideline violations (a mock-up at least 10% faster than the default)
//!   and the profile that repairs them.
//! - [`profile`]: the human-readable profile file and its O(log ranges) lookup (also
//!   part of the tuned runtime, re-exported here).
//! - the tuned runtime itself: a collectives group created with a profile
//!   ([`crate::collectives::Collectives::create_tuned`]) runs each call of a tuned
//!   collective by the profile's choice for its section size and message size.
//!
//! This module only measures and decides; it depends on `collectives`, never the
//! other way round.

pub mod detect;
pub mod measure;
pub mod stats;

pub use crate::collectives::tuned::COLLECTIVES;
pub use crate::collectives::tuned::{mockups, profile};
pub use crate::collectives::tuned::{Collective, Impl, MockUp, Profile, ProfileError, Range};
