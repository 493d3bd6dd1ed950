//! Machine layers: what moves envelopes between PEs and keeps time.

pub(crate) mod affinity;
pub(crate) mod clock;
pub(crate) mod fault;
#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
pub mod mpi;
pub mod sim;
pub mod threads;

use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use crate::msg::envelope::Envelope;
use std::time::Duration;

/// What a PE's port hands its drive loop.
pub enum Arrival {
    /// One envelope.
    One(Envelope),
    /// Every envelope one handler elsewhere sent to this PE, in order.
    Many(Vec<Envelope>),
    /// A message for this PE that the transport could not turn into an envelope.
    Failed {
        /// What was wrong.
        err: RuntimeError,
        /// Messages its sender counted for quiescence detection, which the receiver
        /// counts as processed (dropped); `None` when nothing can be told, and the
        /// job ends whatever its `--on-error` policy, as quiescence could never come.
        weight: Option<u64>,
    },
}

impl Arrival {
    /// What arrives for `bytes` that did not decode: `err`, and the messages the
    /// sender counted for them as far as the header can say.
    pub(crate) fn undecodable(bytes: &[u8], err: RuntimeError) -> Self {
        Arrival::Failed {
            err,
            weight: crate::wire::counted_weight(bytes),
        }
    }
}

/// An arrival and the bytes it took on the wire (0 within a process).
pub struct Arrived {
    /// What arrived.
    pub what: Arrival,
    /// Bytes received for it, which bound how much a PE takes before it runs.
    pub bytes: usize,
}

impl From<Arrival> for Arrived {
    fn from(what: Arrival) -> Self {
        Arrived { what, bytes: 0 }
    }
}

/// The answer of a port asked for arrivals.
pub enum Poll {
    /// Something arrived.
    Ready(Arrived),
    /// Nothing yet.
    Empty,
    /// Nothing ever will: the job is over for this PE.
    Closed,
}

/// A PE's connection to the other PEs of its machine layer: what each transport
/// (threads, SMP workers, MPI, sim) implements, and all the engine knows of it.
pub trait Port {
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
    /// The next arrival, without waiting (the sim layer delivers by events instead,
    /// and says `Closed`).
    fn poll(&mut self) -> Poll {
        Poll::Closed
    }
    /// Wait a while for an arrival, once the PE has nothing to run: spin, yield,
    /// nap or block, as suits the transport.
    fn wait(&mut self) -> Poll {
        Poll::Closed
    }
    /// Move sends along after handlers ran; true if any progressed.
    fn progress(&mut self) -> bool {
        false
    }
    /// A handler just computed for a while without looking at the network.
    fn after_compute(&mut self) {}
    /// What a job restarted from a checkpoint taken now needs to go on exactly as
    /// this one does (the sim layer's clock and network state; other layers have
    /// none to give).
    fn resume_point(&self) -> Option<sim::resume::SimResume> {
        None
    }
    /// A disk checkpoint was just committed on this PE (PE 0).
    fn checkpoint_committed(&mut self) {}
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
