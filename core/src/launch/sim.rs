//! The sim layer's launch: every PE inside one deterministic discrete-event simulation.
//!
//! One thread runs all PEs in virtual-time order. A PE is a single server: it runs
//! one message at a time, and each run advances its clock by the costs of
//! `network::NetworkModel` plus what the handler charges with `ctx.work`. Events
//! with equal times run in the order they were scheduled, and every hash map the
//! runtime iterates has fixed keys, so a program, its flags and `--seed` replay the
//! identical event sequence; the event-log digest in `SimStats` shows it.
//!
//! PEs are built lazily, on the first message that reaches them, so a job pays
//! memory only for the PEs it uses.
//!
//! A job restarted (`--restart`) from a disk checkpoint a sim job wrote on as many
//! PEs resumes at the checkpoint's virtual time: its PEs are rebuilt and their own
//! start (the censuses) runs to its end first, then the clock and the network
//! model's state are put where the commit left them and main runs then, so main's
//! `ctx.resume_from_checkpoint()` replays the rest of the saved run bit for bit.
//!
//! A job that took an in-memory checkpoint (`ctx.checkpoint_in_memory`) survives
//! `--sim-kill`: at the failure's time the simulator rolls every PE back to the
//! newest complete checkpoint (`sim_recovery.rs`).

use super::{finish_run, Job, MachineLayer};
use crate::api::registry::Registry;
use crate::api::report::{PeReport, Recovery, RunReport};
use crate::base::config::Config;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::base::progress::Progress;
use crate::engine::flow::windowed;
use crate::engine::scheduler::SpareBuffers;
use crate::engine::{PeRuntime, PeSetup, Restart};
use crate::machine::sim::events::{EventList, What};
use crate::machine::sim::network::NetworkModel;
use crate::machine::sim::port::{Cursor, SimPort};
use crate::machine::sim::resume::SimResume;
use crate::machine::sim::stats::{Digest, SimStats};
use crate::msg::envelope::Envelope;
use crate::msg::kind::Kind;
use crate::trace::{JobTrace, SIM_PES_PER_GROUP};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

#[path = "sim_recovery.rs"]
mod recovery;

/// The discrete-event simulation layer.
pub struct Sim;

impl MachineLayer for Sim {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let start = Instant::now();
        let mut sim = Simulator::new(&job.config, job.registry)?;
        let at = match job.restart {
            Some(restart) => sim.restore_all(restart),
            None => 0,
        };
        sim.schedule_kills();
        sim.run_main(job.main, at);
        let events_start = Instant::now();
        sim.run();
        let events_s = events_start.elapsed().as_secs_f64();
        sim.finish(start, events_s)
    }
}

/// One simulated PE: 24 bytes, as a million of them are kept.
#[derive(Default)]
struct SimPe {
    /// Built on first use.
    rt: Option<Box<PeRuntime>>,
    /// Virtual time its current or last run ends.
    busy_until: u64,
    /// Total virtual time spent running (the low 61 bits: 73 years of virtual time)
    /// and, in the top bits, the flags below: a fourth field would pad `SimPe` to 32.
    busy_and_flags: u64,
}

/// A wake-up is scheduled.
const WAKE_PENDING: u64 = 1 << 63;
/// Stopped by `--sim-kill`.
const DEAD: u64 = 1 << 62;
/// Has seen the job's exit.
const EXITED: u64 = 1 << 61;
/// The bits of `busy_and_flags` that count busy time.
const BUSY: u64 = EXITED - 1;

impl SimPe {
    fn busy_ns(&self) -> u64 {
        self.busy_and_flags & BUSY
    }

    fn add_busy(&mut self, ns: u64) {
        let busy = self.busy_ns() + ns;
        debug_assert!(busy <= BUSY, "virtual busy time past 2^61 ns");
        self.busy_and_flags = (self.busy_and_flags & !BUSY) | (busy & BUSY);
    }

    fn flag(&self, f: u64) -> bool {
        self.busy_and_flags & f != 0
    }

    fn set(&mut self, f: u64, on: bool) {
        if on {
            self.busy_and_flags |= f;
        } else {
            self.busy_and_flags &= !f;
        }
    }

