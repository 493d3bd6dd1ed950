//! Machine layers: what moves envelopes between PEs and keeps time.

#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
pub mod mpi;
pub mod sim;
pub mod threads;

use crate::api::ctx::Ctx;
use crate::api::registry::Registry;
use crate::api::report::RunReport;
use crate::base::config::{Config, WorkMode};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use crate::msg::envelope::Envelope;
use std::sync::Arc;
use std::time::Duration;

/// A PE's connection to the other PEs of its machine layer.
pub trait Transport {
    /// Deliver an envelope to another PE (possibly held until `flush`); fails when it
    /// cannot be put on the wire (a payload that does not encode).
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError>;
    /// Pass on everything `send` has held back; called after every handler.
    fn flush(&mut self) {}
    /// The last envelope held for `to` and not yet flushed, so a run of messages to
    /// one destination can share it.
    fn held_tail(&mut self, _to: Pe) -> Option<&mut Envelope> {
        None
    }
    /// Seconds since the job started, on this layer's clock.
    fn now(&self) -> f64;
    /// Spend `d` of compute as the layer models it.
    fn work(&mut self, d: Duration, mode: WorkMode);
    /// Ask for `callback` to receive the number of every PE that fails from now on
    /// (layers without failures never call it).
    fn subscribe_failures(&mut self, _subscriber: Pe, _callback: Callback) {}
}

/// A program ready to run: its registry, configuration and main function.
pub struct Job {
    pub(crate) registry: Arc<Registry>,
    pub(crate) config: Config,
    pub(crate) main: Box<dyn FnOnce(&mut Ctx) + Send>,
}

/// A way of running PEs: threads, simulation or MPI ranks.
pub trait MachineLayer {
    /// Lower-case name of the layer.
    fn name(&self) -> &'static str;
    /// Run the job to its exit.
    fn run(&self, job: Job) -> Result<RunReport, RuntimeError>;
}

/// Spend `d` by sleeping or spinning on a real clock.
pub(crate) fn real_work(d: Duration, mode: WorkMode) {
    match mode {
        WorkMode::Sleep => std::thread::sleep(d),
        WorkMode::Spin => {
            let end = std::time::Instant::now() + d;
            while std::time::Instant::now() < end {
                std::hint::spin_loop();
            }
        }
    }
}
