//! The threads layer's transport: a PE's port among the PEs of one process, an
//! inbox per PE and crossbeam channels between them (also the mpi layer's SMP
//! workers' port, with a way out to other ranks).

use super::clock::WallClock;
use super::fault::{damaged_arrival, Corrupter};
use super::{real_work, Arrival, Poll, Port};
use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::Envelope;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Polls of an empty inbox before yielding, then yields before parking.
const SPIN_POLLS: u32 = 200;
const YIELD_POLLS: u32 = 20;
/// Longest a PE blocks on its inbox at a time: well under `drive::STALL_PROBE_S`.
const WAIT_AT_MOST: Duration = Duration::from_millis(250);

/// Where a PE sends envelopes for PEs outside its process (the mpi layer's SMP mode);
/// the flag says to damage it on the wire (`--fault-corrupt-every`).
pub(crate) type RemoteSend = Box<dyn FnMut(Pe, Envelope, bool) -> Result<(), RuntimeError> + Send>;

/// A PE's transport among the PEs of one process, and beyond it through `remote`.
pub(crate) struct ThreadPort {
    /// This PE's inbox: what the process's PEs (and, on the mpi layer's SMP mode,
    /// the rank's communication thread) send it.
    inbox: Receiver<Arrival>,
    /// Inboxes of this process's PEs, by PE number minus `first`.
    peers: Arc<[Sender<Arrival>]>,
    first: Pe,
    /// Sends to PEs of other processes; none on the threads layer, which has one.
    remote: Option<RemoteSend>,
    clock: WallClock,
    /// Seconds added to the clock, to align it with other processes'.
    offset: f64,
    /// Envelopes held per local destination until the running handler returns.
    held: Vec<Vec<Envelope>>,
    /// Destinations with something held, in first-send order.
    dirty: Vec<Pe>,
    /// This PE, and which of its messages arrive damaged (`--fault-corrupt-every`).
    me: Pe,
    fault: Option<Corrupter>,
    /// The job's failure detector and this PE's injected failure, if any.
    failure: Option<Failure>,
}

/// The threads layer's stand-in for a failure detector: `down` is set when a PE
/// fails, and every PE's port then closes, so the job can roll back; a PE given
/// `after` fails when it has taken that many arrivals (`Config::inject_failure`).
struct Failure {
    down: Arc<AtomicBool>,
    after: Option<u64>,
    taken: u64,
}

impl ThreadPort {
    /// The transport of a PE whose process runs PEs `first..first + peers.len()`.
    pub(crate) fn new(
        inbox: Receiver<Arrival>,
        peers: Arc<[Sender<Arrival>]>,
        first: Pe,
        remote: Option<RemoteSend>,
        clock: WallClock,
        offset: f64,
    ) -> Self {
        ThreadPort {
            inbox,
            held: (0..peers.len()).map(|_| Vec::new()).collect(),
            peers,
            first,
            remote,
            clock,
            offset,
            dirty: Vec::new(),
            me: first,
            fault: None,
            failure: None,
        }
    }

    /// Close this port when `down` is set, and set it after taking `after`
    /// arrivals (the PE fails).
    pub(crate) fn with_failure(mut self, down: Arc<AtomicBool>, after: Option<u64>) -> Self {
        self.failure = Some(Failure {
            down,
            after,
            taken: 0,
        });
        self
    }

    /// True if a PE of the job failed: this port is closed.
    fn down(&self) -> bool {
        self.failure
            .as_ref()
            .is_some_and(|f| f.down.load(Ordering::Acquire))
    }

    /// Count an arrival taken; the one at which this PE fails is lost with it, and
    /// every PE is woken to find its port closed.
    fn taken(&mut self, p: Poll) -> Poll {
        let Some(f) = self.failure.as_mut() else {
            return p;
        };
        if matches!(p, Poll::Ready(_)) {
            f.taken += 1;
            if f.after == Some(f.taken) {
                f.down.store(true, Ordering::Release);
                for i in 0..self.peers.len() {
                    self.deliver(i, Arrival::Many(Vec::new()));
                }
                return Poll::Closed;
            }
        }
        p
    }