    fn wake(&self) -> bool {
        self.flag(WAKE_PENDING)
    }

    fn dead(&self) -> bool {
        self.flag(DEAD)
    }

    fn exited(&self) -> bool {
        self.flag(EXITED)
    }
}

struct Simulator {
    pes: Vec<SimPe>,
    events: EventList,
    /// Ready-queue buffers of idle PEs, for the next PE a message reaches.
    spares: SpareBuffers<Envelope>,
    cursor: Rc<RefCell<Cursor>>,
    registry: Arc<Registry>,
    /// The checkpoint of `--restart`, if any: each PE takes its part when built.
    restart: Option<Arc<Restart>>,
    config: Config,
    model: NetworkModel,
    messages: u64,
    bytes: u64,
    events_done: u64,
    dropped: u64,
    killed: u64,
    makespan: u64,
    /// The PE number the job started with of each PE now (they change when a
    /// rollback leaves the failed PEs out); empty until the first rollback, while
    /// every PE keeps its number, so a job without `--sim-kill` pays nothing per PE.
    ids: Vec<Pe>,
    /// A rollback to the in-memory checkpoint is scheduled: PEs failed since.
    recover_pending: bool,
    /// Messages of the failed epoch that reached a failed PE since it failed.
    pending_discarded: u64,
    recoveries: Vec<Recovery>,
    digest: Digest,
    /// The virtual time of the last disk checkpoint's commit (or of the resume of a
    /// restarted job), from which every PE keeps its digest since the commit.
    since_commit: Option<u64>,
    progress: Progress,
    trace: Option<JobTrace>,
}

impl Simulator {
    fn new(config: &Config, registry: Arc<Registry>) -> Result<Self, RuntimeError> {
        let npes = config.pes as usize;
        let model = NetworkModel::from_args(&config.sim);
        let trace = JobTrace::start(config, "node group", npes)?;
        Ok(Simulator {
            pes: (0..npes).map(|_| SimPe::default()).collect(),
            events: EventList::default(),
            spares: SpareBuffers::default(),
            cursor: Rc::new(RefCell::new(Cursor::new(model, npes, config.seed))),
            registry,
            restart: None,
            config: config.clone(),
            model,
            messages: 0,
            bytes: 0,
            events_done: 0,
            dropped: 0,
            killed: 0,
            makespan: 0,
            ids: Vec::new(),
            recover_pending: false,
            pending_discarded: 0,
            recoveries: Vec::new(),
            digest: Digest::default(),
            since_commit: None,
            progress: Progress::new("sim", config.progress),
            trace,
        })
    }

    /// Schedule the failures of `--sim-kill`.
    fn schedule_kills(&mut self) {
        for k in &self.config.sim.kill {
            self.events.push(k.at_ns, k.pe, What::Kill);
        }
    }

    /// PE `pe`'s runtime, built on first use.
    fn runtime(&mut self, pe: Pe) -> &mut PeRuntime {
        let marked = self.since_commit.is_some();
        let cfg = &self.config;
        let (registry, cursor, trace) = (&self.registry, &self.cursor, &self.trace);
        let restart = &self.restart;
        let npes = self.pes.len();
        self.pes[pe as usize].rt.get_or_insert_with(|| {
            let mut setup = PeSetup::new(
                cfg,
                npes,
                pe,
                trace.as_ref().map(|t| t.pe(pe, pe / SIM_PES_PER_GROUP)),
            );
            setup.restart = restart.clone();
            let mut rt = PeRuntime::new(setup, registry.clone(), Box::new(SimPort(cursor.clone())));
            if cfg.sim.digest {
                rt.keep_delivery_digest();
                if marked {
                    rt.mark_delivery_digest();
                }
            }
            Box::new(rt)
        })
    }

