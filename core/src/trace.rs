//! The runtime's side of `--trace FILE`: one recorder per PE, entry names resolved once
//! per (chare type, entry), and the job-wide collector that writes the Chrome trace.

use crate::config::Config;
use crate::entry_name::variant_of;
use crate::error::RuntimeError;
use crate::ids::Pe;
use chorus_traces::{Collector, NameId, Names, Recorder, TraceConfig, WriteStats};
use serde::Serialize;
use std::any::TypeId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Most records every simulated PE together may hold in memory before spooling;
/// each PE's buffer is this divided by the PE count (within bounds), so 10^5
/// simulated PEs stay within a few hundred MiB.
const SIM_BUFFER_BUDGET: usize = 4 << 20;

/// Simulated PEs shown as one Chrome process ("node group N").
pub(crate) const SIM_PES_PER_GROUP: u32 = 64;

/// What writing the trace produced, reported with the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceReport {
    /// The Chrome JSON file written.
    pub file: PathBuf,
    /// Counts and sizes of what was written.
    pub stats: WriteStats,
    /// Seconds spent merging the spool into the file.
    pub write_s: f64,
}

/// One job's tracing: the shared name table and the collector every PE flushes to.
pub(crate) struct JobTrace {
    names: Arc<Names>,
    collector: Arc<Collector>,
    out: PathBuf,
}

impl JobTrace {
    /// The job's trace if `--trace` was given; `process_label` names Chrome processes
    /// ("rank" or "node group").
    pub(crate) fn start(
        cfg: &Config,
        process_label: &str,
        npes: usize,
    ) -> Result<Option<JobTrace>, RuntimeError> {
        let Some(out) = cfg.trace.clone() else {
            return Ok(None);
        };
        let mut tc = TraceConfig::new(out);
        tc.flow_every = cfg.trace_flow_every;
        tc.process_label = process_label.to_owned();
        if process_label == "node group" {
            tc.buffer_events = (SIM_BUFFER_BUDGET / npes.max(1)).clamp(256, tc.buffer_events);
        }
        let out = tc.output_file();
        let collector = Collector::new(tc).map_err(|e| trace_error(&out, e))?;
        Ok(Some(JobTrace {
            names: Arc::new(Names::new()),
            collector: Arc::new(collector),
            out,
        }))
    }

    /// The recorder state of PE `pe`, shown in Chrome process `pid`.
    pub(crate) fn pe(&self, pe: Pe, pid: u32) -> Box<PeTrace> {
        Box::new(PeTrace::new(
            Recorder::new(pe, pid, self.collector.clone()),
            self.names.clone(),
        ))
    }

    /// Write the Chrome trace; call after every PE's recorder has been dropped.
    pub(crate) fn finish(self) -> Result<TraceReport, RuntimeError> {
        let _span = tracing::info_span!("write_trace").entered();
        let start = Instant::now();
        let stats = self
            .collector
            .write_chrome(&self.names, &self.out)
            .map_err(|e| trace_error(&self.out, e))?;
        Ok(TraceReport {
            file: self.out,
            stats,
            write_s: start.elapsed().as_secs_f64(),
        })
    }
}

fn trace_error(out: &std::path::Path, e: chorus_traces::TraceError) -> RuntimeError {
    RuntimeError::Invalid(format!("--trace {}: {e}", out.display()))
}

/// The message a PE is delivering, for the entry that handles it.
#[derive(Clone, Copy)]
struct Incoming {
    src: Pe,
    msg_id: u64,
    bytes: u64,
}

/// One PE's tracing state, owned by its `PeCore`.
pub(crate) struct PeTrace {
    rec: Recorder,
    names: Arc<Names>,
    /// Entry names already interned, by chare type and enum variant.
    entries: HashMap<(TypeId, u32), NameId>,
    /// User, span and runtime names already interned.
    labels: HashMap<&'static str, NameId>,
    dynamic: HashMap<Box<str>, NameId>,
    incoming: Option<Incoming>,
    /// Entry slices open now (a handler's constructor may run inside a runtime slice).
    open_entries: u32,
    idle: bool,
}

impl PeTrace {
    fn new(rec: Recorder, names: Arc<Names>) -> Self {
        PeTrace {
            rec,
            names,
            entries: HashMap::new(),
            labels: HashMap::new(),
            dynamic: HashMap::new(),
            incoming: None,
            open_entries: 0,
            idle: false,
        }
    }

    /// A message of `bytes` from `src` named `msg_id` is about to be handled here.
    pub(crate) fn incoming(&mut self, src: Pe, msg_id: u64, bytes: u64) {
        self.incoming = Some(Incoming { src, msg_id, bytes });
    }

