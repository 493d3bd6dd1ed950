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
use std::time::{Duration, Instant};

/// Polls of an empty inbox before yielding, then yields before parking, when the
/// PEs outnumber the cores (no spin budget).
const SPIN_POLLS: u32 = 200;
const YIELD_POLLS: u32 = 20;
/// How long an idle PE keeps polling its inbox before it parks, when every PE of the
/// process has a core of its own: a parked PE is woken by a futex, which costs the
/// sender and the sleeper microseconds per message (Charm++'s multicore build
/// busy-polls). Long enough to cover the gap between a reply and the next request of
/// a collective loop, short enough that an idle job stops burning its cores at once.
pub(crate) const IDLE_SPIN: Duration = Duration::from_micros(100);
/// How long a spinning PE polls before it also yields at each look at the clock, for
/// PEs not pinned to a CPU of their own (`machine::affinity`; the mpi layer's SMP
/// workers): two the scheduler has put on one core (it wakes a parked thread on its
/// waker's) then take turns at once instead of each spinning out its budget while
/// the other waits for the core (xcastredn's loops 23-25 us instead of 206 us).
/// Alone on its core, a yield returns at once.
const YIELD_AFTER: Duration = Duration::from_micros(10);
/// Polls between two looks at the clock while spinning on the budget: a clock read
/// costs about as much as 30 empty polls.
const CLOCK_EVERY: u32 = 64;
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
    /// How long `wait` polls before it parks; zero: a few spins and yields only.
    spin_for: Duration,
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
            spin_for: Duration::ZERO,
        }
    }

    /// Keep polling an empty inbox for `budget` before parking (see `idle_spin`).
    pub(crate) fn with_idle_spin(mut self, budget: Duration) -> Self {
        self.spin_for = budget;
        self
    }

    /// Poll the inbox without parking: for `spin_for` if set, else `SPIN_POLLS`
    /// spins and `YIELD_POLLS` yields. `None` if nothing came.
    fn poll_idle(&mut self) -> Option<Poll> {
        let started = (!self.spin_for.is_zero()).then(Instant::now);
        let mut i = 0u32;
        loop {
            i = i.wrapping_add(1);
            match self.inbox.try_recv() {
                Ok(a) => return Some(self.taken(Poll::Ready(a.into()))),
                Err(TryRecvError::Disconnected) => return Some(Poll::Closed),
                Err(TryRecvError::Empty) => {}
            }
            match started {
                Some(t) if i.is_multiple_of(CLOCK_EVERY) => {
                    let spun = t.elapsed();
                    if spun >= self.spin_for {
                        return None;
                    }
                    if spun >= YIELD_AFTER {
                        std::thread::yield_now();
                    }
                }
                Some(_) => std::hint::spin_loop(),
                None if i <= SPIN_POLLS => std::hint::spin_loop(),
                None if i <= SPIN_POLLS + YIELD_POLLS => std::thread::yield_now(),
                None => return None,
            }
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

    /// Poll (for the spin budget, or spin and yield a little), then block on the inbox.
    fn wait(&mut self) -> Poll {
        if self.down() {
            return Poll::Closed;
        }
        if let Some(p) = self.poll_idle() {
            return p;
        }
        // Bounded, so the drive loop can probe for a stall while it waits.
        match self.inbox.recv_timeout(WAIT_AT_MOST) {
            Ok(a) => self.taken(Poll::Ready(a.into())),
            Err(RecvTimeoutError::Timeout) => Poll::Empty,
            Err(RecvTimeoutError::Disconnected) => Poll::Closed,
        }
    }
}

/// The spin budget of an idle PE among `pes` PEs of one process: `IDLE_SPIN` if each
/// has a core of its own beside what other processes are running, else none. A
/// spinning PE would hold the core a busy one needs; on a machine other processes
/// already oversubscribe it also loses the scheduler's wake-up preference a parked
/// thread gets: xcastredn's fastest loop on 2 PEs went from 14-31 us to 210-250 us
/// at load 27 on 2 cores. Called once, before the PEs start.
pub(crate) fn idle_spin(pes: usize) -> Duration {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if spin_pays(pes, cores, others_running()) {
        IDLE_SPIN
    } else {
        Duration::ZERO
    }
}

/// True if `pes` spinning PEs keep a core each on `cores` cores while `others`
/// threads of other processes run (unknown: assumed none).
fn spin_pays(pes: usize, cores: usize, others: Option<usize>) -> bool {
    pes.saturating_add(others.unwrap_or(0)) <= cores
}

/// Samples of the runnable count taken; their least is kept, so a command that
/// runs for a moment does not count.
const RUNNING_SAMPLES: u32 = 3;

/// Threads of other processes ready to run now (Linux's `procs_running` less the
/// one asking), the least of a few samples a millisecond apart. Not the load
/// average: that remembers for a minute the job that just ended (the previous run
/// of a benchmark, whose own PEs then switched the next run's spin off).
fn others_running() -> Option<usize> {
    let mut least: Option<usize> = None;
    for i in 0..RUNNING_SAMPLES {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with("procs_running "))?;
        let running: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        let others = running.saturating_sub(1);
        least = Some(least.map_or(others, |l| l.min(others)));
    }
    least
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;

    /// A port alone in its process with `budget`, and the sender of its inbox.
    fn port(budget: Duration) -> (ThreadPort, Sender<Arrival>) {
        let (tx, rx) = unbounded();
        let peers: Arc<[Sender<Arrival>]> = vec![tx.clone()].into();
        let port =
            ThreadPort::new(rx, peers, 0, None, WallClock::start(), 0.0).with_idle_spin(budget);
        (port, tx)
    }

    #[test]
    fn the_spin_budget_is_kept_only_when_every_pe_has_a_core() {
        assert!(spin_pays(2, 2, Some(0)));
        assert!(spin_pays(2, 2, None));
        assert!(
            spin_pays(1, 2, Some(1)),
            "one core each, beside another job"
        );
        assert!(!spin_pays(4, 2, Some(0)), "more PEs than cores");
        assert!(
            !spin_pays(2, 2, Some(1)),
            "another process holds a core: a PE would wait for it"
        );
        assert!(!spin_pays(usize::MAX, 2, Some(usize::MAX)), "no overflow");
        assert_eq!(idle_spin(usize::MAX), Duration::ZERO);
    }

    #[test]
    fn a_spinning_port_polls_for_its_budget_then_gives_up() {
        let budget = Duration::from_millis(2);
        let (mut p, _tx) = port(budget);
        let t = Instant::now();
        assert!(p.poll_idle().is_none());
        assert!(t.elapsed() >= budget, "gave up after {:?}", t.elapsed());
    }

    #[test]
    fn a_parked_port_wakes_for_an_arrival_sent_after_its_spin() {
        for budget in [Duration::ZERO, Duration::from_micros(50)] {
            let (mut p, tx) = port(budget);
            let sender = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                tx.send(Arrival::Many(Vec::new())).is_ok()
            });
            let mut woke = false;
            // A loaded machine may delay the sender past one `WAIT_AT_MOST`.
            for _ in 0..20 {
                match p.wait() {
                    Poll::Ready(_) => {
                        woke = true;
                        break;
                    }
                    Poll::Empty => {}
                    Poll::Closed => break,
                }
            }
            assert!(sender.join().unwrap_or(false));
            assert!(woke, "budget {budget:?}: the arrival never woke the port");
        }
    }

    #[test]
    fn a_spinning_port_sees_a_closed_inbox() {
        let (tx, rx) = unbounded::<Arrival>();
        let peers: Arc<[Sender<Arrival>]> = vec![tx].into();
        let mut p =
            ThreadPort::new(rx, peers, 0, None, WallClock::start(), 0.0).with_idle_spin(IDLE_SPIN);
        // The port's own peer list holds a sender; drop it so the inbox disconnects.
        p.peers = Arc::from(Vec::new());
        assert!(matches!(p.wait(), Poll::Closed));
    }
}