    /// Build every PE from the checkpoint at time 0 (a PE is otherwise built when a
    /// message first reaches it, and a restored PE has its part of every census to
    /// send); returns the virtual time main runs at: the commit's, when a sim job on
    /// as many PEs wrote the checkpoint, else 0.
    fn restore_all(&mut self, restart: Arc<Restart>) -> u64 {
        let resume = (restart.info.saved_pes == self.pes.len())
            .then(|| restart.resume.as_ref().and_then(|r| r.sim.clone()))
            .flatten();
        self.restart = Some(restart);
        for pe in 0..self.pes.len() as Pe {
            self.cursor.borrow_mut().begin(pe, 0);
            self.runtime(pe);
            self.after_run(pe, 0);
        }
        let at = match resume {
            Some(r) => self.resume_at(&r),
            None => 0,
        };
        self.mark_since_commit(at);
        at
    }

    /// Run the restored PEs' start to its end, then take up the state the commit of
    /// `r` left: its time, jitter draws and link bookings. Every PE was idle and free
    /// by then (a checkpoint commits at quiescence once every PE answered), so the
    /// times the restored PEs fell idle need not be kept.
    fn resume_at(&mut self, r: &SimResume) -> u64 {
        self.run();
        // Empty: the next events are the resumed run's, from the commit's time on.
        self.events = EventList::default();
        self.cursor.borrow_mut().resume(r);
        for p in &mut self.pes {
            p.busy_until = 0;
        }
        r.at_ns
    }

    /// Every PE's digest of deliveries since the commit starts now, at `at`.
    fn mark_since_commit(&mut self, at: u64) {
        self.since_commit = Some(at);
        for p in &mut self.pes {
            if let Some(rt) = p.rt.as_mut() {
                rt.mark_delivery_digest();
            }
        }
    }

    fn run_main(&mut self, main: Box<dyn FnOnce(&mut crate::Ctx) + Send>, at: u64) {
        self.cursor.borrow_mut().begin(0, at);
        self.runtime(0).run_main(main);
        self.after_run(0, at);
    }

    /// Process events until none is left.
    fn run(&mut self) {
        while let Some(ev) = self.events.pop() {
            self.events_done += 1;
            self.digest.add(ev.time);
            let what = ev.what();
            self.digest.add(u64::from(ev.pe) << 2 | what.code());
            match what {
                What::Arrive(slot) => self.arrive(ev.pe, ev.time, slot),
                What::Wake => self.wake(ev.pe, ev.time),
                What::Kill => self.kill(ev.pe, ev.time),
                What::Recover => self.recover(ev.time),
            }
            if self.events_done & 0xffff == 0 {
                let (done, pending) = (self.events_done, self.events.len());
                self.progress.tick(|elapsed| {
                    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
                    format!(
                        "{done} events ({rate:.0}/s), virtual {:.3} ms, {pending} pending",
                        ev.time as f64 / 1e6
                    )
                });
            }
        }
        self.progress.finish();
    }

    fn arrive(&mut self, pe: Pe, t: u64, slot: u32) {
        let Some(env) = self.events.take(slot) else {
            return;
        };
        let st = &self.pes[pe as usize];
        if st.dead() && self.recover_pending {
            self.pending_discarded += env.weight();
            return;
        }
        if st.dead() && !env.kind.is_quiescence_wave() {
            self.dropped += env.weight();
            self.runtime(pe).lost_here(&env);
            self.lost_at(pe, &env, t);
            self.lost(env, pe, t);
            return;
        }
        if st.exited() {
            return;
        }
        let mut spares = std::mem::take(&mut self.spares);
        self.runtime(pe).accept_reusing(env, &mut spares);
        self.spares = spares;
        self.schedule_wake(pe, t);
    }

    /// `env` reached `dead`, a killed PE: its sender, if alive, reports an element
    /// lost with it. Told lazily, by the messages that reach the dead PE, so a kill
    /// costs nothing on PEs that never send there.
    /// Any other user message is a loss under `--on-error abort` (`lost_with`).
    fn lost(&mut self, env: Envelope, dead: Pe, t: u64) {
        let user = matches!(env.kind, Kind::User { .. });
        self.at_sender(env.src, dead, t, |rt| {
            rt.undeliverable(&env, dead) || (user && rt.lost_with(dead, env.weight()))
        });
    }

