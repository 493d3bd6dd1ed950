//! Writes the spooled records as one Chrome Trace Event JSON file.
//!
//! Shape of the output (opens in ui.perfetto.dev and chrome://tracing):
//! - one process per rank or node group (`"rank N"` / `"node group N"`, pid N + 1),
//!   one thread per PE (`"PE n"`, tid n + 1: `crate::ids`, no id is 0), sorted by pid
//!   and PE;
//! - entries, user spans, phases and idle periods are `X` slices with categories
//!   `entry`, `user`, `phase` and `idle` (idle is a grey-able slice named `idle` on the
//!   PE's own track, so busy and idle read off one row);
//! - user events are thread-scoped `i` instants;
//! - a kept message is an arrow from a `s` flow event to an `f` flow event (`"bp":"e"`),
//!   both with cat `msg`, name `msg` and the message id as a hex string, each written
//!   at the start of a 1 ns *holder* slice of cat `msg` (named `send` or `recv`) that
//!   lies strictly inside the entry that sent or handled the message. DevTools binds
//!   a flow event to the slice of equal cat, pid, tid and ts (the holder); catapult to
//!   the deepest slice around its time and Perfetto to the innermost open one (the
//!   holder or its entry): no other slice starts or ends there, so all three bind the
//!   arrow to the right entry. A send outside any entry gets a `send` slice (cat
//!   `send`) around its holder.
//!
//! Times are integer nanoseconds, written as microseconds with exactly three decimals
//! (`displayTimeUnit` is `ns`); a slice's `dur` is the difference of its integer start
//! and end, so nesting is exact. The private `capture::layout` module places every
//! event on this clock: the recorded time wherever there is room, a few ns later where
//! a holder or a minimum length of 1 ns needs it (zero-length sim entries).
//!
//! Holders and flow events come after every track, in time order (DevTools reads flow
//! events in file order and draws an arrow from the slice written first); they are
//! kept in memory until then, about 32 bytes per arrow end.
//!
//! Per track, events are written in timestamp order and slices nest properly: unpaired
//! ends are ignored, slices left open are closed at the PE's last timestamp, and a
//! phase that partially overlaps another slice is shortened. Flows are written only
//! when both the send and the receive were recorded, and never backwards in time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::capture::layout::{At, FlowPlan, Slice, SliceKind, TrackEvents};
use crate::capture::spool::{read_chunk, Chunk, SpoolView};
use crate::capture::staged::StagedFile;
use crate::error::TraceError;
use crate::ids::file_id;
use crate::names::{NameId, Names};
use crate::record::{flow_kept, Event, Record};

// Re-exported so the counts keep their first public path.
pub use crate::capture::stats::WriteStats;

/// Most passes that move receives after their sends before the rest are given up.
const MAX_LAYOUT_PASSES: u64 = 32;

/// What an output format does with the laid-out events: Chrome JSON here, Perfetto
/// protobuf in [`crate::capture::perfetto`]. Called in this order: `metadata`, `track`
/// once per PE, `holders`, `finish`.
pub(crate) trait Output {
    /// Names the processes and threads.
    fn metadata(&mut self, view: &SpoolView) -> std::io::Result<()>;
    /// Writes one PE's events (or keeps some to write in `holders`).
    fn track(
        &mut self,
        o: &TrackOut<'_>,
        t: &TrackEvents,
        stats: &mut WriteStats,
    ) -> std::io::Result<()>;
    /// Writes what `track` kept for after every track.
    fn holders(&mut self, stats: &mut WriteStats) -> std::io::Result<()>;
    /// Ends and flushes the file; returns how many events it has.
    fn finish(self: Box<Self>) -> std::io::Result<u64>;
}

/// Writes `view`'s spool as Chrome JSON to `out` (see the module docs).
pub(crate) fn write(view: &SpoolView, names: &Names, out: &Path) -> Result<WriteStats, TraceError> {
    let (staged, file) = StagedFile::create(out)?;
    let w = JsonOut {
        w: BufWriter::with_capacity(1 << 20, file),
        first: true,
        events: 0,
        holders: Vec::new(),
    };
    write_as(view, names, staged, out, Box::new(w))
}

