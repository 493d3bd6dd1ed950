//! A port that drops what is sent, for unit tests that look at one PE's state only.

use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::machine::Port;
use crate::msg::envelope::Envelope;
use std::time::Duration;

/// Drops every envelope; its clock stays at 0.
pub(crate) struct Nowhere;

impl Port for Nowhere {
    fn send(&mut self, _: Pe, _: Envelope) -> Result<(), RuntimeError> {
        Ok(())
    }
    fn now(&self) -> f64 {
        0.0
    }
    fn work(&mut self, _: Duration, _: WorkMode) {}
}