    /// Lets `src`, if alive, `report` at `t` what it lost with `dead`: as a run at
    /// the sender, so anything the report sends leaves from it then.
    fn at_sender(
        &mut self,
        src: Pe,
        dead: Pe,
        t: u64,
        report: impl FnOnce(&mut PeRuntime) -> bool,
    ) {
        let st = &self.pes[src as usize];
        if src == dead || st.dead() || st.exited() || st.rt.is_none() {
            return;
        }
        let at = t.max(st.busy_until);
        self.cursor.borrow_mut().begin(src, at);
        if report(self.runtime(src)) {
            self.after_run(src, at);
        }
    }

    /// Make sure `pe` runs its queue once it is free at or after `t`.
    fn schedule_wake(&mut self, pe: Pe, t: u64) {
        let st = &mut self.pes[pe as usize];
        if !st.wake() {
            st.set(WAKE_PENDING, true);
            let at = t.max(st.busy_until);
            self.events.push(at, pe, What::Wake);
        }
    }

    /// Run `pe`'s next ready message at `t`.
    fn wake(&mut self, pe: Pe, t: u64) {
        let st = &mut self.pes[pe as usize];
        st.set(WAKE_PENDING, false);
        // A failed PE of a job about to roll back runs nothing more.
        if st.dead() && self.recover_pending {
            return;
        }
        // A dead PE still runs the quiescence waves that pass through it, with its
        // counts frozen at the kill plus what was lost with it: the stand-in for a
        // failure-aware detector, which would agree on those counts with the
        // survivors. Its queue holds nothing else.
        if st.exited() {
            return;
        }
        let model = self.model;
        let cursor = self.cursor.clone();
        cursor.borrow_mut().begin(pe, t);
        let rt = self.runtime(pe);
        if let Some(env) = rt.pop() {
            let mut cost = model.handler_ns;
            if env.src != pe {
                let bytes = if model.gamma_ns_per_byte > 0.0 {
                    env.wire_bytes()
                } else {
                    0
                };
                cost += model.receive_ns(bytes);
            }
            // The entry's trace slice starts now and covers these costs.
            rt.trace_delivery_start(t);
            cursor.borrow_mut().clock += cost;
            rt.run_one(env);
        }
        self.after_run(pe, t);
    }

    /// Book-keeping after `pe` ran from `t`: idle work, busy time, its sends, and its
    /// next wake-up.
    fn after_run(&mut self, pe: Pe, t: u64) {
        let rt = self.pes[pe as usize]
            .rt
            .as_mut()
            .expect("a PE that ran has a runtime");
        if !rt.exiting() && rt.queued() == 0 {
            rt.on_idle();
            if rt.queued() == 0 {
                rt.trace_idle();
            }
        }
        let (exiting, queued) = (rt.exiting(), rt.queued());
        if queued == 0 {
            rt.release_idle_memory(&mut self.spares);
        }
        let mut c = self.cursor.borrow_mut();
        let end = c.clock;
        let mut out = std::mem::take(&mut c.out);
        drop(c);
        for o in out.drain(..) {
            self.messages += 1;
            self.bytes += o.bytes;
            self.digest
                .add(u64::from(o.to) ^ o.arrive.rotate_left(32) ^ o.bytes << 48);
            self.events.push_arrival(o.arrive, o.to, o.env);
        }
        let committed = {
            let mut c = self.cursor.borrow_mut();
            c.out = out;
            c.committed.take()
        };
        if let Some(at) = committed {
            self.mark_since_commit(at);
        }
        self.makespan = self.makespan.max(end);
        let st = &mut self.pes[pe as usize];
        st.add_busy(end - t);
        st.busy_until = end;
        st.set(EXITED, exiting);
        if !exiting && queued > 0 {
            self.schedule_wake(pe, end);
        }
    }

    /// The PE number the job started with of PE `pe` now.
    fn started_as(&self, pe: Pe) -> Pe {
        self.ids.get(pe as usize).copied().unwrap_or(pe)
    }

    /// The number now of the PE the job started as `id`, unless a rollback left it out.
    fn now_numbered(&self, id: Pe) -> Option<Pe> {
        if self.ids.is_empty() {
            return ((id as usize) < self.pes.len()).then_some(id);
        }
        self.ids.iter().position(|&i| i == id).map(|p| p as Pe)
    }

