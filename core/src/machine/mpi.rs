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
mod link;
mod posted_receive;
mod rank_start;
mod smp;

use backoff::Backoff;
use link::{shut_down, Encoded, Link};
use rank_start::RankStart;

use super::{real_work, Job, MachineLayer, Transport};
use crate::api::report::RunReport;
use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::PeRuntime;
use crate::msg::envelope::Envelope;
use crate::wire;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::time::Duration;

/// Messages a PE runs, and takes off the network, between two looks at it.
const BATCH: usize = 64;
/// Bytes of envelopes a PE takes off the network before it runs their handlers: a
/// pass holds at most eight envelopes of 512 KiB or more, as many receive buffers as
/// the link recycles, so a stream of long messages keeps reusing them instead of
/// faulting in fresh pages.
const PASS_BYTES: usize = 4 << 20;

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

fn start_mpi() -> Result<(), RuntimeError> {
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        match &*s {
            Session::Active(_) => Ok(()),
            Session::Finalized => Err(RuntimeError::Invalid(
                "MPI was already finalised in this process; hold a chorus_core::MpiSession to run several jobs".into(),
            )),
            Session::Never => {
                let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
                    .ok_or_else(|| {
                        RuntimeError::Invalid("MPI could not be initialised (was it already initialised outside chorus?)".into())
                    })?;
                *s = Session::Active(universe);
                Ok(())
            }
        }
    })
}

fn finish_mpi() {
    SESSION.with(|s| {
        // Dropping the universe finalises MPI.
        *s.borrow_mut() = Session::Finalized;
    });
}

fn session_active() -> bool {
    SESSION.with(|s| matches!(&*s.borrow(), Session::Active(_)))
}

fn world() -> Option<SimpleCommunicator> {
    SESSION.with(|s| match &*s.borrow() {
        Session::Active(u) => Some(u.world()),
        _ => None,
    })
}

/// One PE per MPI rank.
pub struct Mpi;

impl MachineLayer for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let one_shot = !session_active();
        start_mpi()?;
        let world =
            world().ok_or_else(|| RuntimeError::Invalid("MPI is not initialised".into()))?;
        let ppr = job.config.pes_per_rank as usize;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if ppr > 1 {
                smp::run_rank(&world, job, ppr)
            } else {
                run_rank(&world, job)
            }
        }));
        let result = match outcome {
            Ok(r) => r,
            Err(p) => {
                // A bug in the runtime itself: take the whole job down with the
                // message rather than leave the other ranks waiting.
                eprintln!(
                    "chorus: rank {} panicked: {}; aborting the MPI job",
                    world.rank(),
                    crate::base::error::panic_message(p)
                );
                world.abort(70);
            }
        };
        if one_shot {
            finish_mpi();
        }
        result
    }
}

/// The PE's transport: sends go straight to MPI.
struct MpiNet {
    link: Rc<RefCell<Link>>,
    /// MPI time of this rank's job start, aligned to rank 0's.
    epoch: f64,
}

impl Transport for MpiNet {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        self.link.borrow_mut().send(to, &env)
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
}

fn run_rank(world: &SimpleCommunicator, job: Job) -> Result<RunReport, RuntimeError> {
    let (start, comm) = RankStart::new(world, &job, 1)?;
    let link = Rc::new(RefCell::new(Link::new(comm, true)));
    let setup = start.pe_setup(&job.config, start.rank);
    let net = MpiNet {
        link: link.clone(),
        epoch: start.epoch,
    };
    let mut rt = PeRuntime::new(setup, job.registry.clone(), Box::new(net));
    if start.rank == 0 {
        rt.run_main(job.main);
    }
    pe_loop(&mut rt, &link);
    shut_down(&mut link.borrow_mut());
    let report = start.finish(&link.borrow().comm, vec![rt.into_report()]);
    report
}

/// Run the PE until the job exits, taking messages from the network between handlers.
fn pe_loop(rt: &mut PeRuntime, link: &Rc<RefCell<Link>>) {
    let me = rt.core.me;
    let mut backoff = Backoff(0);
    // Quiescence detection hears of idleness once per idle spell, not on every poll.
    let mut idle_told = false;
    // Set after a handler computed: MPI made no progress meanwhile, and OpenMPI's
    // first test of a posted receive after that may only progress without completing
    // it, so a second one looks again before the next handler runs.
    let mut computed = false;
    // Set while the last pass found nothing to do.
    let mut idle = false;
    while !rt.exiting() {
        let mut busy = false;
        if std::mem::take(&mut computed) {
            let mut l = link.borrow_mut();
            if !l.pull() {
                l.pull();
            }
        }
        // Bounded, so a peer streaming faster than the handlers run cannot make the
        // PE hold ever more received envelopes (their buffers are reused only once
        // their messages have run).
        let (mut taken, mut taken_bytes) = (0, 0);
        while taken < BATCH && taken_bytes < PASS_BYTES {
            let got = link.borrow_mut().receive();
            let Some((bytes, source)) = got else { break };
            busy = true;
            taken += 1;
            taken_bytes += bytes.len();
            match wire::decode(bytes, me) {
                Ok(env) => rt.accept(env),
                Err(e) => rt.core.fail(e.at(me, &format!("rank {source}"))),
            }
            // A PE that was idle runs its first arrival at once: the probe that would
            // end the drain costs every message's latency. What that arrival starts
            // locally runs in the same pass (up to a batch), before the network is
            // looked at again: on an oversubscribed node OpenMPI yields the CPU on
            // every empty test (mpi_yield_when_idle), so a look between a handler and
            // the local message it sent cost each wake-up about 5 us. The price:
            // whatever else arrived with the first message, expedited or not, is
            // drained only after that batch, instead of competing with it by priority.
            if std::mem::take(&mut idle) {
                break;
            }
        }
        let mut ran = 0;
        while ran < BATCH && !rt.exiting() && rt.step() {
            ran += 1;
            if rt.take_worked() {
                computed = true;
                break;
            }
        }
        // Sends are completed after the handlers, off the path of the next reply.
        {
            let mut l = link.borrow_mut();
            if l.sending() {
                busy |= l.progress();
            }
        }
        if rt.exiting() {
            break;
        }
        idle = !busy && ran == 0;
        if !idle {
            idle_told = false;
            backoff.reset();
        } else if !idle_told {
            rt.on_idle();
            rt.trace_idle();
            idle_told = true;
        } else {
            backoff.wait();
        }
    }
}
