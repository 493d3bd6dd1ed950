//! The performance-guideline tuner for section collectives (the PGMPITuneLib idea,
//! built in): a specialised collective should never be slower than a semantically
//! equivalent composition of others (allreduce ⪯ reduce + broadcast, ...).
//!
//! - [`mockups`]: the compositions ([`MockUp`]) of each tuned [`Collective`], run as
//!   one collective by a chain of the existing state machines.
//! - [`measure`]: latencies on the runtime with synchronised starts and the NREP rule.
//! - [`detect`]: guideline violations (a mock-up at least 10% faster than the default)
//!   and the profile that repairs them.
//! - [`profile`]: the human-readable profile file and its O(log ranges) lookup.
//! - dispatch: the tuned runtime — a collectives group created with a profile
//!   ([`crate::collectives::Collectives::create_tuned`]) runs each call of a tuned
//!   collective by the profile's choice for its section size and message size.

mod chain;
pub mod detect;
mod dispatch;
pub mod measure;
pub mod mockups;
pub mod profile;
pub mod stats;

pub(crate) use dispatch::choose;
pub(crate) use mockups::{apply, machine};
pub use mockups::{Collective, Impl, MockUp, COLLECTIVES};
pub use profile::{Profile, ProfileError, Range};