/// Lays the spool out and writes it through `w` to `staged`, then renames it onto
/// `out` (the path errors name).
pub(crate) fn write_as(
    view: &SpoolView,
    names: &Names,
    staged: StagedFile,
    out: &Path,
    mut w: Box<dyn Output>,
) -> Result<WriteStats, TraceError> {
    let names = names.snapshot();
    let mut stats = WriteStats::default();
    let mut spool = File::open(&view.path).map_err(|e| TraceError::io(&view.path, e))?;

    let plan = plan_flows(view, &mut spool, &mut stats)?;
    let mut by_pe: BTreeMap<u32, Vec<Chunk>> = BTreeMap::new();
    for c in &view.chunks {
        by_pe.entry(c.pe).or_default().push(*c);
    }
    let mut reader = TrackReader {
        spool,
        path: &view.path,
        plan: &plan,
        records: Vec::new(),
        bytes: Vec::new(),
    };
    let (min_recv, backwards) = place_receives(&by_pe, &mut reader, &mut stats)?;
    stats.skewed_flows += backwards.len() as u64;

    let io = |e| TraceError::io(out, e);
    w.metadata(view).map_err(io)?;
    for (&pe, chunks) in &by_pe {
        let mut scratch = WriteStats::default();
        let track = reader.track(pe, chunks, &min_recv, &mut scratch)?;
        stats.records += scratch.records;
        stats.stray_ends += scratch.stray_ends;
        stats.auto_closed += scratch.auto_closed;
        stats.clipped += scratch.clipped;
        stats.dropped_phases += scratch.dropped_phases;
        stats.send_slices += scratch.send_slices;
        stats.max_shift_ns = stats.max_shift_ns.max(scratch.max_shift_ns);
        let pid = view.tracks.get(&pe).copied().unwrap_or(chunks[0].pid);
        let t = TrackOut {
            pe,
            pid,
            names: &names,
            arg_keys: &view.arg_keys,
            backwards: &backwards,
        };
        w.track(&t, &track, &mut stats).map_err(io)?;
    }
    w.holders(&mut stats).map_err(io)?;
    stats.events = w.finish().map_err(io)?;
    stats.pes = view.tracks.len();
    stats.bytes = std::fs::metadata(staged.temp_path()).map_err(io)?.len();
    staged.commit()?;
    stats.bytes_per_event = if stats.events == 0 {
        0.0
    } else {
        stats.bytes as f64 / stats.events as f64
    };
    Ok(stats)
}

/// Reads one PE's records from the spool and lays them out.
struct TrackReader<'a> {
    spool: File,
    path: &'a Path,
    plan: &'a FlowPlan,
    records: Vec<Record>,
    bytes: Vec<u8>,
}

impl TrackReader<'_> {
    fn track(
        &mut self,
        pe: u32,
        chunks: &[Chunk],
        min_recv: &HashMap<u64, u64>,
        stats: &mut WriteStats,
    ) -> Result<TrackEvents, TraceError> {
        self.records.clear();
        for c in chunks {
            read_chunk(
                &mut self.spool,
                self.path,
                c,
                &mut self.records,
                &mut self.bytes,
            )?;
        }
        stats.records += self.records.len() as u64;
        let mut t = TrackEvents::pair(pe, &self.records, self.plan, self.path, stats)?;
        t.lay_out(min_recv, stats);
        Ok(t)
    }
}

/// Lays every track out until each receive's holder comes after its send's (a send
/// that moved later on its track may otherwise pass its receive): the lower bounds
/// that takes, by message id, and the messages still backwards after
/// [`MAX_LAYOUT_PASSES`] (their holders are drawn, their arrows are not).
fn place_receives(
    by_pe: &BTreeMap<u32, Vec<Chunk>>,
    reader: &mut TrackReader<'_>,
    stats: &mut WriteStats,
) -> Result<(HashMap<u64, u64>, HashSet<u64>), TraceError> {
    let mut min_recv: HashMap<u64, u64> = HashMap::new();
    let mut send_t: HashMap<u64, u64> = HashMap::new();
    let mut recv_t: HashMap<u64, u64> = HashMap::new();
    let mut dirty: BTreeSet<u32> = by_pe.keys().copied().collect();
    let recv_pe: HashMap<u64, u32> = reader
        .plan
        .recvs
        .iter()
        .map(|(&m, &(pe, _))| (m, pe))
        .collect();
    while !dirty.is_empty() && stats.layout_passes < MAX_LAYOUT_PASSES {
        stats.layout_passes += 1;
        for pe in std::mem::take(&mut dirty) {
            let mut scratch = WriteStats::default();
            let t = reader.track(pe, &by_pe[&pe], &min_recv, &mut scratch)?;
            for h in &t.holders {
                let times = if h.send { &mut send_t } else { &mut recv_t };
                times.insert(h.msg_id, h.t);
            }
        }
        for (&m, &s) in &send_t {
            let Some(&r) = recv_t.get(&m) else { continue };
            if r <= s && min_recv.get(&m).is_none_or(|&lo| lo <= s) {
                min_recv.insert(m, s + 1);
                if let Some(&pe) = recv_pe.get(&m) {
                    dirty.insert(pe);
                }
            }
        }
    }
    let backwards = send_t
        .iter()
        .filter(|&(m, &s)| recv_t.get(m).is_some_and(|&r| r <= s))
        .map(|(&m, _)| m)
        .collect();
    Ok((min_recv, backwards))
}

