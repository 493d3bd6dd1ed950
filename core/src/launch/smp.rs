//! The mpi layer's SMP launch (`--pes-per-rank` above 1, Charm++'s SMP mode): worker
//! threads run the rank's PEs, each driving its PE over a `ThreadNet` port, while the
//! rank's own thread runs the communication loop of `machine::mpi::smp`.

use super::rank_start::RankStart;
use super::Job;
use crate::api::report::{PeReport, RunReport};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::PeRuntime;
use crate::machine::mpi::link::{shut_down, Encoded, Link};
use crate::machine::mpi::smp::{communicate, DeathWatch, Route, OUT_QUEUE};
use crate::machine::threads::{RemoteSend, ThreadNet};
use crate::machine::Arrival;
use crossbeam_channel::{bounded, unbounded, Sender};
use mpi::topology::SimpleCommunicator;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Run this rank's `ppr` PEs on worker threads until the job exits.
pub(super) fn run_rank(
    world: &SimpleCommunicator,
    job: Job,
    ppr: usize,
) -> Result<RunReport, RuntimeError> {
    let provided = mpi::environment::threading_support();
    if provided < mpi::Threading::Funneled {
        return Err(RuntimeError::Invalid(format!(
            "--pes-per-rank {ppr} needs MPI_THREAD_FUNNELED, but this MPI provides only {provided:?}: run one PE per rank"
        )));
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
    let clock_start = Instant::now();
    let offset = mpi::time() - start.epoch;
    let died = Arc::new(AtomicBool::new(false));
    let mut main = Some(job.main);
    let mut handles = Vec::with_capacity(ppr);
    for (i, rx) in rxs.into_iter().enumerate() {
        let pe = first + i as Pe;
        let setup = start.pe_setup(&job.config, pe);
        let tx = out_tx.clone();
        let remote: RemoteSend = Box::new(move |to, env, damage| {
            let mut encoded = Encoded::new(&env, to, Vec::with_capacity)?;
            if damage {
                encoded.damage();
            }
            tx.send((to, encoded)).map_err(|_| {
                RuntimeError::Invalid(format!(
                    "PE {pe}: the rank's communication thread has stopped"
                ))
            })
        });
        let net = ThreadNet::new(rx, peers.clone(), first, Some(remote), clock_start, offset)
            .with_faults(pe, job.config.fault_corrupt_every);
        let reg = job.registry.clone();
        let main = if pe == 0 { main.take() } else { None };
        let watch = DeathWatch(died.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("chorus-pe-{pe}"))
            .spawn(move || {
                let _watch = watch;
                let _pe = tracing::debug_span!("pe", pe).entered();
                let mut rt = PeRuntime::new(setup, reg, Box::new(net));
                if let Some(main) = main {
                    rt.run_main(main);
                }
                rt.drive();
                rt.into_report()
            });
        match spawned {
            Ok(handle) => handles.push(handle),
            // The PEs already started, and every other rank, would wait for this one.
            Err(e) => link.abort(&format!("could not start the thread of PE {pe}: {e}")),
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
    start.finish(&link.comm, join(handles, first))
}

/// The workers' reports, in PE order; a worker that died gets an error report.
fn join(handles: Vec<JoinHandle<PeReport>>, first: Pe) -> Vec<PeReport> {
    handles
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let pe = first + i as Pe;
            h.join().unwrap_or_else(|_| {
                let mut r = PeReport::new(pe);
                r.errors
                    .push(RuntimeError::Invalid(format!("PE {pe}'s thread died")));
                r.aborted = true;
                r
            })
        })
        .collect()
}