    /// PE `id` (numbered as the job started) fails at `t`.
    fn kill(&mut self, id: Pe, t: u64) {
        // A PE a rollback left out has nothing left to kill.
        let Some(pe) = self.now_numbered(id) else {
            return;
        };
        // A kill scheduled after the job ended kills nothing: counting it (and waking
        // the PE for it) moved the makespan to the kill's time.
        if self
            .pes
            .iter()
            .all(|p| p.exited() || p.dead() || p.rt.is_none())
        {
            tracing::warn!(
                pe,
                at_ns = t,
                "sim: --sim-kill after the job ended; ignored"
            );
            return;
        }
        let st = &mut self.pes[pe as usize];
        if st.dead() {
            return;
        }
        st.set(DEAD, true);
        self.killed += 1;
        if self.holds_memory_checkpoint() {
            // Other failures at the same time join the same rollback.
            if !std::mem::replace(&mut self.recover_pending, true) {
                self.events.push(t, 0, What::Recover);
            }
            tracing::info!(pe = id, at_ns = t, "sim: PE killed; rolling back");
            return;
        }
        self.lose(pe, t);
    }

    /// Failed PE `pe`'s queue and objects are lost at `t`, reported to the senders
    /// of what it held and to the subscribers of `on_pe_failure`.
    fn lose(&mut self, pe: Pe, t: u64) {
        let st = &mut self.pes[pe as usize];
        let mut lost = Vec::new();
        if let Some(rt) = st.rt.as_mut() {
            self.dropped += rt.discard_queue(|env| {
                let user = matches!(env.kind, Kind::User { .. });
                lost.push((env.src, env.weight(), windowed(env), user));
            });
        }
        // User messages queued here are lost too, reported per sender in PE order.
        let mut users: BTreeMap<Pe, u64> = BTreeMap::new();
        for (from, weight, windowed, user) in lost {
            if windowed {
                self.lost_from(from, pe, weight, t);
            }
            if user {
                *users.entry(from).or_default() += weight;
            }
        }
        for (from, n) in users {
            self.at_sender(from, pe, t, |rt| rt.lost_with(pe, n));
        }
        // Its part in a quiescence wave goes on: its snapshot, waves queued.
        self.schedule_wake(pe, t);
        tracing::info!(pe, at_ns = t, "sim: PE killed");
        let subscribers = self.cursor.borrow().subscribers.clone();
        for (sub, callback) in subscribers {
            let s = &self.pes[sub as usize];
            if s.dead() || s.exited() {
                continue;
            }
            self.runtime(sub).notify_failure(pe, callback);
            self.schedule_wake(sub, t);
        }
    }

    /// `env`, sent to `to`, was lost with it at `t`: its sender's window for `to`
    /// gets the room back (see `PeRuntime::lost_at`).
    fn lost_at(&mut self, to: Pe, env: &Envelope, t: u64) {
        if windowed(env) {
            self.lost_from(env.src, to, env.weight(), t);
        }
    }

    /// Windowed messages of `weight` from `from` were lost with `to` at `t`.
    fn lost_from(&mut self, from: Pe, to: Pe, weight: u64, t: u64) {
        let st = &self.pes[from as usize];
        if from == to || st.dead() || st.exited() || st.rt.is_none() {
            return;
        }
        if self.runtime(from).lost_at(to, weight) {
            self.schedule_wake(from, t);
        }
    }

    /// The PEs' delivery digests folded in PE order, and the deliveries in them.
    fn delivery_digest(&self) -> (u64, u64) {
        self.fold_digests(PeRuntime::delivery_digest, false)
    }

    /// The PEs' digests since the commit folded in PE order (PEs that delivered
    /// nothing since left out: a restarted job builds every PE, the job that wrote
    /// the checkpoint only those it reached), and the deliveries in them.
    fn digest_since_commit(&self) -> (u64, u64) {
        self.fold_digests(PeRuntime::delivery_digest_since_mark, true)
    }