/// First pass over the whole spool: which sampled messages have both ends recorded.
fn plan_flows(
    view: &SpoolView,
    spool: &mut File,
    stats: &mut WriteStats,
) -> Result<FlowPlan, TraceError> {
    let mut sends: HashMap<u64, At> = HashMap::new();
    let mut recvs: HashMap<u64, At> = HashMap::new();
    let mut records = Vec::new();
    let mut bytes = Vec::new();
    for c in &view.chunks {
        records.clear();
        read_chunk(spool, &view.path, c, &mut records, &mut bytes)?;
        let events = records
            .iter()
            .filter_map(Record::events)
            .flat_map(|(e, then)| std::iter::once(e).chain(then));
        for e in events {
            let duplicate = match e {
                Event::Send { ts, msg_id, .. } => sends.insert(msg_id, (c.pe, ts)).is_some(),
                Event::EntryBegin {
                    ts,
                    msg_id: Some(m),
                    ..
                } if flow_kept(m, view.flow_every) => recvs.insert(m, (c.pe, ts)).is_some(),
                _ => false,
            };
            stats.duplicate_msg_ids += u64::from(duplicate);
        }
    }
    // Keep only pairs, and only those that go forward in time: Perfetto drops an `f`
    // that it reads before its `s`.
    let mut unmatched = 0u64;
    let mut skewed = 0u64;
    sends.retain(|m, s| match recvs.get(m) {
        Some(r) if r.1 >= s.1 => true,
        Some(_) => {
            skewed += 1;
            false
        }
        None => {
            unmatched += 1;
            false
        }
    });
    let sampled_recvs = recvs.len() as u64;
    recvs.retain(|m, _| sends.contains_key(m));
    // Receives whose send was not recorded; skewed pairs were already counted.
    unmatched += sampled_recvs - recvs.len() as u64 - skewed;
    stats.unmatched_flow_ends = unmatched;
    stats.skewed_flows = skewed;
    Ok(FlowPlan { sends, recvs })
}

impl Output for JsonOut {
    fn metadata(&mut self, view: &SpoolView) -> std::io::Result<()> {
        self.w.write_all(b"{\"traceEvents\":[\n")?;
        write_metadata(self, view)
    }

    fn track(
        &mut self,
        o: &TrackOut<'_>,
        t: &TrackEvents,
        stats: &mut WriteStats,
    ) -> std::io::Result<()> {
        emit_track(self, o, t, stats)
    }

