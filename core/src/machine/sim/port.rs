//! A simulated PE's transport: sends are stamped with virtual arrival times and
//! collected for the simulator, and compute advances the running PE's clock.

use super::network::{Links, NetworkModel};
use super::resume::SimResume;
use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::machine::Port;
use crate::msg::callback::Callback;
use crate::msg::envelope::Envelope;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Separates the jitter draws from other hashes of the same seed.
const JITTER_STREAM: u64 = 0x6A17_7E2D_5EED_0001;

/// An envelope on its way, with the virtual time it arrives.
pub(crate) struct Outgoing {
    pub(crate) to: Pe,
    pub(crate) arrive: u64,
    pub(crate) bytes: u64,
    pub(crate) env: Envelope,
}

/// State of whichever PE is running; every PE's port shares it, since the
/// simulator runs one PE at a time.
pub(crate) struct Cursor {
    /// The running PE.
    pub(crate) pe: Pe,
    /// The running PE's virtual clock, nanoseconds.
    pub(crate) clock: u64,
    /// What it has sent so far in this step.
    pub(crate) out: Vec<Outgoing>,
    /// Failure subscriptions: (subscriber PE, callback).
    pub(crate) subscribers: Vec<(Pe, Callback)>,
    pub(crate) model: NetworkModel,
    links: Option<Links>,
    /// Seed of the per-message jitter.
    seed: u64,
    /// Network messages sent so far: the jitter draw's counter.
    sent: u64,
    /// A disk checkpoint was committed in the current run, at this virtual time (the
    /// simulator starts the digest since the commit after the run).
    pub(crate) committed: Option<u64>,
}

impl Cursor {
    pub(crate) fn new(model: NetworkModel, npes: usize, seed: u64) -> Self {
        Cursor {
            pe: 0,
            clock: 0,
            out: Vec::new(),
            subscribers: Vec::new(),
            links: model.contention.then(|| Links::new(npes)),
            model,
            seed,
            sent: 0,
            committed: None,
        }
    }

    /// What a restarted run needs to go on from this instant as this one does.
    pub(crate) fn resume_point(&self) -> SimResume {
        SimResume {
            at_ns: self.clock,
            jitter_draws: self.sent,
            links: self.links.as_ref().map(Links::snapshot),
        }
    }

    /// Take up `r`'s jitter draws and link bookings (the simulator sets the clock).
    pub(crate) fn resume(&mut self, r: &SimResume) {
        self.sent = r.jitter_draws;
        if let (Some(links), Some(saved)) = (self.links.as_mut(), r.links.as_ref()) {
            links.restore(saved);
        }
    }

    /// The next message's extra delay in 0..=max: a fixed function of the seed and
    /// the message count, since the simulator sends in a reproducible order.
    fn jitter(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        self.sent += 1;
        // A constant of its own, so the draws differ from other uses of the seed.
        crate::base::hash::mix64(
            self.seed ^ JITTER_STREAM ^ self.sent.wrapping_mul(0xA24B_AED4_963E_E407),
        ) % max.saturating_add(1)
    }

    /// Start running `pe` at virtual time `t`.
    pub(crate) fn begin(&mut self, pe: Pe, t: u64) {
        self.pe = pe;
        self.clock = t;
    }
}

/// One PE's handle on the shared cursor.
pub(crate) struct SimPort(pub(crate) Rc<RefCell<Cursor>>);

impl Port for SimPort {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        let mut c = self.0.borrow_mut();
        let bytes = env.wire_bytes();
        let m = c.model;
        let depart = c.clock + m.send_overhead_ns;
        c.clock = depart;
        let wire = m.wire_ns(bytes);
        let from = c.pe as usize;
        let arrive = match c.links.as_mut() {
            Some(links) => links.book(from, to as usize, depart, wire, m.alpha_ns),
            None => depart + m.alpha_ns + wire,
        };
        let arrive = arrive.saturating_add(c.jitter(m.jitter_ns));
        c.out.push(Outgoing {
            to,
            arrive,
            bytes,
            env,
        });
        Ok(())
    }

    fn now(&self) -> f64 {
        self.0.borrow().clock as f64 * 1e-9
    }

    fn work(&mut self, d: Duration, _mode: WorkMode) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let mut c = self.0.borrow_mut();
        c.clock = c.clock.saturating_add(ns);
    }

    fn subscribe_failures(&mut self, subscriber: Pe, callback: Callback) {
        self.0.borrow_mut().subscribers.push((subscriber, callback));
    }

    fn resume_point(&self) -> Option<SimResume> {
        Some(self.0.borrow().resume_point())
    }

    fn checkpoint_committed(&mut self) {
        let mut c = self.0.borrow_mut();
        c.committed = Some(c.clock);
    }
}
