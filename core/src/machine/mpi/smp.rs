//! Several PEs per rank (Charm++'s SMP mode, `--pes-per-rank`): worker threads run
//! the rank's PEs and talk among themselves as the threads layer does, without
//! serializing; the rank's own thread owns every MPI object and moves envelopes
//! between the workers and the network.
//!
//! PE `p` lives on rank `p / pes_per_rank`. A worker encodes what it sends to other
//! ranks itself (so an envelope that cannot be encoded fails on the PE that sent it).
//! The communication thread posts those bytes, and decodes each arrival for the PE
//! its header names (handing that PE the error if it does not decode): decoding there
//! keeps the workers' inboxes one kind of packet, at the cost of serialising a
//! rank's decoding on one thread.

use super::link::{Encoded, Link, Whole};
use super::Backoff;
use crate::base::ids::Pe;
use crate::machine::Arrival;
use crate::wire;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Envelopes the workers may have encoded for other ranks that the communication
/// thread has not yet handed to MPI. A worker that finds the queue full waits: when
/// MPI falls behind, the workers slow down instead of encoding without bound. The
/// communication thread never waits on a worker (it keeps receiving while its own
/// sends wait for room), so the wait always ends.
pub(crate) const OUT_QUEUE: usize = 1024;

/// Where envelopes go: this rank's PEs' inboxes, and the rank of any other PE.
pub(crate) struct Route {
    pub(crate) peers: Arc<[Sender<Arrival>]>,
    pub(crate) first: Pe,
    pub(crate) ppr: Pe,
}

impl Route {
    /// Hand an arrived envelope to the PE its header names, or the decoding error to
    /// that PE (or to this rank's first PE if the header names none of ours).
    fn arrived(&self, whole: Whole, source: i32) {
        let ours = |pe: Pe| pe.checked_sub(self.first).filter(|&i| i < self.ppr);
        let to = wire::destination(whole.bytes())
            .filter(|&pe| ours(pe).is_some())
            .unwrap_or(self.first);
        let packet = match wire::decode_from(Arc::clone(&whole.buf), whole.at, to) {
            Ok(env) => Arrival::One(env),
            Err(e) => Arrival::undecodable(whole.bytes(), e.at(to, &format!("rank {source}"))),
        };
        // A PE that has exited drops what still arrives, as on one PE per rank.
        let _ = self.peers[(to - self.first) as usize].send(packet);
    }
}

/// Set when a worker thread unwinds: a PE lost outside any handler would leave the
/// job waiting for it, so the communication thread takes the job down instead.
pub(crate) struct DeathWatch(pub(crate) Arc<AtomicBool>);

impl Drop for DeathWatch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Move envelopes until every worker has exited: the workers' sends onto the
/// network, arrivals to the workers.
pub(crate) fn communicate(
    link: &mut Link,
    route: &Route,
    out_rx: &Receiver<(Pe, Encoded)>,
    died: &AtomicBool,
) {
    let mut backoff = Backoff(0);
    loop {
        let mut busy = false;
        // At most a queue's worth per pass, so arrivals are handed on even while the
        // workers keep the queue full.
        for _ in 0..OUT_QUEUE {
            match out_rx.try_recv() {
                Ok((to, encoded)) => {
                    busy = true;
                    link.post_encoded(to / route.ppr, encoded);
                }
                Err(TryRecvError::Empty) => break,
                // Every worker has exited and dropped its sender.
                Err(TryRecvError::Disconnected) => return,
            }
        }
        while let Some((whole, source)) = link.receive() {
            busy = true;
            route.arrived(whole, source);
        }
        if link.sending() {
            busy |= link.progress();
        }
        if died.load(Ordering::Relaxed) {
            link.abort("a PE thread died outside its handlers");
        }
        if busy {
            backoff.reset();
        } else if let Some(nap) = backoff.next() {
            // Napping on the workers' queue: their sends go out at once.
            match out_rx.recv_timeout(nap) {
                Ok((to, encoded)) => {
                    backoff.reset();
                    link.post_encoded(to / route.ppr, encoded);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}
