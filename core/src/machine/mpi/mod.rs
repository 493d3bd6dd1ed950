//! The mpi layer: PEs on MPI ranks under mpirun, one per rank unless --pes-per-rank says more.
//!
//! One thread owns every MPI object (rsmpi communicators are not `Send`): the rank's
//! thread runs its PE and drives MPI between handlers, through its `Link`
//! (`link.rs`): nonblocking sends from owned buffers, receives posted ahead of
//! arrivals for short envelopes, and matched probes for long ones (announced by a
//! notice) and for segments, so a message is taken whole whatever its size. The
//! startup checks and the end-of-job exchange are in `rank_start.rs`. Envelopes travel in
//! the versioned wire form of `crate::wire`; bad bytes become a `RuntimeError::Decode`
//! naming the sending rank, handled by the job's `--on-error` policy.
//!
//! Startup: the registry digests of all ranks are compared (a mismatch ends every
//! rank with an error naming the first differing type), and each rank measures its
//! clock offset to rank 0 so times agree across ranks. Shutdown: after the job's exit,
//! each rank keeps receiving (and dropping) while its own sends complete, then meets
//! the others in a nonblocking barrier, so no rank finalizes while a peer still sends
//! to it; finally the ranks exchange their reports, so every rank returns the whole
//! job's `RunReport`.
//!
//! With `--pes-per-rank` above 1 (Charm++'s SMP mode, `smp.rs`), worker threads run
//! the rank's PEs and this rank's thread only moves envelopes to and from MPI.

mod backoff;
pub(crate) mod link;
mod posted_receive;
pub(crate) mod smp;

pub(crate) use backoff::Backoff;
use link::Link;

use super::fault::Corrupter;
use super::{real_work, Arrival, Arrived, Poll, Port};
use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::Envelope;
use crate::wire;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    static SESSION: RefCell<Session> = const { RefCell::new(Session::Never) };
}

enum Session {
    Never,
    Active(Universe),
    Finalized,
}

/// Keeps MPI initialised across several runs in one process, and finalises it when
/// dropped. Without one, a run on the mpi layer initialises and finalises MPI itself.
pub struct MpiSession {
    /// MPI lives on the thread that initialised it.
    _not_send: PhantomData<*const ()>,
}

impl MpiSession {
    /// Initialise MPI on this thread.
    pub fn init() -> Result<Self, RuntimeError> {
        start_mpi()?;
        Ok(MpiSession {
            _not_send: PhantomData,
        })
    }
}

impl MpiSession {
    /// MPI's world communicator, for programs that also use MPI directly (chorus
    /// itself talks on a duplicate of it, so the two never mix).
    pub fn world(&self) -> SimpleCommunicator {
        world().expect("an MpiSession keeps MPI initialised")
    }
}

impl Drop for MpiSession {
    fn drop(&mut self) {
        finish_mpi();
    }
}

pub(crate) fn start_mpi() -> Result<(), RuntimeError> {
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        match &*s {
            Session::Active(_) => Ok(()),
            Session::Finalized => Err(RuntimeError::MpiFinalised),
            Session::Never => {
                let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
                    .ok_or(RuntimeError::MpiInitFailed)?;
                *s = Session::Active(universe);
                Ok(())
            }
        }
    })
}

pub(crate) fn finish_mpi() {
    SESSION.with(|s| {
        // Dropping the universe finalises MPI.
        *s.borrow_mut() = Session::Finalized;
    });
}

pub(crate) fn session_active() -> bool {
    SESSION.with(|s| matches!(&*s.borrow(), Session::Active(_)))
}

pub(crate) fn world() -> Option<SimpleCommunicator> {
    SESSION.with(|s| match &*s.borrow() {
        Session::Active(u) => Some(u.world()),
        _ => None,
    })
}

/// The PE's transport: sends go straight to MPI.
pub(crate) struct MpiPort {
    /// This rank's PE.
    me: Pe,
    link: Rc<RefCell<Link>>,
    /// MPI time of this rank's job start, aligned to rank 0's.
    epoch: f64,
    /// How long the PE waits once idle.
    backoff: Backoff,
    /// Which of its messages arrive damaged (`--fault-corrupt-every`).
    fault: Option<Corrupter>,
}

impl MpiPort {
    /// The port of PE `me`, the only one of its rank, over `link`.
    pub(crate) fn new(
        me: Pe,
        link: Rc<RefCell<Link>>,
        epoch: f64,
        fault_corrupt_every: Option<u64>,
    ) -> Self {
        MpiPort {
            me,
            link,
            epoch,
            backoff: Backoff(0),
            fault: Corrupter::new(fault_corrupt_every),
        }
    }
}

impl Port for MpiPort {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        let damage = self.fault.as_mut().is_some_and(|f| f.hit(&env));
        self.link.borrow_mut().send(to, &env, damage)
    }

    fn flush(&mut self) {
        self.link.borrow_mut().progress();
    }

    fn now(&self) -> f64 {
        mpi::time() - self.epoch
    }

    fn work(&mut self, d: Duration, mode: WorkMode) {
        real_work(d, mode);
    }

    /// Take one message off the network and decode it; bad bytes become the error,
    /// naming the sending rank.
    fn poll(&mut self) -> Poll {
        let Some((whole, source)) = self.link.borrow_mut().receive() else {
            return Poll::Empty;
        };
        self.backoff.reset();
        let len = whole.bytes().len();
        let what = match wire::decode_from(Arc::clone(&whole.buf), whole.at, self.me) {
            Ok(env) => Arrival::One(env),
            Err(e) => Arrival::undecodable(whole.bytes(), e.at(self.me, &format!("rank {source}"))),
        };
        Poll::Ready(Arrived { what, bytes: len })
    }

    /// Spin, yield or nap once: arrivals are taken by the next `poll`.
    fn wait(&mut self) -> Poll {
        self.backoff.wait();
        Poll::Empty
    }

    fn progress(&mut self) -> bool {
        let mut l = self.link.borrow_mut();
        let progressed = l.sending() && l.progress();
        if progressed {
            self.backoff.reset();
        }
        progressed
    }

    /// MPI made no progress while the handler computed, and OpenMPI's first test of
    /// a posted receive after that may only progress without completing it, so a
    /// second one looks again before the next handler runs.
    fn after_compute(&mut self) {
        let mut l = self.link.borrow_mut();
        if !l.pull() {
            l.pull();
        }
    }
}