    fn holders(&mut self, stats: &mut WriteStats) -> std::io::Result<()> {
        // DevTools reads flow events in file order and draws each arrow from the slice
        // written first, so every holder and flow event comes last, in time order: a
        // send's before its receive's, whichever PE comes first.
        let mut holders = std::mem::take(&mut self.holders);
        holders.sort_unstable_by_key(|h| (h.t, h.pid, h.pe));
        for h in &holders {
            let (name, ph) = if h.send { ("send", 's') } else { ("recv", 'f') };
            // The message id is the flow's id; the handling entry has it too.
            write_x(self, h.pid, h.pe, "msg", name, h.t, h.t + 1)?;
            self.w.write_all(b"}")?;
            stats.slices += 1;
            stats.flow_slices += 1;
            if h.flow {
                write_flow(self, h.pid, h.pe, ph, h.msg_id, h.t)?;
                stats.flows += u64::from(!h.send);
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> std::io::Result<u64> {
        self.w.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
        let file = self.w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(self.events)
    }
}

/// Buffered JSON event output with comma handling.
struct JsonOut {
    w: BufWriter<File>,
    first: bool,
    events: u64,
    /// Every track's holders, written after the last track.
    holders: Vec<HolderOut>,
}

impl JsonOut {
    /// Starts a new event: writes the separator and counts it.
    fn next(&mut self) -> std::io::Result<&mut BufWriter<File>> {
        if self.first {
            self.first = false;
        } else {
            self.w.write_all(b",\n")?;
        }
        self.events += 1;
        Ok(&mut self.w)
    }
}

/// Writes `ns` as microseconds with exactly three decimals (ns precision, no float rounding).
fn write_us(w: &mut impl Write, ns: u64) -> std::io::Result<()> {
    write!(w, "{}.{:03}", ns / 1000, ns % 1000)
}

/// Writes `s` as a JSON string literal.
fn write_str(w: &mut impl Write, s: &str) -> std::io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        w.write_all(&bytes[from..i])?;
        match esc {
            Some(e) => w.write_all(e)?,
            None => write!(w, "\\u{:04x}", b)?,
        }
        from = i + 1;
    }
    w.write_all(&bytes[from..])?;
    w.write_all(b"\"")
}

fn write_metadata(w: &mut JsonOut, view: &SpoolView) -> std::io::Result<()> {
    // Process metadata uses the process's first PE as tid, so no empty thread 0 appears.
    let mut first_pe: BTreeMap<u32, u32> = BTreeMap::new();
    for (&pe, &pid) in &view.tracks {
        first_pe.entry(pid).or_insert(pe);
    }
    for (&rank, &pe) in &first_pe {
        let (pid, tid) = (file_id(rank), file_id(pe));
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":"
        )?;
        write_str(o, &format!("{} {rank}", view.process_label))?;
        o.write_all(b"}}")?;
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{rank}}}}}"
        )?;
    }
    for (&pe, &rank) in &view.tracks {
        let (pid, tid) = (file_id(rank), file_id(pe));
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"PE {pe}\"}}}}"
        )?;
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{pe}}}}}"
        )?;
    }
    Ok(())
}

/// The name of `id`, or `name#id` (in `fallback`) for one the table lacks.
pub(crate) fn name_of<'a>(names: &'a [String], id: NameId, fallback: &'a mut String) -> &'a str {
    match names.get(id as usize) {
        Some(n) => n,
        None => {
            *fallback = format!("name#{id}");
            fallback
        }
    }
}

/// Writes one slice as an `X` event.
fn write_x(
    w: &mut JsonOut,
    pid: u32,
    pe: u32,
    cat: &str,
    name: &str,
    start: u64,
    end: u64,
) -> std::io::Result<()> {
    let o = w.next()?;
    write!(o, "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":")?;
    write_str(o, name)?;
    write!(
        o,
        ",\"pid\":{},\"tid\":{},\"ts\":",
        file_id(pid),
        file_id(pe)
    )?;
    write_us(o, start)?;
    o.write_all(b",\"dur\":")?;
    write_us(o, end - start)
}

/// Writes a flow start or end.
fn write_flow(
    w: &mut JsonOut,
    pid: u32,
    pe: u32,
    ph: char,
    msg_id: u64,
    ts: u64,
) -> std::io::Result<()> {
    let o = w.next()?;
    write!(
        o,
        "{{\"ph\":\"{ph}\",\"cat\":\"msg\",\"name\":\"msg\",\"id\":\"0x{msg_id:x}\",\"pid\":{},\"tid\":{},\"ts\":",
        file_id(pid),
        file_id(pe)
    )?;
    write_us(o, ts)?;
    if ph == 'f' {
        o.write_all(b",\"bp\":\"e\"")?;
    }
    o.write_all(b"}")
}

/// What an [`Output`] needs of a track besides its events.
pub(crate) struct TrackOut<'a> {
    pub pe: u32,
    pub pid: u32,
    pub names: &'a [String],
    pub arg_keys: &'a [&'static str],
    /// Messages whose arrow would point backwards: holders only, no flow events.
    pub backwards: &'a HashSet<u64>,
}

/// A holder slice and its flow event, written after every track.
pub(crate) struct HolderOut {
    pub t: u64,
    pub pid: u32,
    pub pe: u32,
    pub msg_id: u64,
    pub send: bool,
    /// Whether its flow event is written (not for arrows that would point back).
    pub flow: bool,
}

