//! The mpi layer's launch: PEs on MPI ranks under mpirun, one per rank unless
//! --pes-per-rank says more (`smp.rs`). Startup checks and the end-of-job exchange
//! are in `rank_start.rs`; the transport (`machine::mpi`) moves the envelopes.

use super::rank_start::RankStart;
use super::{smp, Job, MachineLayer};
use crate::api::report::RunReport;
use crate::base::error::RuntimeError;
use crate::engine::PeRuntime;
use crate::machine::mpi::link::{shut_down, Link};
use crate::machine::mpi::{finish_mpi, session_active, start_mpi, world, MpiPort};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

/// One PE per MPI rank.
pub struct Mpi;

impl MachineLayer for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let one_shot = !session_active();
        start_mpi()?;
        let world = world().ok_or(RuntimeError::MpiNotInitialised)?;
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

fn run_rank(world: &SimpleCommunicator, job: Job) -> Result<RunReport, RuntimeError> {
    let (start, comm) = RankStart::new(world, &job, 1)?;
    let link = Rc::new(RefCell::new(Link::new(comm, true, job.config.fault_hold())));
    let mut setup = start.pe_setup(&job.config, start.rank);
    setup.restart = job.restart.clone();
    let net = MpiPort::new(
        start.rank,
        link.clone(),
        start.epoch,
        job.config.fault_corrupt_every,
    );
    let mut rt = PeRuntime::new(setup, job.registry.clone(), Box::new(net));
    if start.rank == 0 {
        rt.run_main(job.main);
    }
    rt.drive();
    shut_down(&mut link.borrow_mut());
    let report = start.finish(&link.borrow().comm, vec![rt.into_report()]);
    report
}
