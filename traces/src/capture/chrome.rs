//! Writes the spooled records as one Chrome Trace Event JSON file.
//!
//! Shape of the output (opens in ui.perfetto.dev and chrome://tracing):
//! - one process per pid (`"rank N"` / `"node group N"`), one thread per PE (`"PE n"`,
//!   tid = PE number), sorted by pid and PE;
//! - entries, user spans, phases and idle periods are `X` slices with categories
//!   `entry`, `user`, `phase` and `idle` (idle is a grey-able slice named `idle` on the
//!   PE's own track, so busy and idle read off one row);
//! - user events are thread-scoped `i` instants;
//! - a kept message is an `s` flow event at the send and an `f` (`"bp":"e"`) right
//!   after the receiving entry's slice, both with cat `msg`, name `msg` and the message
//!   id as a hex string. Perfetto binds an `s` to the newest slice it has opened on
//!   the track, so when that slice is not the one enclosing the send (the send is
//!   outside any slice, or a nested span closed before it) a tiny slice named `send`
//!   (cat `send`, 1 ns or up to the enclosing slice's end) is emitted to hold it.
//!
//! Per track, events are written in timestamp order and slices nest properly: unpaired
//! ends are ignored, slices left open are closed at the PE's last timestamp, and a
//! phase that partially overlaps another slice is shortened. Flows are written only
//! when both the send and the receive were recorded, and never backwards in time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use crate::capture::spool::{read_chunk, Chunk, SpoolView};
use crate::error::TraceError;
use crate::names::{NameId, Names};
use crate::record::{flow_kept, Event, Record};

/// What writing a Chrome trace produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WriteStats {
    /// PE tracks written.
    pub pes: usize,
    /// Spooled records read.
    pub records: u64,
    /// JSON events written (metadata included).
    pub events: u64,
    /// `X` slices written (entries, spans, phases, idle, send holders).
    pub slices: u64,
    /// Instant events written.
    pub instants: u64,
    /// Flow arrows written (each is one `s` and one `f` event).
    pub flows: u64,
    /// Tiny `send` slices added to hold flow starts.
    pub send_slices: u64,
    /// Size of the file.
    pub bytes: u64,
    /// `bytes / events`.
    pub bytes_per_event: f64,
    /// Sampled sends or receives whose other end was not recorded.
    pub unmatched_flow_ends: u64,
    /// Flows dropped because the receive was timestamped before the send (clock skew).
    pub skewed_flows: u64,
    /// Sends or sampled receives that reused an already seen message id (only the first is drawn).
    pub duplicate_msg_ids: u64,
    /// `*_end` records with nothing open to close.
    pub stray_ends: u64,
    /// Slices closed implicitly (an outer end, or the end of the PE's records).
    pub auto_closed: u64,
    /// Slices shortened so that the track nests properly.
    pub clipped: u64,
}

/// Which PE and time a flow end was recorded at, to pick the one record that draws it.
type At = (u32, u64);

#[derive(Clone, Copy)]
enum OpenKind {
    Entry,
    Span,
    Idle,
}

#[derive(Clone)]
enum SliceKind {
    Entry {
        name: NameId,
        src_pe: u32,
        bytes: u64,
        msg_id: Option<u64>,
        flow_in: bool,
    },
    Span {
        name: NameId,
    },
    Idle,
    /// Arguments are `args[range]` of the track's argument list.
    Phase {
        name: NameId,
        args: std::ops::Range<usize>,
    },
}

struct Slice {
    start: u64,
    end: u64,
    /// Phases may be shortened to keep nesting; begin/end pairs are what happened.
    flexible: bool,
    kind: SliceKind,
}

enum Point {
    User { ts: u64, name: NameId },
    FlowOut { ts: u64, msg_id: u64 },
}

impl Point {
    fn ts(&self) -> u64 {
        match self {
            Point::User { ts, .. } | Point::FlowOut { ts, .. } => *ts,
        }
    }
}

/// One PE's slices and points after pairing begin/end records.
struct TrackEvents {
    slices: Vec<Slice>,
    points: Vec<Point>,
    args: Vec<(u32, u64)>,
}

/// The flows to draw: for each kept message id, where its send and receive were.
struct FlowPlan {
    sends: HashMap<u64, At>,
    recvs: HashMap<u64, At>,
}