    /// The digests `of` each PE folded in PE order, skipping PEs with none (and,
    /// with `skip_empty`, those with no deliveries); and the deliveries in them.
    fn fold_digests(
        &self,
        of: impl Fn(&PeRuntime) -> Option<(u64, u64)>,
        skip_empty: bool,
    ) -> (u64, u64) {
        let mut all = Digest::default();
        let mut events = 0;
        for (pe, p) in self.pes.iter().enumerate() {
            if let Some((d, n)) = p.rt.as_deref().and_then(&of) {
                if skip_empty && n == 0 {
                    continue;
                }
                all.add(pe as u64);
                all.add(d);
                all.add(n);
                events += n;
            }
        }
        (all.value(), events)
    }

    fn finish(self, start: Instant, events_s: f64) -> Result<RunReport, RuntimeError> {
        let npes = self.pes.len();
        if !self.pes.iter().any(|p| p.exited()) {
            let dead: Vec<usize> = (0..npes).filter(|&i| self.pes[i].dead()).collect();
            let why = if dead.is_empty() {
                String::new()
            } else {
                format!(" (killed PEs {dead:?} may have held up a broadcast or reduction)")
            };
            return Err(RuntimeError::Stalled(format!(
                "the simulation ran out of events at virtual time {:.3} us and no PE saw an exit{why}; \
                 end the program with ctx.exit(), ctx.exit_on_quiescence() or Callback::Exit",
                self.makespan as f64 / 1e3
            )));
        }
        let busy: Vec<u64> = self.pes.iter().map(SimPe::busy_ns).collect();
        let delivery = self.config.sim.digest.then(|| self.delivery_digest());
        let since = self.config.sim.digest.then(|| self.digest_since_commit());
        let since_commit = since.and(self.since_commit);
        let us = |ns: u64| ns as f64 / 1e3;
        let stats = SimStats {
            messages: self.messages,
            bytes: self.bytes,
            events: self.events_done,
            events_per_s: self.events_done as f64 / events_s.max(1e-9),
            events_s,
            wall_s: 0.0,
            makespan_us: us(self.makespan),
            busy_min_us: us(busy.iter().copied().min().unwrap_or(0)),
            busy_mean_us: busy.iter().sum::<u64>() as f64 / 1e3 / npes as f64,
            busy_max_us: us(busy.iter().copied().max().unwrap_or(0)),
            pes_built: self.pes.iter().filter(|p| p.rt.is_some()).count() as u64,
            pes_killed: self.killed,
            dropped: self.dropped,
            digest: self.digest.value(),
            delivery_digest: delivery.map(|d| d.0),
            delivered: delivery.map_or(0, |d| d.1),
            digest_since_commit: since_commit.and(since.map(|d| d.0)),
            delivered_since_commit: since_commit.and(since).map_or(0, |d| d.1),
            since_commit_us: since_commit.map(us),
        };
        let per_pe = self
            .pes
            .into_iter()
            .enumerate()
            .map(|(i, p)| match p.rt {
                Some(rt) => rt.into_report(),
                None => PeReport::new(i as Pe),
            })
            .collect();
        let wall_s = start.elapsed().as_secs_f64();
        let report = RunReport {
            layer: "sim",
            pes: npes,
            wall_s,
            per_pe,
            sim: Some(SimStats { wall_s, ..stats }),
            trace: self.trace.map(JobTrace::finish).transpose()?,
            recoveries: self.recoveries,
        };
        finish_run(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sim_pe_fits_in_24_bytes() {
        assert!(
            std::mem::size_of::<SimPe>() <= 24,
            "SimPe {}: a million PEs keep one each",
            std::mem::size_of::<SimPe>()
        );
    }

    #[test]
    fn busy_time_and_flags_keep_apart() {
        let mut p = SimPe::default();
        p.set(DEAD, true);
        p.add_busy(BUSY - 5);
        p.set(WAKE_PENDING, true);
        p.add_busy(5);
        assert_eq!(p.busy_ns(), BUSY);
        assert!(p.dead() && p.wake() && !p.exited());
        p.set(WAKE_PENDING, false);
        assert!(!p.wake() && p.dead());
    }
}
