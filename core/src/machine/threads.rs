//! The threads layer: one OS thread per PE, crossbeam channels between them.

use super::{real_work, Job, MachineLayer, Transport};
use crate::config::WorkMode;
use crate::error::RuntimeError;
use crate::ids::Pe;
use crate::report::{PeReport, RunReport};
use crate::runtime::{Envelope, PeRuntime, PeSetup};
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
/// sent to that PE (one channel operation instead of many).
enum Packet {
    One(Envelope),
    Many(Vec<Envelope>),
}

struct ThreadNet {
    peers: Arc<[Sender<Packet>]>,
    start: Instant,
    /// Envelopes held per destination until the running handler returns.
    held: Vec<Vec<Envelope>>,
    /// Destinations with something held, in first-send order.
    dirty: Vec<Pe>,
}

impl Transport for ThreadNet {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        let slot = &mut self.held[to as usize];
        if slot.is_empty() {
            self.dirty.push(to);
        }
        slot.push(env);
        Ok(())
    }

    fn held_tail(&mut self, to: Pe) -> Option<&mut Envelope> {
        self.held.get_mut(to as usize)?.last_mut()
    }

    fn flush(&mut self) {
        for to in self.dirty.drain(..) {
            let slot = &mut self.held[to as usize];
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
            let _ = self.peers[to as usize].send(packet);
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
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
            let net = ThreadNet {
                peers: peers.clone(),
                start,
                held: (0..npes).map(|_| Vec::new()).collect(),
                dirty: Vec::new(),
            };
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
fn pe_loop(rt: &mut PeRuntime, rx: &Receiver<Packet>) {
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