/// Writes `view`'s spool as Chrome JSON to `out` (see the module docs).
pub(crate) fn write(view: &SpoolView, names: &Names, out: &Path) -> Result<WriteStats, TraceError> {
    let names = names.snapshot();
    let mut stats = WriteStats::default();
    let mut spool = File::open(&view.path).map_err(|e| TraceError::io(&view.path, e))?;

    let plan = plan_flows(view, &mut spool, &mut stats)?;

    let file = File::create(out).map_err(|e| TraceError::io(out, e))?;
    let mut w = JsonOut {
        w: BufWriter::with_capacity(1 << 20, file),
        first: true,
        events: 0,
    };
    let io = |e| TraceError::io(out, e);
    w.w.write_all(b"{\"traceEvents\":[\n").map_err(io)?;
    write_metadata(&mut w, view).map_err(io)?;

    let mut by_pe: BTreeMap<u32, Vec<Chunk>> = BTreeMap::new();
    for c in &view.chunks {
        by_pe.entry(c.pe).or_default().push(*c);
    }
    let mut records = Vec::new();
    let mut bytes = Vec::new();
    for (&pe, chunks) in &by_pe {
        records.clear();
        for c in chunks {
            read_chunk(&mut spool, &view.path, c, &mut records, &mut bytes)?;
        }
        stats.records += records.len() as u64;
        let pid = view.tracks.get(&pe).copied().unwrap_or(chunks[0].pid);
        let mut track = pair_records(pe, &records, &plan, &view.path, &mut stats)?;
        nest(&mut track.slices, &mut stats);
        emit_track(&mut w, pe, pid, &track, &names, &view.arg_keys, &mut stats).map_err(io)?;
    }

    w.w.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")
        .map_err(io)?;
    let file = w.w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().ok();
    stats.pes = view.tracks.len();
    stats.events = w.events;
    stats.bytes = std::fs::metadata(out).map_err(io)?.len();
    stats.bytes_per_event = if stats.events == 0 {
        0.0
    } else {
        stats.bytes as f64 / stats.events as f64
    };
    Ok(stats)
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
        for r in &records {
            let duplicate = match r.event() {
                Some(Event::Send { ts, msg_id, .. }) => sends.insert(msg_id, (c.pe, ts)).is_some(),
                Some(Event::EntryBegin {
                    ts,
                    msg_id: Some(m),
                    ..
                }) if flow_kept(m, view.flow_every) => recvs.insert(m, (c.pe, ts)).is_some(),
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

/// Pairs begin/end records of one PE into slices (see the module docs for the rules).
fn pair_records(
    pe: u32,
    records: &[Record],
    plan: &FlowPlan,
    path: &Path,
    stats: &mut WriteStats,
) -> Result<TrackEvents, TraceError> {
    let mut t = TrackEvents {
        slices: Vec::new(),
        points: Vec::new(),
        args: Vec::new(),
    };
    let mut open: Vec<(OpenKind, usize)> = Vec::new();
    let mut last = 0u64;
    let mut phase_args_left = 0u32;
    for r in records {
        let e = r.event().ok_or_else(|| TraceError::Format {
            path: path.to_path_buf(),
            message: format!("PE {pe}: unknown record kind in spool"),
        })?;
        if !matches!(e, Event::PhaseArg { .. }) {
            phase_args_left = 0;
        }
        // Clamp so a clock that steps back on one PE cannot break ordering.
        let mut clamp = |ts: u64| {
            last = last.max(ts);
            last
        };
        match e {
            Event::EntryBegin {
                ts,
                name,
                src_pe,
                bytes,
                msg_id,
            } => {
                // The plan keys records by their recorded time, before clamping.
                let flow_in = msg_id.is_some_and(|m| plan.recvs.get(&m) == Some(&(pe, ts)));
                let ts = clamp(ts);
                open.push((OpenKind::Entry, t.slices.len()));
                t.slices.push(Slice {
                    start: ts,
                    end: ts,
                    flexible: false,
                    kind: SliceKind::Entry {
                        name,
                        src_pe,
                        bytes,
                        msg_id,
                        flow_in,
                    },
                });
            }
            Event::SpanBegin { ts, name } => {
                let ts = clamp(ts);
                open.push((OpenKind::Span, t.slices.len()));
                t.slices.push(Slice {
                    start: ts,
                    end: ts,
                    flexible: false,
                    kind: SliceKind::Span { name },
                });
            }
            Event::IdleBegin { ts } => {
                let ts = clamp(ts);
                open.push((OpenKind::Idle, t.slices.len()));
                t.slices.push(Slice {
                    start: ts,
                    end: ts,
                    flexible: false,
                    kind: SliceKind::Idle,
                });
            }
            Event::EntryEnd { ts } => {
                close(&mut open, &mut t.slices, OpenKind::Entry, clamp(ts), stats)
            }
            Event::SpanEnd { ts } => {
                close(&mut open, &mut t.slices, OpenKind::Span, clamp(ts), stats)
            }
            Event::IdleEnd { ts } => {
                close(&mut open, &mut t.slices, OpenKind::Idle, clamp(ts), stats)
            }
            Event::Send { ts, msg_id, .. } => {
                let drawn = plan.sends.get(&msg_id) == Some(&(pe, ts));
                let ts = clamp(ts);
                if drawn {
                    t.points.push(Point::FlowOut { ts, msg_id });
                }
            }
            Event::User { ts, name } => {
                let ts = clamp(ts);
                t.points.push(Point::User { ts, name });
            }
            Event::Phase {
                ts,
                dur,
                name,
                nargs,
            } => {
                // A phase is reported after the fact, so its start is not clamped.
                let n = t.args.len();
                t.slices.push(Slice {
                    start: ts,
                    end: ts.saturating_add(dur),
                    flexible: true,
                    kind: SliceKind::Phase { name, args: n..n },
                });
                phase_args_left = nargs;
            }
            Event::PhaseArg { key, value } => {
                if phase_args_left > 0 {
                    phase_args_left -= 1;
                    t.args.push((key, value));
                    let end = t.args.len();
                    if let Some(Slice {
                        kind: SliceKind::Phase { args, .. },
                        ..
                    }) = t.slices.last_mut()
                    {
                        args.end = end;
                    }
                }
            }
        }
    }
    for (_, i) in open.drain(..).rev() {
        t.slices[i].end = last;
        stats.auto_closed += 1;
    }
    Ok(t)
}

/// Closes the innermost open slice of `kind` at `ts`, and anything opened inside it.
fn close(
    open: &mut Vec<(OpenKind, usize)>,
    slices: &mut [Slice],
    kind: OpenKind,
    ts: u64,
    stats: &mut WriteStats,
) {
    let Some(pos) = open
        .iter()
        .rposition(|(k, _)| std::mem::discriminant(k) == std::mem::discriminant(&kind))
    else {
        stats.stray_ends += 1;
        return;
    };
    for &(_, i) in &open[pos + 1..] {
        slices[i].end = ts;
        stats.auto_closed += 1;
    }
    slices[open[pos].1].end = ts;
    open.truncate(pos);
}

/// Makes the slices nest: when two partially overlap, the flexible one (a phase) is
/// shortened; begin/end slices already nest because they were paired on one stack.
fn nest(slices: &mut [Slice], stats: &mut WriteStats) {
    if !slices.iter().any(|s| s.flexible) {
        return;
    }
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&i| {
        let s = &slices[i];
        (s.start, Reverse(s.end), s.flexible, i)
    });
    let mut stack: Vec<usize> = Vec::new();
    for q in order {
        while let Some(&top) = stack.last() {
            if slices[top].end <= slices[q].start {
                stack.pop();
                continue;
            }
            if slices[q].end <= slices[top].end {
                break;
            }
            // Partial overlap: top started first and ends inside q.
            stats.clipped += 1;
            if slices[top].flexible && !slices[q].flexible {
                // Shorten the enclosing phase to stop where q starts; its own children
                // all ended by then, since top is the innermost open slice.
                slices[top].end = slices[q].start;
                stack.pop();
            } else {
                slices[q].end = slices[top].end;
                break;
            }
        }
        stack.push(q);
    }
}

/// Buffered JSON event output with comma handling.
struct JsonOut {
    w: BufWriter<File>,
    first: bool,
    events: u64,
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
    for (&pid, &pe) in &first_pe {
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":{pe},\"args\":{{\"name\":"
        )?;
        write_str(o, &format!("{} {pid}", view.process_label))?;
        o.write_all(b"}}")?;
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":{pe},\"args\":{{\"sort_index\":{pid}}}}}"
        )?;
    }
    for (&pe, &pid) in &view.tracks {
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{pe},\"args\":{{\"name\":\"PE {pe}\"}}}}"
        )?;
        let o = w.next()?;
        write!(
            o,
            "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{pe},\"args\":{{\"sort_index\":{pe}}}}}"
        )?;
    }
    Ok(())
}

