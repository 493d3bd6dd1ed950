//! The threads layer: one OS thread per PE, crossbeam channels between them.

use super::{real_work, Job, MachineLayer, Transport};
use crate::api::report::{PeReport, RunReport};
use crate::base::config::WorkMode;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::{PeRuntime, PeSetup};
use crate::msg::envelope::Envelope;
use crate::trace::JobTrace;
use crossbeam_channel::{unbounded, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages a PE runs between two looks at its inbox (bounds how long a newly
/// arrived high-priority message waits behind queued ones).
const BATCH: usize = 64;
/// Polls of an empty inbox before yielding, then yields before parking.
const SPIN_POLLS: u32 = 200;
const YIELD_POLLS: u32 = 20;

/// What travels through a PE's inbox: one envelope, or every envelope one handler
/// sent to that PE (one channel operation instead of many), or an error another
/// thread found about a message for this PE.
pub(super) enum Packet {
    One(Envelope),
    Many(Vec<Envelope>),
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Failed(RuntimeError),
}

/// Where a PE sends envelopes for PEs outside its process (the mpi layer's SMP mode).
pub(super) type RemoteSend = Box<dyn FnMut(Pe, Envelope) -> Result<(), RuntimeError> + Send>;

/// A PE's transport among the PEs of one process, and beyond it through `remote`.
pub(super) struct ThreadNet {
    /// Inboxes of this process's PEs, by PE number minus `first`.
    peers: Arc<[Sender<Packet>]>,
    first: Pe,
    /// Sends to PEs of other processes; none on the threads layer, which has one.
    remote: Option<RemoteSend>,
    start: Instant,
    /// Seconds added to the clock, to align it with other processes'.
    offset: f64,
    /// Envelopes held per local destination until the running handler returns.
    held: Vec<Vec<Envelope>>,
    /// Destinations with something held, in first-send order.
    dirty: Vec<Pe>,
}

impl ThreadNet {
    /// The transport of a PE whose process runs PEs `first..first + peers.len()`.
    pub(super) fn new(
        peers: Arc<[Sender<Packet>]>,
        first: Pe,
        remote: Option<RemoteSend>,
        start: Instant,
        offset: f64,
    ) -> Self {
        ThreadNet {
            held: (0..peers.len()).map(|_| Vec::new()).collect(),
            peers,
            first,
            remote,
            start,
            offset,
            dirty: Vec::new(),
        }
    }

    /// Index of `to` among this process's PEs.
    fn local(&self, to: Pe) -> Option<usize> {
        let i = to.checked_sub(self.first)? as usize;
        (i < self.peers.len()).then_some(i)
    }
}

impl Transport for ThreadNet {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        let Some(i) = self.local(to) else {
            return match self.remote.as_mut() {
                Some(remote) => remote(to, env),
                None => Err(RuntimeError::Invalid(format!(
                    "PE {to} is not in this process"
                ))),
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
            let packet = if slot.len() == 1 {
                match slot.pop() {
                    Some(env) => Packet::One(env),
                    None => continue,
                }
            } else {
                Packet::Many(std::mem::take(slot))
            };
            // A send fails only when the receiving PE has already exited; the job is
            // ending and the message is dropped on purpose.
            let _ = self.peers[i].send(packet);
        }
        self.dirty.clear();
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() + self.offset
    }

    fn work(&mut self, d: Duration, mode: WorkMode) {
        real_work(d, mode);
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
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..npes).map(|_| unbounded()).unzip();
        let peers: Arc<[Sender<Packet>]> = txs.into();
        let trace = JobTrace::start(&cfg, "process", npes)?;
        let start = Instant::now();
        let mut main = Some(job.main);
        let mut handles = Vec::with_capacity(npes);
        for (pe, rx) in rxs.into_iter().enumerate() {
            let setup = PeSetup {
                me: pe as Pe,
                npes,
                arity: cfg.tree_arity as usize,
                seed: cfg.seed,
                policy: cfg.on_error,
                work_mode: cfg.work,
                trace: trace.as_ref().map(|t| t.pe(pe as Pe, 0)),
            };
            let net = ThreadNet::new(peers.clone(), 0, None, start, 0.0);
            let reg = job.registry.clone();
            let main = if pe == 0 { main.take() } else { None };
            let handle = std::thread::Builder::new()
                .name(format!("chorus-pe-{pe}"))
                .spawn(move || {
                    let _pe = tracing::debug_span!("pe", pe).entered();
                    let mut rt = PeRuntime::new(setup, reg, Box::new(net));
                    if let Some(main) = main {
                        rt.run_main(main);
                    }
                    pe_loop(&mut rt, &rx);
                    rt.into_report()
                })
                .map_err(|e| {
                    RuntimeError::Invalid(format!("could not start PE thread {pe}: {e}"))
                })?;
            handles.push(handle);
        }
        drop(peers);
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
        crate::finish_run(report)
    }
}

/// Run a PE until the job exits: drain the inbox, run ready messages, report
/// idleness to quiescence detection, spin briefly, then park on the inbox.
pub(super) fn pe_loop(rt: &mut PeRuntime, rx: &Receiver<Packet>) {
    loop {
        loop {
            match rx.try_recv() {
                Ok(packet) => accept(rt, packet),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        let mut ran = 0;
        while ran < BATCH && rt.step() {
            ran += 1;
            if rt.exiting() {
                return;
            }
            if rt.take_worked() {
                break;
            }
        }
        if ran > 0 {
            continue;
        }
        rt.on_idle();
        if rt.exiting() {
            return;
        }
        if rt.step() {
            if rt.exiting() {
                return;
            }
            continue;
        }
        rt.trace_idle();
        match wait(rx) {
            Some(packet) => accept(rt, packet),
            None => return,
        }
    }
}

fn accept(rt: &mut PeRuntime, packet: Packet) {
    match packet {
        Packet::One(env) => rt.accept(env),
        Packet::Many(envs) => envs.into_iter().for_each(|env| rt.accept(env)),
        Packet::Failed(err) => rt.core.fail(err),
    }
}

/// Wait for the next packet: spin, then yield, then block.
fn wait(rx: &Receiver<Packet>) -> Option<Packet> {
    for i in 0..SPIN_POLLS + YIELD_POLLS {
        match rx.try_recv() {
            Ok(env) => return Some(env),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if i < SPIN_POLLS => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    rx.recv().ok()
}