    /// The entry of chare type `C` handling `msg` starts at `ts` (ns).
    pub(crate) fn entry_begin<C: 'static, M: Serialize>(&mut self, ts: u64, msg: &M) {
        let variant = variant_of(msg);
        let key = (TypeId::of::<C>(), variant.map_or(u32::MAX, |v| v.0));
        let name = match self.entries.get(&key) {
            Some(&id) => id,
            None => {
                let entry = variant.map_or("handle", |v| v.1);
                let id = self.names.intern(&format!(
                    "{}::{entry}",
                    short_type_name(std::any::type_name::<C>())
                ));
                self.entries.insert(key, id);
                id
            }
        };
        self.begin_named(ts, name);
    }

    /// The constructor of chare type `C` starts at `ts` (ns).
    pub(crate) fn create_begin<C: 'static>(&mut self, ts: u64) {
        let key = (TypeId::of::<C>(), u32::MAX - 1);
        let name = match self.entries.get(&key) {
            Some(&id) => id,
            None => {
                let name = format!("{}::create", short_type_name(std::any::type_name::<C>()));
                let id = self.names.intern(&name);
                self.entries.insert(key, id);
                id
            }
        };
        self.begin_named(ts, name);
    }

    /// A runtime-internal handler (reduction step, quiescence wave, …) starts at `ts`.
    pub(crate) fn runtime_begin(&mut self, ts: u64, what: &'static str) {
        let name = self.label(what);
        self.begin_named(ts, name);
    }

    fn begin_named(&mut self, ts: u64, name: NameId) {
        let (src, bytes, msg_id) = match self.incoming.take() {
            Some(i) => (i.src, i.bytes, Some(i.msg_id)),
            None => (self.rec.pe(), 0, None),
        };
        self.rec.entry_begin(ts, name, src, bytes, msg_id);
        self.open_entries += 1;
    }

    /// Close every entry slice left open (the handler returned or panicked) at `ts`.
    pub(crate) fn entries_end(&mut self, ts: u64) {
        while self.open_entries > 0 {
            self.rec.entry_end(ts);
            self.open_entries -= 1;
        }
    }

    /// True while an entry slice is open.
    pub(crate) fn in_entry(&self) -> bool {
        self.open_entries > 0
    }

    /// A message named `msg_id` of `bytes` leaves for `to` at `ts`.
    pub(crate) fn send(&mut self, ts: u64, msg_id: u64, to: Pe, bytes: u64) {
        self.rec.send(ts, msg_id, to, bytes);
    }

    /// The PE has nothing to run from `ts` on.
    pub(crate) fn idle_begin(&mut self, ts: u64) {
        if !self.idle {
            self.idle = true;
            self.rec.idle_begin(ts);
        }
    }

    /// The PE has work again at `ts`.
    pub(crate) fn idle_end(&mut self, ts: u64) {
        if self.idle {
            self.idle = false;
            self.rec.idle_end(ts);
        }
    }

    /// A user instant event named `name` at `ts`.
    pub(crate) fn user_event(&mut self, ts: u64, name: &str) {
        let id = self.dynamic_name(name);
        self.rec.user_event(ts, id);
    }

    /// A user span named `name` opens at `ts`.
    pub(crate) fn span_begin(&mut self, ts: u64, name: &str) {
        let id = self.dynamic_name(name);
        self.rec.span_begin(ts, id);
    }

    /// The innermost user span closes at `ts`.
    pub(crate) fn span_end(&mut self, ts: u64) {
        self.rec.span_end(ts);
    }

    /// A phase (section creation, load-balancing step) from `ts` lasting `dur` ns.
    pub(crate) fn phase(&mut self, ts: u64, dur: u64, name: &str, args: &[(&'static str, u64)]) {
        let id = self.dynamic_name(name);
        self.rec.phase(ts, dur, id, args);
    }

    fn label(&mut self, what: &'static str) -> NameId {
        if let Some(&id) = self.labels.get(what) {
            return id;
        }
        let id = self.names.intern(what);
        self.labels.insert(what, id);
        id
    }

    fn dynamic_name(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.dynamic.get(name) {
            return id;
        }
        let id = self.names.intern(name);
        self.dynamic.insert(name.into(), id);
        id
    }
}

/// `a::b::Foo<c::Bar>` → `Foo<Bar>`: the type's name without module paths.
pub(crate) fn short_type_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, ch) in full.char_indices() {
        if matches!(
            ch,
            '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | ';' | '&'
        ) {
            out.push_str(last_segment(&full[segment_start..i]));
            out.push(ch);
            segment_start = i + ch.len_utf8();
        }
    }
    out.push_str(last_segment(&full[segment_start..]));
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// Seconds on a layer's clock as trace nanoseconds.
pub(crate) fn ns(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1e9) as u64
}

#[cfg(test)]
mod tests {
    use super::short_type_name;

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(short_type_name("hello::Pinger"), "Pinger");
        assert_eq!(
            short_type_name("a::b::Wrap<c::Inner, u32>"),
            "Wrap<Inner, u32>"
        );
        assert_eq!(short_type_name("Plain"), "Plain");
    }
}
