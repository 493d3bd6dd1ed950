//! The runtime's side of `--trace FILE`: one recorder per PE, entry names resolved once
//! per (chare type, entry), and the job-wide collector that writes the Chrome trace.

use crate::base::config::Config;
use crate::base::entry_name::variant_of;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use chorus_traces::{Collector, NameId, Names, Recorder, TraceConfig, WriteStats};
#[cfg(any(feature = "mpi", test))]
use chorus_traces::{Record, RECORD_BYTES};
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

impl std::fmt::Display for TraceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "trace {}: {} events, {} arrows, {} bytes ({:.1} bytes/event), written in {:.3} s (events moved up to {} ns later for exact arrows); open it in ui.perfetto.dev or run `chorus-trace summary {}`",
            self.file.display(),
            self.stats.events,
            self.stats.flows,
            self.stats.bytes,
            self.stats.bytes_per_event,
            self.write_s,
            self.stats.max_shift_ns,
            self.file.display()
        )
    }
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
        tc.pes = cfg.trace_pes.as_ref().map(|l| l.ranges().to_vec());
        tc.window = cfg.trace_window.map(|w| (w.from_ns, w.to_ns));
        if process_label == "node group" {
            // The budget is shared by the PEs that record.
            let traced = cfg.trace_pes.as_ref().map_or(npes, |l| {
                usize::try_from(l.count()).unwrap_or(npes).min(npes)
            });
            tc.buffer_events = (SIM_BUFFER_BUDGET / traced.max(1)).clamp(256, tc.buffer_events);
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

    /// Write the trace (Perfetto protobuf for a `.perfetto-trace` or `.pftrace` path,
    /// Chrome JSON otherwise); call after every PE's recorder has been dropped.
    pub(crate) fn finish(self) -> Result<TraceReport, RuntimeError> {
        let _span = tracing::info_span!("write_trace").entered();
        let start = Instant::now();
        let stats = self
            .collector
            .write(&self.names, &self.out)
            .map_err(|e| trace_error(&self.out, e))?;
        Ok(TraceReport {
            file: self.out,
            stats,
            write_s: start.elapsed().as_secs_f64(),
        })
    }
}

/// A process's name tables, sent ahead of its records to the process that writes the
/// merged trace (MPI rank 0).
#[cfg(any(feature = "mpi", test))]
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct TraceTables {
    names: Vec<String>,
    arg_keys: Vec<String>,
}

/// Maps another process's name and key ids to this process's.
#[cfg(any(feature = "mpi", test))]
pub(crate) struct Importer {
    names: Vec<NameId>,
    keys: Vec<u32>,
}

