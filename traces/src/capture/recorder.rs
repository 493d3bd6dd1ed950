//! The per-PE recorder the runtime calls on every traced event.

use std::sync::Arc;

use crate::capture::collector::Collector;
use crate::names::NameId;
use crate::record::{flow_kept, Event, Record};

/// Records one PE's events into a bounded buffer and hands full buffers to the collector.
///
/// One per PE, owned by that PE's thread (it is `Send`, not shared). Every call takes
/// the event's timestamp in ns from the caller, so the runtime decides the clock
/// (wall clock, simulated time, aligned MPI time). Calls are cheap: a push of a
/// 32-byte record; every `buffer_events` records the buffer is written to the spool
/// file under the collector's lock.
///
/// Pairing rules: `entry_end`, `span_end` and `idle_end` close the innermost open
/// entry, span or idle period; the writer closes anything left open at the PE's last
/// timestamp. Timestamps should not go backwards on one PE (the writer clamps them).
#[derive(Debug)]
pub struct Recorder {
    pe: u32,
    pid: u32,
    sink: Arc<Collector>,
    buf: Vec<Record>,
    limit: usize,
    flow_every: u64,
    /// Phase argument keys seen by this PE, so the collector's lock is taken once per key.
    arg_keys: Vec<(&'static str, u32)>,
    max_buffered: usize,
    flushes: u64,
    recorded: u64,
}

impl Recorder {
    /// A recorder for PE `pe`, shown in Chrome process `pid` (MPI rank or node group).
    pub fn new(pe: u32, pid: u32, sink: Arc<Collector>) -> Self {
        sink.register(pe, pid);
        let limit = sink.config().buffer_events.max(1);
        let flow_every = sink.config().flow_every.max(1);
        Recorder {
            pe,
            pid,
            sink,
            buf: Vec::new(),
            limit,
            flow_every,
            arg_keys: Vec::new(),
            max_buffered: 0,
            flushes: 0,
            recorded: 0,
        }
    }

    /// An entry method starts on this PE for a message from `src_pe` of `bytes` bytes.
    pub fn entry_begin(
        &mut self,
        ts_ns: u64,
        name: NameId,
        src_pe: u32,
        bytes: u64,
        msg_id: Option<u64>,
    ) {
        self.push(Event::EntryBegin {
            ts: ts_ns,
            name,
            src_pe,
            bytes,
            msg_id,
        });
    }

    /// The running entry method returns.
    pub fn entry_end(&mut self, ts_ns: u64) {
        self.push(Event::EntryEnd { ts: ts_ns });
    }

    /// A message leaves for `dst_pe`; recorded only if its flow arrow is sampled,
    /// because the message matrix comes from the receiving side's `entry_begin`.
    pub fn send(&mut self, ts_ns: u64, msg_id: u64, dst_pe: u32, bytes: u64) {
        if flow_kept(msg_id, self.flow_every) {
            self.push(Event::Send {
                ts: ts_ns,
                msg_id,
                dst_pe,
                bytes,
            });
        }
    }

    /// The scheduler goes idle.
    pub fn idle_begin(&mut self, ts_ns: u64) {
        self.push(Event::IdleBegin { ts: ts_ns });
    }

    /// The scheduler has work again.
    pub fn idle_end(&mut self, ts_ns: u64) {
        self.push(Event::IdleEnd { ts: ts_ns });
    }

    /// A user instant event.
    pub fn user_event(&mut self, ts_ns: u64, name: NameId) {
        self.push(Event::User { ts: ts_ns, name });
    }

    /// A user span opens (may nest inside an entry or another span).
    pub fn span_begin(&mut self, ts_ns: u64, name: NameId) {
        self.push(Event::SpanBegin { ts: ts_ns, name });
    }

    /// The innermost open user span closes.
    pub fn span_end(&mut self, ts_ns: u64) {
        self.push(Event::SpanEnd { ts: ts_ns });
    }

    /// A phase that started at `ts_ns` and lasted `dur_ns` (recorded after the fact, e.g.
    /// a section-creation phase or load-balancing step), with numeric arguments.
    ///
    /// If it partially overlaps an entry, span or idle slice the writer shortens the
    /// phase so that slices still nest.
    pub fn phase(&mut self, ts_ns: u64, dur_ns: u64, name: NameId, args: &[(&'static str, u64)]) {
        let nargs = u32::try_from(args.len())
            .unwrap_or(u32::MAX)
            .min(crate::record::MAX_PE);
        self.push(Event::Phase {
            ts: ts_ns,
            dur: dur_ns,
            name,
            nargs,
        });
        for &(key, value) in args.iter().take(nargs as usize) {
            let key = self.arg_key(key);
            self.push(Event::PhaseArg { key, value });
        }
    }

    /// Hands what is left to the collector; the same happens on drop.
    pub fn finish(self) {}

    /// This recorder's PE.
    pub fn pe(&self) -> u32 {
        self.pe
    }

    /// Records waiting in the buffer now.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The most records the buffer ever held (never above [`Recorder::buffer_limit`]).
    pub fn max_buffered(&self) -> usize {
        self.max_buffered
    }

    /// The buffer limit (`buffer_events`, at least 1).
    pub fn buffer_limit(&self) -> usize {
        self.limit
    }

    /// Allocated buffer capacity in records (grows up to the limit, never past it).
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Buffers handed to the collector so far.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }

    /// Records pushed so far (sampled-out sends are not counted).
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    fn arg_key(&mut self, key: &'static str) -> u32 {
        if let Some(&(_, id)) = self.arg_keys.iter().find(|(k, _)| *k == key) {
            return id;
        }
        let id = self.sink.arg_key(key);
        self.arg_keys.push((key, id));
        id
    }

    fn push(&mut self, e: Event) {
        if self.buf.len() == self.buf.capacity() {
            // Grow by doubling but never past the limit, so a PE that records little
            // allocates little and none allocates more than `buffer_events` records.
            let want = (self.buf.capacity() * 2).max(16).min(self.limit);
            self.buf.reserve_exact(want - self.buf.len());
        }
        self.buf.push(Record::from_event(e));
        self.recorded += 1;
        self.max_buffered = self.max_buffered.max(self.buf.len());
        if self.buf.len() >= self.limit {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.sink.accept(self.pe, self.pid, &self.buf);
            self.buf.clear();
            self.flushes += 1;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.flush();
    }
}
