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

use super::super::threads::{self, Packet, RemoteSend, ThreadNet};
use super::{shut_down, Backoff, Encoded, Link, RankStart};
use crate::api::report::{PeReport, RunReport};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::PeRuntime;
use crate::machine::Job;
use crate::wire;
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use mpi::topology::SimpleCommunicator;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Envelopes the workers may have encoded for other ranks that the communication
/// thread has not yet handed to MPI. A worker that finds the queue full waits: when
/// MPI falls behind, the workers slow down instead of encoding without bound. The
/// communication thread never waits on a worker (it keeps receiving while its own
/// sends wait for room), so the wait always ends.
const OUT_QUEUE: usize = 1024;

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
    let mut link = Link::new(comm, false);
    let first = start.rank * ppr as Pe;
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..ppr).map(|_| unbounded()).unzip();
    let peers: Arc<[Sender<Packet>]> = txs.into();
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
        let remote: RemoteSend = Box::new(move |to, env| {
            let encoded = Encoded::new(&env, to, Vec::with_capacity)?;
            tx.send((to, encoded)).map_err(|_| {
                RuntimeError::Invalid(format!(
                    "PE {pe}: the rank's communication thread has stopped"
                ))
            })
        });
        let net = ThreadNet::new(peers.clone(), first, Some(remote), clock_start, offset);
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
                threads::pe_loop(&mut rt, &rx);
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

/// Where envelopes go: this rank's PEs' inboxes, and the rank of any other PE.
struct Route {
    peers: Arc<[Sender<Packet>]>,
    first: Pe,
    ppr: Pe,
}

impl Route {
    /// Hand an arrived envelope to the PE its header names, or the decoding error to
    /// that PE (or to this rank's first PE if the header names none of ours).
    fn arrived(&self, bytes: Arc<Vec<u8>>, source: i32) {
        let ours = |pe: Pe| pe.checked_sub(self.first).filter(|&i| i < self.ppr);
        let to = wire::destination(&bytes)
            .filter(|&pe| ours(pe).is_some())
            .unwrap_or(self.first);
        let packet = match wire::decode(bytes, to) {
            Ok(env) => Packet::One(env),
            Err(e) => Packet::Failed(e.at(to, &format!("rank {source}"))),
        };
        // A PE that has exited drops what still arrives, as on one PE per rank.
        let _ = self.peers[(to - self.first) as usize].send(packet);
    }
}

/// Set when a worker thread unwinds: a PE lost outside any handler would leave the
/// job waiting for it, so the communication thread takes the job down instead.
struct DeathWatch(Arc<AtomicBool>);

impl Drop for DeathWatch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Move envelopes until every worker has exited: the workers' sends onto the
/// network, arrivals to the workers.
fn communicate(
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
        while let Some((bytes, source)) = link.receive() {
            busy = true;
            route.arrived(bytes, source);
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