// Merging the traces of several processes (the MPI layer's ranks).
#[cfg(any(feature = "mpi", test))]
impl JobTrace {
    /// This process's name tables.
    pub(crate) fn tables(&self) -> TraceTables {
        TraceTables {
            names: self.names.snapshot(),
            arg_keys: self
                .collector
                .arg_keys()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Calls `f` with each spooled buffer encoded for the wire: PE and pid (u32 LE
    /// each), then the records.
    pub(crate) fn export(&self, mut f: impl FnMut(Vec<u8>)) -> Result<(), RuntimeError> {
        self.collector
            .for_each_chunk(|pe, pid, records| {
                let mut out = Vec::with_capacity(8 + records.len() * RECORD_BYTES);
                out.extend_from_slice(&pe.to_le_bytes());
                out.extend_from_slice(&pid.to_le_bytes());
                for r in records {
                    out.extend_from_slice(&r.to_bytes());
                }
                f(out);
                Ok(())
            })
            .map_err(|e| trace_error(&self.out, e))
    }

    /// Interns another process's names here.
    pub(crate) fn importer(&self, tables: &TraceTables) -> Importer {
        Importer {
            names: tables.names.iter().map(|n| self.names.intern(n)).collect(),
            keys: tables
                .arg_keys
                .iter()
                .map(|k| self.collector.arg_key_from(k))
                .collect(),
        }
    }

    /// Adds one buffer made by [`JobTrace::export`] in process `from` to this trace.
    pub(crate) fn import(
        &self,
        imp: &Importer,
        from: &str,
        bytes: &[u8],
    ) -> Result<(), RuntimeError> {
        let bad = |why: &str| RuntimeError::TraceRecords {
            out: self.out.clone(),
            from: from.to_string(),
            why: why.to_string(),
        };
        if bytes.len() < 8 || !bytes[8..].chunks_exact(RECORD_BYTES).remainder().is_empty() {
            return Err(bad(&format!(
                "{} bytes is not a whole number of records",
                bytes.len()
            )));
        }
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let (pe, pid) = (word(0), word(4));
        let mut records = Vec::with_capacity((bytes.len() - 8) / RECORD_BYTES);
        for raw in bytes[8..].chunks_exact(RECORD_BYTES) {
            let mut a = [0u8; RECORD_BYTES];
            a.copy_from_slice(raw);
            let r = Record::from_bytes(&a);
            let mut unknown = false;
            let r = r.remap(
                |n| {
                    imp.names.get(n as usize).copied().unwrap_or_else(|| {
                        unknown = true;
                        n
                    })
                },
                |k| imp.keys.get(k as usize).copied().unwrap_or(k),
            );
            if unknown {
                return Err(bad("a record names an entry missing from its name table"));
            }
            records.push(r);
        }
        self.collector.register(pe, pid);
        self.collector.accept(pe, pid, &records);
        Ok(())
    }
}

fn trace_error(out: &std::path::Path, e: chorus_traces::TraceError) -> RuntimeError {
    RuntimeError::Trace {
        out: out.to_path_buf(),
        reason: e.to_string(),
    }
}

/// The message a PE is delivering, for the entry that handles it.
#[derive(Clone, Copy)]
struct Incoming {
    src: Pe,
    msg_id: u64,
    bytes: u64,
    /// When delivery started, so the entry needs no second clock read; cleared when
    /// something is recorded in between, as records of a PE must stay in time order.
    ts: Option<u64>,
}

/// One PE's tracing state, owned by its `PeCore`.
pub(crate) struct PeTrace {
    rec: Recorder,
    names: Arc<Names>,
    /// Entry names already interned, by chare type and enum variant (looked up on
    /// every traced message, so with ahash rather than the slower SipHash).
    entries: HashMap<(TypeId, u32), NameId, ahash::RandomState>,
    /// The entry named last: a chare's messages mostly run the entry its last one
    /// ran, which this finds without hashing.
    last_entry: Option<((TypeId, u32), NameId)>,
    /// Runtime names already interned (looked up on every traced runtime message,
    /// such as an `ask`'s reply, so with ahash too).
    labels: HashMap<&'static str, NameId, ahash::RandomState>,
    /// User event and span names already interned.
    dynamic: HashMap<Box<str>, NameId, ahash::RandomState>,
    incoming: Option<Incoming>,
    /// When the delivery of the next message began, if before it is processed (the
    /// sim charges receive and handler costs first, and they belong to the entry).
    delivery_at: Option<u64>,
    /// Entry slices open now (a handler's constructor may run inside a runtime slice).
    open_entries: u32,
    idle: bool,
}

impl PeTrace {
    fn new(rec: Recorder, names: Arc<Names>) -> Self {
        PeTrace {
            rec,
            names,
            entries: HashMap::default(),
            last_entry: None,
            labels: HashMap::default(),
            dynamic: HashMap::default(),
            incoming: None,
            delivery_at: None,
            open_entries: 0,
            idle: false,
        }
    }

    /// Whether this PE is traced (not left out by `--trace-pes`).
    pub(crate) fn is_recording(&self) -> bool {
        self.rec.is_recording()
    }

    /// The next message processed began its delivery at `ts`.
    pub(crate) fn delivery_starts(&mut self, ts: u64) {
        self.delivery_at = Some(ts);
    }

    /// When the message being processed began its delivery, if a layer said so
    /// (once per message).
    pub(crate) fn take_delivery_start(&mut self) -> Option<u64> {
        self.delivery_at.take()
    }

    /// A message of `bytes` from `src` named `msg_id` is about to be handled here at `ts`.
    pub(crate) fn incoming(&mut self, ts: u64, src: Pe, msg_id: u64, bytes: u64) {
        self.incoming = Some(Incoming {
            src,
            msg_id,
            bytes,
            ts: Some(ts),
        });
    }

    /// When the entry about to start began: the delivery's time for the first entry a
    /// message reaches, `now` for the others (array elements of one broadcast).
    pub(crate) fn entry_ts(&self, now: impl FnOnce() -> u64) -> u64 {
        match self.incoming.and_then(|i| i.ts) {
            Some(ts) => ts,
            None => now(),
        }
    }

    /// The entry of chare type `C` handling `msg` starts at `ts` (ns).
    pub(crate) fn entry_begin<C: 'static, M: Serialize>(&mut self, ts: u64, msg: &M) {
        let variant = variant_of(msg);
        let key = (TypeId::of::<C>(), variant.map_or(u32::MAX, |v| v.0));
        let name = match self.last_entry {
            Some((last, id)) if last == key => id,
            _ => {
                let id = match self.entries.get(&key) {
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
                self.last_entry = Some((key, id));
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
        if let Some(i) = &mut self.incoming {
            i.ts = None;
        }
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
    use super::{short_type_name, JobTrace};
    use crate::base::config::Config;

    struct Alpha;
    struct Beta;

    #[derive(serde::Serialize)]
    enum Msg {
        Go,
        Stop,
    }

    fn job(file: &std::path::Path) -> JobTrace {
        let cfg = Config {
            trace: Some(file.to_path_buf()),
            ..Config::default()
        };
        JobTrace::start(&cfg, "rank", 2)
            .expect("trace opens")
            .expect("tracing is on")
    }

    #[test]
    fn another_process_records_merge_with_their_own_names() {
        let dir = std::env::temp_dir().join(format!("chorus-trace-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (root, other) = (job(&dir.join("root.json")), job(&dir.join("other.json")));
        // The two processes intern names in different orders, so their ids differ.
        let mut p0 = root.pe(0, 0);
        p0.entry_begin::<Alpha, _>(10, &Msg::Go);
        p0.entries_end(20);
        p0.phase(5, 30, "setup", &[("members", 2)]);
        drop(p0);
        let mut p1 = other.pe(1, 1);
        p1.entry_begin::<Beta, _>(12, &Msg::Stop);
        p1.entries_end(18);
        p1.entry_begin::<Alpha, _>(21, &Msg::Go);
        p1.entries_end(25);
        p1.phase(1, 2, "setup", &[("rounds", 3)]);
        drop(p1);

        let tables: super::TraceTables =
            bincode::deserialize(&bincode::serialize(&other.tables()).unwrap()).unwrap();
        let imp = root.importer(&tables);
        let mut chunks = Vec::new();
        other.export(|c| chunks.push(c)).unwrap();
        assert!(!chunks.is_empty());
        for c in &chunks {
            root.import(&imp, "rank 1", c).unwrap();
        }
        assert!(root.import(&imp, "rank 1", &chunks[0][..9]).is_err());
        let report = root.finish().unwrap();
        let trace = chorus_traces::read_chrome(&report.file).unwrap();
        let names = |pe: u32| -> Vec<String> {
            let t = trace.tracks.iter().find(|t| t.pe() == pe).unwrap();
            t.slices.iter().map(|s| s.name.clone()).collect()
        };
        assert_eq!(names(0), ["setup", "Alpha::Go"]);
        assert_eq!(names(1), ["setup", "Beta::Stop", "Alpha::Go"]);
        let setup1 = &trace.tracks.iter().find(|t| t.pe() == 1).unwrap().slices[0];
        assert_eq!(setup1.arg_u64("rounds"), Some(3));
        std::fs::remove_dir_all(&dir).ok();
    }

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
