//! The threads layer's launch: one OS thread per PE, each driving its PE over a
//! `ThreadPort` port, crossbeam channels between them. A job that took an in-memory
//! checkpoint survives a failed PE (`Config::inject_failure`, the test hook): every
//! port closes, and the job is started again on the survivors from the checkpoint
//! (`threads_recovery.rs`).

use super::{finish_run, Job, MachineLayer};
use crate::api::ctx::Ctx;
use crate::api::registry::Registry;
use crate::api::report::{PeReport, Recovery, RunReport};
use crate::base::config::{Config, InjectedFailure};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::base::progress::Progress;
use crate::engine::checkpoint_memory::{Copy, Gathered};
use crate::engine::{PeRuntime, PeSetup, Restart};
use crate::machine::affinity;
use crate::machine::clock::WallClock;
use crate::machine::threads::{idle_spin, ThreadPort};
use crate::machine::Arrival;
use crate::msg::callback::Callback;
use crate::trace::JobTrace;
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[path = "threads_recovery.rs"]
mod recovery;
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
    /// The CPU to pin the thread to (`machine::affinity`), if any.
    pub(super) cpu: Option<usize>,
}

impl PeThread {
    /// Start the thread: it builds the PE's engine, runs `main` if it has it, drives
    /// the PE to the job's exit and returns its report. `guard` lives as long as the
    /// thread, so its drop tells the launcher the thread ended, also by a panic.
    #[cfg(feature = "mpi")]
    pub(super) fn spawn<G: Send + 'static>(
        self,
        guard: G,
    ) -> std::io::Result<JoinHandle<PeReport>> {
        self.spawn_with(guard, None, PeRuntime::into_report)
    }

    /// As `spawn`, the PE resuming from a rollback if `resume` says so, and handing
    /// back what `end` takes from it.
    pub(super) fn spawn_with<G: Send + 'static, T: Send + 'static>(
        self,
        guard: G,
        resume: Option<Resume>,
        end: fn(PeRuntime) -> T,
    ) -> std::io::Result<JoinHandle<T>> {
        let pe = self.setup.me;
        std::thread::Builder::new()
            .name(format!("chorus-pe-{pe}"))
            .spawn(move || {
                let _guard = guard;
                if let Some(cpu) = self.cpu {
                    affinity::pin_current_thread(cpu);
                }
                let _pe = tracing::debug_span!("pe", pe).entered();
                let mut rt = PeRuntime::new(self.setup, self.registry, Box::new(self.net));
                if let Some(r) = resume {
                    rt.hold_copies(r.copies);
                    if let Some((epoch, callback)) = r.callback {
                        rt.resume_from_memory(epoch, callback);
                    }
                }
                if let Some(main) = self.main {
                    rt.run_main(main);
                }
                rt.drive();
                end(rt)
            })
    }
}

/// What a PE rebuilt by a rollback starts with: the in-memory copies it holds, and
/// on PE 0 the checkpoint's number and callback, delivered again.
pub(super) struct Resume {
    pub(super) copies: Vec<Copy>,
    pub(super) callback: Option<(u64, Callback)>,
}

/// The reports of PEs `first..` from their threads, in PE order; a thread that died
/// gets an aborted report saying so.
#[cfg(feature = "mpi")]
pub(super) fn join_pes(handles: Vec<JoinHandle<PeReport>>, first: Pe) -> Vec<PeReport> {
    join_all(handles, first, std::convert::identity)
}