/// A track's events in writing order: by start, enclosing slices before the slices
/// inside them; as (start, class, Reverse(end), index) with class 0 for slices, 1 for
/// holders and 2 for instants.
pub(crate) fn track_order(t: &TrackEvents) -> Vec<(u64, u8, Reverse<u64>, usize)> {
    let mut order: Vec<(u64, u8, Reverse<u64>, usize)> =
        Vec::with_capacity(t.slices.len() + t.holders.len() + t.instants.len());
    order.extend(
        t.slices
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.dropped)
            .map(|(i, s)| (s.start, 0, Reverse(s.end), i)),
    );
    order.extend(
        t.holders
            .iter()
            .enumerate()
            .map(|(i, h)| (h.t, 1, Reverse(h.t + 1), i)),
    );
    order.extend(
        t.instants
            .iter()
            .enumerate()
            .map(|(i, p)| (p.t, 2, Reverse(0), i)),
    );
    order.sort_unstable();
    order
}

/// What both formats write of a slice: its category, its name and whether it has
/// arguments, which go to `args`.
pub(crate) fn slice_parts<'a>(
    s: &Slice,
    t: &TrackEvents,
    o: &TrackOut<'a>,
    fallback: &'a mut String,
    args: &mut Vec<(&'static str, u64)>,
) -> (&'static str, &'a str, bool) {
    match &s.kind {
        SliceKind::Entry {
            name,
            src_pe,
            bytes,
            msg_id,
        } => {
            args.push(("src_pe", u64::from(*src_pe)));
            args.push(("bytes", *bytes));
            args.extend(msg_id.map(|m| ("msg_id", m)));
            ("entry", name_of(o.names, *name, fallback), true)
        }
        SliceKind::Span { name } => ("user", name_of(o.names, *name, fallback), false),
        SliceKind::Idle => ("idle", "idle", false),
        SliceKind::Send => ("send", "send", false),
        SliceKind::Phase { name, args: range } => {
            for &(key, value) in &t.args[range.clone()] {
                args.push((
                    o.arg_keys.get(key as usize).copied().unwrap_or("arg"),
                    value,
                ));
            }
            ("phase", name_of(o.names, *name, fallback), true)
        }
    }
}

/// Writes one PE's slices and instants in timestamp order, enclosing slices before
/// the slices inside them, and keeps its holders for [`Output::holders`].
fn emit_track(
    w: &mut JsonOut,
    o: &TrackOut<'_>,
    t: &TrackEvents,
    stats: &mut WriteStats,
) -> std::io::Result<()> {
    let (pe, pid) = (o.pe, o.pid);
    let mut fallback = String::new();
    let mut args: Vec<(&str, u64)> = Vec::new();
    for (_, class, _, i) in track_order(t) {
        match class {
            0 => {
                let s = &t.slices[i];
                args.clear();
                let (cat, name, with_args) = slice_parts(s, t, o, &mut fallback, &mut args);
                write_x(w, pid, pe, cat, name, s.start, s.end)?;
                if with_args {
                    write_args(&mut w.w, &args)?;
                }
                w.w.write_all(b"}")?;
                stats.slices += 1;
            }
            1 => {
                let h = &t.holders[i];
                w.holders.push(HolderOut {
                    t: h.t,
                    pid,
                    pe,
                    msg_id: h.msg_id,
                    send: h.send,
                    flow: !o.backwards.contains(&h.msg_id),
                });
            }
            _ => {
                let p = &t.instants[i];
                let out = w.next()?;
                out.write_all(b"{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"user\",\"name\":")?;
                write_str(out, name_of(o.names, p.name, &mut fallback))?;
                write!(
                    out,
                    ",\"pid\":{},\"tid\":{},\"ts\":",
                    file_id(pid),
                    file_id(pe)
                )?;
                write_us(out, p.t)?;
                out.write_all(b"}")?;
                stats.instants += 1;
            }
        }
    }
    Ok(())
}

/// Writes an event's `args` object.
fn write_args(w: &mut impl Write, args: &[(&str, u64)]) -> std::io::Result<()> {
    w.write_all(b",\"args\":{")?;
    for (k, &(key, value)) in args.iter().enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        write_str(w, key)?;
        write!(w, ":{value}")?;
    }
    w.write_all(b"}")
}