fn name_of<'a>(names: &'a [String], id: NameId, fallback: &'a mut String) -> &'a str {
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
    write!(o, ",\"pid\":{pid},\"tid\":{pe},\"ts\":")?;
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
        "{{\"ph\":\"{ph}\",\"cat\":\"msg\",\"name\":\"msg\",\"id\":\"0x{msg_id:x}\",\"pid\":{pid},\"tid\":{pe},\"ts\":"
    )?;
    write_us(o, ts)?;
    if ph == 'f' {
        o.write_all(b",\"bp\":\"e\"")?;
    }
    o.write_all(b"}")
}

/// Writes one PE's slices, instants and flow ends in timestamp order.
fn emit_track(
    w: &mut JsonOut,
    pe: u32,
    pid: u32,
    t: &TrackEvents,
    names: &[String],
    arg_keys: &[&'static str],
    stats: &mut WriteStats,
) -> std::io::Result<()> {
    // Slices before points at the same time, outer slices before inner ones.
    let mut order: Vec<(u64, u8, Reverse<u64>, usize)> =
        Vec::with_capacity(t.slices.len() + t.points.len());
    order.extend(
        t.slices
            .iter()
            .enumerate()
            .map(|(i, s)| (s.start, 0, Reverse(s.end), i)),
    );
    order.extend(
        t.points
            .iter()
            .enumerate()
            .map(|(i, p)| (p.ts(), 1, Reverse(0), i)),
    );
    order.sort_unstable();

    let mut fallback = String::new();
    // Ends of the slices open at the current time, outermost first.
    let mut open: Vec<u64> = Vec::new();
    // Whether the newest slice-like event on the track is a slice that is still open,
    // i.e. whether Perfetto would bind a flow start to the enclosing slice.
    let mut newest_open = false;
    let mut newest_end = 0u64;
    for (ts, class, _, i) in order {
        while open.last().is_some_and(|&end| end < ts) {
            open.pop();
        }
        if class == 0 {
            let s = &t.slices[i];
            match &s.kind {
                SliceKind::Entry {
                    name,
                    src_pe,
                    bytes,
                    msg_id,
                    flow_in,
                } => {
                    write_x(
                        w,
                        pid,
                        pe,
                        "entry",
                        name_of(names, *name, &mut fallback),
                        s.start,
                        s.end,
                    )?;
                    write!(w.w, ",\"args\":{{\"src_pe\":{src_pe},\"bytes\":{bytes}")?;
                    if let Some(m) = msg_id {
                        write!(w.w, ",\"msg_id\":{m}")?;
                    }
                    w.w.write_all(b"}}")?;
                    if *flow_in {
                        let m = msg_id.unwrap_or_default();
                        write_flow(w, pid, pe, 'f', m, s.start)?;
                        stats.flows += 1;
                    }
                }
                SliceKind::Span { name } => {
                    write_x(
                        w,
                        pid,
                        pe,
                        "user",
                        name_of(names, *name, &mut fallback),
                        s.start,
                        s.end,
                    )?;
                    w.w.write_all(b"}")?;
                }
                SliceKind::Idle => {
                    write_x(w, pid, pe, "idle", "idle", s.start, s.end)?;
                    w.w.write_all(b"}")?;
                }
                SliceKind::Phase { name, args } => {
                    write_x(
                        w,
                        pid,
                        pe,
                        "phase",
                        name_of(names, *name, &mut fallback),
                        s.start,
                        s.end,
                    )?;
                    w.w.write_all(b",\"args\":{")?;
                    for (k, &(key, value)) in t.args[args.clone()].iter().enumerate() {
                        if k > 0 {
                            w.w.write_all(b",")?;
                        }
                        let key = arg_keys.get(key as usize).copied().unwrap_or("arg");
                        write_str(&mut w.w, key)?;
                        write!(w.w, ":{value}")?;
                    }
                    w.w.write_all(b"}}")?;
                }
            }
            stats.slices += 1;
            open.push(s.end);
            newest_open = true;
            newest_end = s.end;
            continue;
        }
        match &t.points[i] {
            Point::User { ts, name } => {
                let o = w.next()?;
                o.write_all(b"{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"user\",\"name\":")?;
                write_str(o, name_of(names, *name, &mut fallback))?;
                write!(o, ",\"pid\":{pid},\"tid\":{pe},\"ts\":")?;
                write_us(o, *ts)?;
                o.write_all(b"}")?;
                stats.instants += 1;
                // Perfetto turns a thread instant into a zero-length slice, which a
                // following flow start would bind to.
                newest_open = false;
            }
            Point::FlowOut { ts, msg_id } => {
                let ts = *ts;
                if open.is_empty() || !newest_open || newest_end < ts {
                    let end = open.last().map_or(ts + 1, |&e| e.min(ts + 1));
                    write_x(w, pid, pe, "send", "send", ts, end)?;
                    w.w.write_all(b"}")?;
                    stats.slices += 1;
                    stats.send_slices += 1;
                    open.push(end);
                    newest_open = true;
                    newest_end = end;
                }
                write_flow(w, pid, pe, 's', *msg_id, ts)?;
            }
        }
    }
    Ok(())
}
