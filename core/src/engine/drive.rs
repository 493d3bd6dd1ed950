//! The drive loop: the one way a PE with an inbox runs, whatever its machine layer
//! (threads, SMP workers, MPI ranks). It takes arrivals from the PE's `Port`, runs
//! ready messages, tells quiescence detection when the PE is idle and lets the port
//! wait. The sim layer, which has no inbox, drives the same steps from its event
//! loop (`launch::sim`).

use super::ledger::Dropped;
use super::PeRuntime;
use crate::machine::{Arrival, Poll};

/// Messages a PE runs, and arrivals it takes, between two looks at its port: bounds
/// how long a newly arrived high-priority message waits behind queued ones.
pub(crate) const BATCH: usize = 64;
/// Bytes of arrivals a PE takes off its port before it runs their handlers: a pass
/// holds at most two envelopes of 512 KiB or more, so a stream of long messages
/// keeps reusing one or two receive buffers, still in cache when MPI writes the next
/// (with 4 MiB a rank cycled through five: 1 MiB bandwidth 0.81-0.84x raw MPI
/// instead of 0.85-0.87x).
const PASS_BYTES: usize = 1 << 20;
/// Seconds PE 0 waits idle before it probes for a stall; a port's `wait` returns at
/// least this often. A probe is two quiescence waves, which wait at busy PEs, so a
/// job that is only slow pays about one wave a second.
pub(crate) const STALL_PROBE_S: f64 = 1.0;

impl PeRuntime {
    /// Run this PE until the job exits or its port closes.
    pub(crate) fn drive(&mut self) {
        // Quiescence detection hears of idleness once per idle spell, not every poll.
        let mut idle_told = false;
        // Set while the last pass found nothing to do.
        let mut idle = false;
        // Set when the port's wait handed over an arrival: it runs before anything
        // else is taken, as the first arrival after an idle spell does.
        let mut woken = false;
        // When this PE last started to wait, or probed for a stall (root only).
        let mut waiting_since: Option<f64> = None;
        while !self.exiting() {
            // Bounded, so a peer streaming faster than the handlers run cannot make
            // the PE hold ever more arrivals.
            let (mut taken, mut taken_bytes) = (0, 0);
            let polling = !std::mem::take(&mut woken);
            while polling && taken < BATCH && taken_bytes < PASS_BYTES {
                let arrival = match self.core.port.poll() {
                    Poll::Ready(a) => a,
                    Poll::Empty => break,
                    Poll::Closed => return,
                };
                taken += 1;
                taken_bytes += arrival.bytes;
                self.accept_arrival(arrival.what);
                // A PE that was idle runs its first arrival at once: looking for more
                // first costs every message's latency, and on an oversubscribed MPI
                // node a look yields the CPU (OpenMPI's mpi_yield_when_idle), about
                // 5 us per wake-up. What else came with it waits one batch.
                if std::mem::take(&mut idle) {
                    break;
                }
            }
            let mut ran = 0;
            while ran < BATCH && !self.exiting() && self.step() {
                ran += 1;
                if self.take_worked() {
                    self.core.port.after_compute();
                    break;
                }
            }
            // Sends are completed after the handlers, off the path of the next reply.
            let progressed = self.core.port.progress();
            if self.exiting() {
                return;
            }
            idle = taken == 0 && ran == 0 && !progressed;
            if !idle {
                idle_told = false;
                waiting_since = None;
                continue;
            }
            if !idle_told {
                idle_told = true;
                self.on_idle();
                if self.exiting() {
                    return;
                }
                if self.queued() > 0 {
                    // The idle notice queued work of its own (a quiescence wave).
                    idle = false;
                    idle_told = false;
                    continue;
                }
                self.trace_idle();
                continue;
            }
            if self.stall_probe_due(&mut waiting_since) {
                idle_told = false;
                continue;
            }
            match self.core.port.wait() {
                Poll::Ready(a) => {
                    self.accept_arrival(a.what);
                    woken = true;
                }
                Poll::Empty => {}
                Poll::Closed => return,
            }
        }
    }

    /// True if this PE, the root of the quiescence tree, has waited idle for
    /// `STALL_PROBE_S` and started a probe for a stall (its own part in the wave runs
    /// when it next tells quiescence detection it is idle).
    fn stall_probe_due(&mut self, waiting_since: &mut Option<f64>) -> bool {
        if self.core.tree_parent().is_some() {
            return false;
        }
        let now = self.core.port.now();
        let since = *waiting_since.get_or_insert(now);
        if now - since < STALL_PROBE_S {
            return false;
        }
        *waiting_since = Some(now);
        // PEs writing a checkpoint send nothing counted: quiescent, not stalled.
        if self.checkpoints.get().is_some_and(|c| c.writing()) || !self.core.qd.get_mut().probe() {
            return false;
        }
        self.start_wave();
        self.core.port.flush();
        true
    }

    /// Take one arrival: envelopes go to the queue, a transport's error to the job's
    /// `--on-error` policy.
    fn accept_arrival(&mut self, what: Arrival) {
        match what {
            Arrival::One(env) => self.accept(env),
            Arrival::Many(envs) => envs.into_iter().for_each(|env| self.accept(env)),
            Arrival::Failed {
                err,
                weight: Some(weight),
            } => {
                // Dropped with a reason is processed: the sender counted it as sent,
                // and quiescence waits until every sent message is processed.
                self.core.ledger.dropped(weight, Dropped::OnWire);
                self.core.fail(err);
            }
            Arrival::Failed { err, weight: None } => self.core.abort(err),
        }
    }
}
