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
/// 32-byte record (or an idle spell's end or start written into the entry record
/// beside it, see [`crate::record`]); every `buffer_events` records the buffer is
/// written to the spool file under the collector's lock.
///
/// Pairing rules: `entry_end`, `span_end` and `idle_end` close the innermost open
/// entry, span or idle period; the writer closes anything left open at the PE's last
/// timestamp. Timestamps should not go backwards on one PE (the writer clamps them).
///
/// A PE left out of [`TraceConfig::pes`](crate::TraceConfig::pes) records nothing and
/// gets no track. With a [`TraceConfig::window`](crate::TraceConfig::window), only
/// events timed inside it are kept (a phase that overlaps it, cut to it): a slice
/// begun before the window has its end ignored, one still open at the PE's last kept
/// event closes there, and an arrow with one end outside is not drawn.
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
    /// This PE is not traced: every call returns at once.
    muted: bool,
    /// Events kept: `[from, to]` ns.
    window: Option<(u64, u64)>,
    /// The last phase fell outside the window, so its argument records go too.
    skipping_args: bool,
}

impl Recorder {
    /// A recorder for PE `pe`, shown in Chrome process `pid` (MPI rank or node group).
    pub fn new(pe: u32, pid: u32, sink: Arc<Collector>) -> Self {
        let muted = !sink.config().records_pe(pe);
        if !muted {
            sink.register(pe, pid);
        }
        let limit = sink.config().buffer_events.max(1);
        let flow_every = sink.config().flow_every.max(1);
        let window = sink.config().window;
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
            muted,
            window,
            skipping_args: false,
        }
    }

    /// Whether this PE records anything (see [`TraceConfig::pes`](crate::TraceConfig::pes)).
    pub fn is_recording(&self) -> bool {
        !self.muted
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
        if self.muted {
            return;
        }
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

    /// Records pushed so far (sampled-out sends are not counted, and an event merged
    /// into the record before it adds none).
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

    /// Whether `e` falls in the window; a phase that overlaps it is cut to it, and
    /// phase arguments go with their phase.
    fn in_window(&mut self, e: &mut Event, (from, to): (u64, u64)) -> bool {
        let ts = match e {
            Event::PhaseArg { .. } => return !self.skipping_args,
            Event::Phase { ts, dur, .. } => {
                let end = ts.saturating_add(*dur);
                let keep = *ts <= to && end >= from;
                self.skipping_args = !keep;
                if keep {
                    *ts = (*ts).max(from);
                    *dur = end.min(to) - *ts;
                }
                return keep;
            }
            Event::EntryBegin { ts, .. }
            | Event::EntryEnd { ts }
            | Event::Send { ts, .. }
            | Event::IdleBegin { ts }
            | Event::IdleEnd { ts }
            | Event::User { ts, .. }
            | Event::SpanBegin { ts, .. }
            | Event::SpanEnd { ts } => *ts,
        };
        (from..=to).contains(&ts)
    }

    fn push(&mut self, mut e: Event) {
        if self.muted {
            return;
        }
        if let Some(w) = self.window {
            if !self.in_window(&mut e, w) {
                return;
            }
        }
        // The pairs recorded on every message a PE waited for share one record
        // (`crate::record`): a third fewer records, and bytes to write, per hop.
        if let Some(last) = self.buf.last_mut() {
            if let Some(merged) = last.merged_with(&e) {
                *last = merged;
                return;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::Recorder;
    use crate::{read_chrome, validate, Collector, Event, Names, Record, TraceConfig};
    use std::sync::Arc;

    /// Two PEs bouncing a message: each hop ends an idle spell, runs an entry that
    /// sends, and goes idle again; every fourth hop also has the pairs that do not
    /// merge (an entry begun after its idle spell ended, a send after its entry).
    fn pingpong(name: u32) -> Vec<(u32, Event)> {
        let mut out = Vec::new();
        for i in 0..200u64 {
            let pe = (i % 2) as u32;
            let t = 1000 + 100 * i;
            let late = u64::from(i % 4 == 3);
            out.extend([
                (pe, Event::IdleEnd { ts: t }),
                (
                    pe,
                    Event::EntryBegin {
                        ts: t + late,
                        name,
                        src_pe: 1 - pe,
                        bytes: 40,
                        msg_id: Some(i),
                    },
                ),
                (
                    pe,
                    Event::Send {
                        ts: t + 5,
                        msg_id: i + 1,
                        dst_pe: 1 - pe,
                        bytes: 40,
                    },
                ),
                (pe, Event::EntryEnd { ts: t + 9 }),
            ]);
            if late == 1 {
                let send = Event::Send {
                    ts: t + 10,
                    msg_id: 1 << 40 | i,
                    dst_pe: pe,
                    bytes: 8,
                };
                out.push((pe, send));
            }
            out.push((pe, Event::IdleBegin { ts: t + 12 }));
        }
        out
    }

    fn record(r: &mut Recorder, e: Event) {
        match e {
            Event::IdleEnd { ts } => r.idle_end(ts),
            Event::IdleBegin { ts } => r.idle_begin(ts),
            Event::EntryBegin {
                ts,
                name,
                src_pe,
                bytes,
                msg_id,
            } => r.entry_begin(ts, name, src_pe, bytes, msg_id),
            Event::EntryEnd { ts } => r.entry_end(ts),
            Event::Send {
                ts,
                msg_id,
                dst_pe,
                bytes,
            } => r.send(ts, msg_id, dst_pe, bytes),
            other => panic!("not in the scenario: {other:?}"),
        }
    }

    #[test]
    fn merged_records_write_the_same_files_as_one_event_per_record() {
        let dir = std::env::temp_dir().join(format!("chorus-rec-merge-{}", std::process::id()));
        let names = Names::new();
        let events = pingpong(names.intern("P::ball"));
        for file in ["t.json", "t.perfetto-trace"] {
            let (merged_out, plain_out) =
                (dir.join("merged").join(file), dir.join("plain").join(file));
            let merged = Arc::new(Collector::new(TraceConfig::new(&merged_out)).unwrap());
            let mut pes: Vec<Recorder> = (0..2)
                .map(|pe| Recorder::new(pe, 0, merged.clone()))
                .collect();
            for &(pe, e) in &events {
                record(&mut pes[pe as usize], e);
            }
            drop(pes);
            let plain = Collector::new(TraceConfig::new(&plain_out)).unwrap();
            for pe in 0..2 {
                plain.register(pe, 0);
                let records: Vec<Record> = events
                    .iter()
                    .filter(|(p, _)| *p == pe)
                    .map(|&(_, e)| Record::from_event(e))
                    .collect();
                plain.accept(pe, 0, &records);
            }
            // Three records for most hops instead of five.
            assert_eq!(plain.spooled_records(), 200 * 5 + 50);
            assert_eq!(merged.spooled_records(), 150 * 3 + 50 * 6);
            let merged_stats = merged.write(&names, &merged_out).unwrap();
            let plain_stats = plain.write(&names, &plain_out).unwrap();
            assert_eq!(merged_stats.flows, 199, "{file}: every bounce drawn");
            assert_eq!(merged_stats.events, plain_stats.events);
            let (a, b) = (
                std::fs::read(&merged_out).unwrap(),
                std::fs::read(&plain_out).unwrap(),
            );
            assert!(a == b, "{file}: the merged records drew something else");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn pes_and_window_choose_what_is_recorded() {
        let dir = std::env::temp_dir().join(format!("chorus-rec-select-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("t.json");
        let mut config = TraceConfig::new(&out);
        config.pes = Some(vec![(0, 0), (2, 3)]);
        config.window = Some((100, 200));
        let sink = Arc::new(Collector::new(config).unwrap());
        let names = Names::new();
        let (e, ph) = (names.intern("E::e"), names.intern("phase"));
        let mut pes: Vec<Recorder> = (0..4)
            .map(|pe| Recorder::new(pe, 0, sink.clone()))
            .collect();
        assert_eq!(
            pes.iter().map(Recorder::is_recording).collect::<Vec<_>>(),
            [true, false, true, true]
        );
        for r in &mut pes {
            r.entry_begin(50, e, 0, 8, None); // before the window: its end is ignored
            r.entry_end(120);
            r.entry_begin(150, e, 0, 8, None);
            r.entry_end(180);
            r.phase(10, 40, ph, &[("k", 1)]); // outside: dropped with its argument
            r.phase(90, 200, ph, &[("k", 2)]); // cut to [100, 200]
            r.entry_begin(250, e, 0, 8, None); // after the window
            r.entry_end(260);
        }
        assert_eq!(pes[1].recorded(), 0);
        assert_eq!(
            pes[0].recorded(),
            2 + 1 + 1 + 1,
            "end, entry, phase and its argument"
        );
        drop(pes);
        let stats = sink.write_chrome(&names, &out).unwrap();
        assert_eq!(stats.stray_ends, 3);
        let trace = read_chrome(&out).unwrap();
        assert_eq!(validate(&trace), Vec::<String>::new());
        // PE n is thread n + 1 (`crate::ids`): PEs 0, 2 and 3.
        let tids: Vec<u32> = trace.tracks.iter().map(|t| t.tid).collect();
        assert_eq!(tids, [1, 3, 4]);
        let slices: Vec<(&str, u64, u64)> = trace.tracks[0]
            .slices
            .iter()
            .map(|s| (s.name.as_str(), s.ts_ns, s.end_ns()))
            .collect();
        assert_eq!(slices, [("phase", 100, 200), ("E::e", 150, 180)]);
        assert_eq!(trace.tracks[0].slices[0].arg_u64("k"), Some(2));
        std::fs::remove_dir_all(&dir).ok();
    }
}
