//! The threads layer's launch: one OS thread per PE, each driving its PE over a
//! `ThreadPort` port, crossbeam channels between them.

use super::{finish_run, Job, MachineLayer};
use crate::api::ctx::Ctx;
use crate::api::registry::Registry;
use crate::api::report::{PeReport, RunReport};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::base::progress::Progress;
use crate::engine::{PeRuntime, PeSetup};
use crate::machine::clock::WallClock;
use crate::machine::threads::ThreadPort;
use crate::machine::Arrival;
use crate::trace::JobTrace;
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
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

/// A job's main function, as `Job` holds it.
type MainFn = Box<dyn FnOnce(&mut Ctx) + Send>;

/// What the thread of one PE needs to run it: the threads layer's and the SMP
/// workers' PEs alike.
pub(super) struct PeThread {
    /// The PE's settings; `setup.me` names the thread.
    pub(super) setup: PeSetup,
    /// The job's registrations.
    pub(super) registry: Arc<Registry>,
    /// The PE's port.
    pub(super) net: ThreadPort,
    /// The job's main function, on PE 0 only.
    pub(super) main: Option<MainFn>,
}

impl PeThread {
    /// Start the thread: it builds the PE's engine, runs `main` if it has it, drives
    /// the PE to the job's exit and returns its report. `guard` lives as long as the
    /// thread, so its drop tells the launcher the thread ended, also by a panic.
    pub(super) fn spawn<G: Send + 'static>(
        self,
        guard: G,
    ) -> std::io::Result<JoinHandle<PeReport>> {
        let pe = self.setup.me;
        std::thread::Builder::new()
            .name(format!("chorus-pe-{pe}"))
            .spawn(move || {
                let _guard = guard;
                let _pe = tracing::debug_span!("pe", pe).entered();
                let mut rt = PeRuntime::new(self.setup, self.registry, Box::new(self.net));
                if let Some(main) = self.main {
                    rt.run_main(main);
                }
                rt.drive();
                rt.into_report()
            })
    }
}

/// The reports of PEs `first..` from their threads, in PE order; a thread that died
/// gets an aborted report saying so.
pub(super) fn join_pes(handles: Vec<JoinHandle<PeReport>>, first: Pe) -> Vec<PeReport> {
    handles
        .into_iter()
        .zip(first..)
        .map(|(h, pe)| {
            h.join().unwrap_or_else(|_| {
                let mut r = PeReport::new(pe);
                r.errors.push(RuntimeError::ThreadDied { pe });
                r.aborted = true;
                r
            })
        })
        .collect()
}

/// One OS thread per PE.
pub struct Threads;

impl MachineLayer for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let npes = job.config.pes as usize;
        let trace = JobTrace::start(&job.config, "process", npes)?;
        let start = Instant::now();
        let clock = WallClock::start();
        let show_progress = job.config.progress;
        // One message per PE at most.
        let (done_tx, done_rx) = bounded::<()>(npes);
        let handles = start_pes(job, trace.as_ref(), clock, &done_tx)?;
        drop(done_tx);
        wait_for_pes(&done_rx, npes, show_progress);
        let report = RunReport {
            layer: self.name(),
            pes: npes,
            per_pe: join_pes(handles, 0),
            wall_s: start.elapsed().as_secs_f64(),
            sim: None,
            recoveries: Vec::new(),
            trace: trace.map(JobTrace::finish).transpose()?,
        };
        finish_run(report)
    }
}

/// Start a thread for every PE of `job`, each telling `done` when it ends.
fn start_pes(
    job: Job,
    trace: Option<&JobTrace>,
    clock: WallClock,
    done: &Sender<()>,
) -> Result<Vec<JoinHandle<PeReport>>, RuntimeError> {
    let cfg = &job.config;
    let npes = cfg.pes as usize;
    // Unbounded inboxes: a handler cannot wait for room (two PEs flooding each
    // other from inside handlers would deadlock), so what an inbox holds is bounded
    // only by what its senders' handlers send before the receiver catches up.
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..npes).map(|_| unbounded()).unzip();
    let peers: Arc<[Sender<Arrival>]> = txs.into();
    let mut main = Some(job.main);
    let mut handles = Vec::with_capacity(npes);
    for (pe, rx) in (0..).zip(rxs) {
        let mut setup = PeSetup::new(cfg, npes, pe, trace.map(|t| t.pe(pe, 0)));
        setup.restart = job.restart.clone();
        let thread = PeThread {
            setup,
            registry: job.registry.clone(),
            net: ThreadPort::new(rx, peers.clone(), 0, None, clock, 0.0)
                .with_faults(pe, cfg.fault_corrupt_every),
            main: if pe == 0 { main.take() } else { None },
        };
        let handle =
            thread
                .spawn(DoneOnDrop(done.clone()))
                .map_err(|e| RuntimeError::ThreadStart {
                    pe,
                    reason: e.to_string(),
                })?;
        handles.push(handle);
    }
    Ok(handles)
}

/// Wait for the PEs with a spinner that counts those done, for runs long enough to
/// wonder whether they are alive; each PE's thread says when it ends, so the wait
/// adds no latency.
fn wait_for_pes(done: &Receiver<()>, npes: usize, show_progress: bool) {
    let mut progress = Progress::new("threads", show_progress);
    let mut ended = 0;
    loop {
        match done.recv_timeout(PROGRESS_EVERY) {
            Ok(()) => ended += 1,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        progress.tick(|_| format!("{ended} of {npes} PEs done"));
    }
    progress.finish();
}
