//! The tuned runtime: what a collectives group created with a tuning profile runs.
//! [`profile`] holds the profile and its O(log ranges) lookup, [`mockups`] the
//! compositions of other collectives a profile may choose (run as one collective by
//! a chain of the existing state machines), and dispatch the choice for one call
//! by its section size and message size.
//!
//! It lives under `collectives` because the host runs it on every call; the tuner that
//! measures collectives and writes profiles ([`crate::tune`]) sits above both and
//! re-exports these modules under their first paths (`chorus_sections::tune::mockups`).
//! A mock-up is an `Op` whose state machine chains other `Op`s' machines, so
//! `mockups` and `collectives::op` use each other: that recursion is the design.

mod chain;
mod dispatch;
pub mod mockups;
pub mod profile;

pub(crate) use chain::Chain;
pub(crate) use dispatch::choose;
pub(crate) use mockups::{apply, machine};
pub use mockups::{Collective, Impl, MockUp, COLLECTIVES};
pub use profile::{Profile, ProfileError, Range};
