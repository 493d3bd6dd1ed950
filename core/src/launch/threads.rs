//! The threads layer's launch: one OS thread per PE, each driving its PE over a
//! `ThreadNet` port, crossbeam channels between them.

use super::{finish_run, Job, MachineLayer};
use crate::api::report::{PeReport, RunReport};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::base::progress::Progress;
use crate::engine::{PeRuntime, PeSetup};
use crate::machine::threads::ThreadNet;
use crate::machine::Arrival;
use crate::trace::JobTrace;
use crossbeam_channel::{bounded, unbounded, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the wait for the PEs updates its spinner.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Tells the launcher a PE's thread ended, also when it ends by a panic.
struct DoneOnDrop(Sender<()>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        // The launcher holds the receiver until every sender is gone.
        let _ = self.0.send(());
    }
}

/// One OS thread per PE.
pub struct Threads;

impl MachineLayer for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let cfg = job.config;
        let npes = cfg.pes as usize;
        // Unbounded inboxes: a handler cannot wait for room (two PEs flooding each
        // other from inside handlers would deadlock), so what an inbox holds is bounded
        // only by what its senders' handlers send before the receiver catches up.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..npes).map(|_| unbounded()).unzip();
        let peers: Arc<[Sender<Arrival>]> = txs.into();
        let trace = JobTrace::start(&cfg, "process", npes)?;
        let start = Instant::now();
        let mut main = Some(job.main);
        // One message per PE at most.
        let (done_tx, done_rx) = bounded::<()>(npes);
        let mut handles = Vec::with_capacity(npes);
        for (pe, rx) in rxs.into_iter().enumerate() {
            let setup = PeSetup::new(
                &cfg,
                npes,
                pe as Pe,
                trace.as_ref().map(|t| t.pe(pe as Pe, 0)),
            );
            let net = ThreadNet::new(rx, peers.clone(), 0, None, start, 0.0)
                .with_faults(pe as Pe, cfg.fault_corrupt_every);
            let reg = job.registry.clone();
            let main = if pe == 0 { main.take() } else { None };
            let done = DoneOnDrop(done_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("chorus-pe-{pe}"))
                .spawn(move || {
                    let _done = done;
                    let _pe = tracing::debug_span!("pe", pe).entered();
                    let mut rt = PeRuntime::new(setup, reg, Box::new(net));
                    if let Some(main) = main {
                        rt.run_main(main);
                    }
                    rt.drive();
                    rt.into_report()
                })
                .map_err(|e| {
                    RuntimeError::Invalid(format!("could not start PE thread {pe}: {e}"))
                })?;
            handles.push(handle);
        }
        drop(peers);
        drop(done_tx);
        // Wait for the PEs with a spinner that counts those done, for runs long
        // enough to wonder whether they are alive; each PE's thread says when it
        // ends, so the wait adds no latency.
        let mut progress = Progress::new("threads");
        let mut done = 0;
        loop {
            match done_rx.recv_timeout(PROGRESS_EVERY) {
                Ok(()) => done += 1,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            progress.tick(|_| format!("{done} of {npes} PEs done"));
        }
        progress.finish();
        let mut per_pe = Vec::with_capacity(npes);
        for (pe, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => per_pe.push(r),
                Err(_) => {
                    let mut r = PeReport::new(pe as Pe);
                    r.errors
                        .push(RuntimeError::Invalid(format!("PE {pe}'s thread died")));
                    r.aborted = true;
                    per_pe.push(r);
                }
            }
        }
        let wall_s = start.elapsed().as_secs_f64();
        let report = RunReport {
            layer: self.name(),
            pes: npes,
            wall_s,
            per_pe,
            sim: None,
            trace: trace.map(JobTrace::finish).transpose()?,
        };
        finish_run(report)
    }
}