/// What the threads of PEs `first..` handed back, in PE order; a thread that died
/// gives `died` of an aborted report saying so.
fn join_all<T>(handles: Vec<JoinHandle<T>>, first: Pe, died: fn(PeReport) -> T) -> Vec<T> {
    handles
        .into_iter()
        .zip(first..)
        .map(|(h, pe)| {
            h.join().unwrap_or_else(|_| {
                let mut r = PeReport::new(pe);
                r.errors.push(RuntimeError::ThreadDied { pe });
                r.aborted = true;
                died(r)
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
        let mut s = Session::new(job);
        let per_pe = loop {
            let down = Arc::new(AtomicBool::new(false));
            let ends = s.run(trace.as_ref(), clock, &down)?;
            if !down.load(Ordering::Acquire) {
                break ends.into_iter().map(|e| e.0).collect();
            }
            s.roll_back(ends, start)?;
        };
        let report = RunReport {
            layer: self.name(),
            pes: s.ids.len(),
            per_pe,
            wall_s: start.elapsed().as_secs_f64(),
            sim: None,
            trace: trace.map(JobTrace::finish).transpose()?,
            recoveries: s.recoveries,
        };
        finish_run(report)
    }
}

/// What a PE's thread hands back: its report, the in-memory copies it holds, and
/// on PE 0 the callbacks of their checkpoints.
type PeEnd = (PeReport, Vec<Copy>, Vec<(u64, Callback)>);

/// A job on the threads layer, run once, and again on the survivors after each
/// rollback.
struct Session {
    registry: Arc<Registry>,
    config: Config,
    /// Main, until the first run takes it.
    main: Option<MainFn>,
    restart: Option<Arc<Restart>>,
    /// The PE number the job started with of each PE now.
    ids: Vec<Pe>,
    /// The injected failure, until the run it happens in.
    fail: Option<InjectedFailure>,
    /// The PE of the last run that fails, if one does.
    failing: Option<Pe>,
    /// After a rollback: what the PEs resume from.
    resume: Option<Gathered>,
    callback: Option<Callback>,
    /// The last run's inboxes, to count what was in flight when it failed.
    inboxes: Vec<Receiver<Arrival>>,
    recoveries: Vec<Recovery>,
}

impl Session {
    fn new(job: Job) -> Self {
        let npes = job.config.pes;
        Session {
            registry: job.registry,
            fail: job.config.inject_failure,
            failing: None,
            config: job.config,
            main: Some(job.main),
            restart: job.restart,
            ids: (0..npes).collect(),
            resume: None,
            callback: None,
            inboxes: Vec::new(),
            recoveries: Vec::new(),
        }
    }

    /// Run the PEs until the job exits or `down` says one failed; what each handed
    /// back, in PE order.
    fn run(
        &mut self,
        trace: Option<&JobTrace>,
        clock: WallClock,
        down: &Arc<AtomicBool>,
    ) -> Result<Vec<PeEnd>, RuntimeError> {
        let npes = self.ids.len();
        // One message per PE at most.
        let (done_tx, done_rx) = bounded::<()>(npes);
        let handles = self.start_pes(trace, clock, down, &done_tx)?;
        drop(done_tx);
        wait_for_pes(&done_rx, npes, self.config.progress);
        Ok(join_all(handles, 0, |r| (r, Vec::new(), Vec::new())))
    }

    /// Start a thread for every PE, each telling `done` when it ends.
    fn start_pes(
        &mut self,
        trace: Option<&JobTrace>,
        clock: WallClock,
        down: &Arc<AtomicBool>,
        done: &Sender<()>,
    ) -> Result<Vec<JoinHandle<PeEnd>>, RuntimeError> {
        let cfg = &self.config;
        let npes = self.ids.len();
        // Unbounded inboxes: a handler cannot wait for room (two PEs flooding each
        // other from inside handlers would deadlock), so what an inbox holds is bounded
        // only by what its senders' handlers send before the receiver catches up.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..npes).map(|_| unbounded()).unzip();
        self.inboxes = rxs.clone();
        let peers: Arc<[Sender<Arrival>]> = txs.into();
        let fail = self.fail.take();
        self.failing = fail.map(|f| f.pe);
        // A rebuilt job runs untraced: its PEs' recorders were the first run's.
        let trace = trace.filter(|_| self.main.is_some());
        let mut handles = Vec::with_capacity(npes);
        // Asked before any PE starts, so the PEs do not count as other work.
        let spin = idle_spin(npes);
        let cpus = affinity::plan(npes, spin);
        for (pe, rx) in (0..).zip(rxs) {
            let mut setup = PeSetup::new(cfg, npes, pe, trace.map(|t| t.pe(pe, 0)));
            setup.restart = self.restart.clone();
            let after = fail.filter(|f| f.pe == pe).map(|f| f.after);
            let thread = PeThread {
                setup,
                registry: self.registry.clone(),
                net: ThreadPort::new(rx, peers.clone(), 0, None, clock, 0.0)
                    .with_faults(pe, cfg.fault_corrupt_every)
                    .with_failure(down.clone(), after)
                    .with_idle_spin(spin),
                main: if pe == 0 { self.main.take() } else { None },
                cpu: cpus.as_ref().map(|c| c[pe as usize]),
            };
            let resume = self.resume.as_ref().map(|g| Resume {
                copies: g.copies_for(pe, npes),
                callback: (pe == 0)
                    .then(|| (g.epoch, self.callback.clone().unwrap_or(Callback::Ignore))),
            });
            let handle = thread
                .spawn_with(DoneOnDrop(done.clone()), resume, |rt| {
                    let copies = rt.memory_copies().to_vec();
                    let callbacks = rt.memory_callbacks().to_vec();
                    (rt.into_report(), copies, callbacks)
                })
                .map_err(|e| RuntimeError::ThreadStart {
                    pe,
                    reason: e.to_string(),
                })?;
            handles.push(handle);
        }
        Ok(handles)
    }
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
