//! The mpi layer's SMP launch (`--pes-per-rank` above 1, Charm++'s SMP mode): worker
//! threads run the rank's PEs, each driving its PE over a `ThreadPort` port, while the
//! rank's own thread runs the communication loop of `machine::mpi::smp`.

use super::rank_start::RankStart;
use super::threads::{join_pes, PeThread};
use super::Job;
use crate::api::report::RunReport;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::machine::clock::WallClock;
use crate::machine::mpi::link::{shut_down, Encoded, Link};
use crate::machine::mpi::smp::{communicate, DeathWatch, Route, OUT_QUEUE};
use crate::machine::threads::{RemoteSend, ThreadPort};
use crate::machine::Arrival;
use crossbeam_channel::{bounded, unbounded, Sender};
use mpi::topology::SimpleCommunicator;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Run this rank's `ppr` PEs on worker threads until the job exits.
pub(super) fn run_rank(
    world: &SimpleCommunicator,
    job: Job,
    ppr: usize,
) -> Result<RunReport, RuntimeError> {
    let provided = mpi::environment::threading_support();
    if provided < mpi::Threading::Funneled {
        return Err(RuntimeError::MpiThreading {
            per_rank: ppr,
            provided: format!("{provided:?}"),
        });
    }
    let (start, comm) = RankStart::new(world, &job, ppr)?;
    let mut link = Link::new(comm, false, job.config.fault_hold());
    let first = start.rank * ppr as Pe;
    // Unbounded, as the threads layer's inboxes (launch/threads.rs says why); what
    // crosses ranks is bounded by `OUT_QUEUE` and the link's bytes in flight.
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..ppr).map(|_| unbounded()).unzip();
    let peers: Arc<[Sender<Arrival>]> = txs.into();
    let (out_tx, out_rx) = bounded::<(Pe, Encoded)>(OUT_QUEUE);
    // Workers keep time on their own clocks, started now and set to rank 0's.
    let clock = WallClock::start();
    let offset = mpi::time() - start.epoch;
    let died = Arc::new(AtomicBool::new(false));
    let mut main = Some(job.main);
    let mut handles = Vec::with_capacity(ppr);
    for (i, rx) in rxs.into_iter().enumerate() {
        let pe = first + i as Pe;
        let mut setup = start.pe_setup(&job.config, pe);
        setup.restart = job.restart.clone();
        let tx = out_tx.clone();
        let remote: RemoteSend = Box::new(move |to, env, damage| {
            let mut encoded = Encoded::new(&env, to, Vec::with_capacity)?;
            if damage {
                encoded.damage();
            }
            tx.send((to, encoded))
                .map_err(|_| RuntimeError::CommThreadStopped { pe })
        });
        let net = ThreadPort::new(rx, peers.clone(), first, Some(remote), clock, offset)
            .with_faults(pe, job.config.fault_corrupt_every);
        let thread = PeThread {
            setup,
            registry: job.registry.clone(),
            net,
            main: if pe == 0 { main.take() } else { None },
            // Ranks sharing a node would pin their PEs to the same CPUs; mpirun
            // binds ranks itself.
            cpu: None,
        };
        let spawned = thread.spawn(DeathWatch(died.clone()));
        match spawned {
            Ok(handle) => handles.push(handle),
            // The PEs already started, and every other rank, would wait for this one.
            Err(e) => {
                let reason = e.to_string();
                link.abort(&RuntimeError::ThreadStart { pe, reason }.to_string())
            }
        }
    }
    drop(out_tx);
    let route = Route {
        peers,
        first,
        ppr: ppr as Pe,
    };
    communicate(&mut link, &route, &out_rx, &died);
    shut_down(&mut link);
    start.finish(&link.comm, join_pes(handles, first))
}