    /// Put `packet` into the inbox of local PE `i`.
    fn deliver(&self, i: usize, packet: Arrival) {
        // A send fails only when the receiving PE has already exited; the job is
        // ending and the message is dropped on purpose.
        let _ = self.peers[i].send(packet);
    }

    /// Damage every `every`th user message PE `me` sends (`--fault-corrupt-every`).
    pub(crate) fn with_faults(mut self, me: Pe, every: Option<u64>) -> Self {
        self.me = me;
        self.fault = Corrupter::new(every);
        self
    }

    /// Index of `to` among this process's PEs.
    fn local(&self, to: Pe) -> Option<usize> {
        let i = to.checked_sub(self.first)? as usize;
        (i < self.peers.len()).then_some(i)
    }
}

impl Port for ThreadPort {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        let Some(i) = self.local(to) else {
            return match self.remote.as_mut() {
                Some(remote) => {
                    let damage = self.fault.as_mut().is_some_and(|f| f.hit(&env));
                    remote(to, env, damage)
                }
                None => Err(RuntimeError::PeNotInProcess { to }),
            };
        };
        let slot = &mut self.held[i];
        if slot.is_empty() {
            self.dirty.push(to);
        }
        slot.push(env);
        Ok(())
    }

    fn held_tail(&mut self, to: Pe) -> Option<&mut Envelope> {
        let i = self.local(to)?;
        self.held.get_mut(i)?.last_mut()
    }

    fn flush(&mut self) {
        // Index, not `mem::take`: the list keeps its buffer, where taking it cost an
        // allocation and a free per flush, about one per message in a ping-pong.
        for d in 0..self.dirty.len() {
            let to = self.dirty[d];
            let Some(i) = self.local(to) else { continue };
            let slot = &mut self.held[i];
            if let Some(fault) = self.fault.as_mut() {
                // Judged here, not in `send`: a run held for `to` grows until now.
                let packets: Vec<Arrival> = std::mem::take(slot)
                    .into_iter()
                    .map(|env| {
                        if fault.hit(&env) {
                            damaged_arrival(&env, self.me, to)
                        } else {
                            Arrival::One(env)
                        }
                    })
                    .collect();
                packets.into_iter().for_each(|p| self.deliver(i, p));
                continue;
            }
            let packet = if slot.len() == 1 {
                match slot.pop() {
                    Some(env) => Arrival::One(env),
                    None => continue,
                }
            } else {
                Arrival::Many(std::mem::take(slot))
            };
            self.deliver(i, packet);
        }
        self.dirty.clear();
    }

    fn now(&self) -> f64 {
        self.clock.seconds() + self.offset
    }

    fn work(&mut self, d: Duration, mode: WorkMode) {
        real_work(d, mode);
    }

    fn poll(&mut self) -> Poll {
        if self.down() {
            return Poll::Closed;
        }
        let p = match self.inbox.try_recv() {
            Ok(a) => Poll::Ready(a.into()),
            Err(TryRecvError::Empty) => Poll::Empty,
            Err(TryRecvError::Disconnected) => Poll::Closed,
        };
        self.taken(p)
    }

    /// Spin, then yield, then block on the inbox.
    fn wait(&mut self) -> Poll {
        if self.down() {
            return Poll::Closed;
        }
        for i in 0..SPIN_POLLS + YIELD_POLLS {
            match self.inbox.try_recv() {
                Ok(a) => return self.taken(Poll::Ready(a.into())),
                Err(TryRecvError::Disconnected) => return Poll::Closed,
                Err(TryRecvError::Empty) if i < SPIN_POLLS => std::hint::spin_loop(),
                Err(TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
        // Bounded, so the drive loop can probe for a stall while it waits.
        match self.inbox.recv_timeout(WAIT_AT_MOST) {
            Ok(a) => self.taken(Poll::Ready(a.into())),
            Err(RecvTimeoutError::Timeout) => Poll::Empty,
            Err(RecvTimeoutError::Disconnected) => Poll::Closed,
        }
    }
}
