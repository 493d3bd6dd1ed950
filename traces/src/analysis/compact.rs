//! A trace kept in little memory, for the analyses of big files.
//!
//! Names and categories are interned to `u32` ids; each track's slices are packed
//! into one byte log of varints (time deltas from the previous slice, ids, and only
//! the arguments the analyses read), about a dozen bytes a slice against a hundred in
//! the JSON; flows are small fixed-size structs. [`CompactTrace::read`] fills it while
//! streaming the file; the analyses decode one track at a time.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use crate::analysis::events::read_items;
use crate::analysis::model::{
    bad, track_order, Args, FlowEnd, FlowMatcher, Format, Item, KnownArgs, LbPeLoad, LbStep, Source,
};
use crate::analysis::read::Trace;
use crate::error::TraceError;
use crate::wire::{get_varint, put_varint, unzigzag, zigzag};

/// Interned strings: each distinct name or category once, by `u32` id.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Strings {
    /// The id of `s`, interning it on first sight.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.to_owned());
        self.ids.insert(s.to_owned(), id);
        id
    }

    /// The id of `s`, if interned.
    pub fn id(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// The string of `id` (empty for an unknown id).
    pub fn get(&self, id: u32) -> &str {
        self.list.get(id as usize).map_or("", String::as_str)
    }
}

/// A slice decoded from a packed track: times in ns, interned name and category.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Start.
    pub ts_ns: u64,
    /// Duration.
    pub dur_ns: u64,
    /// Name id in [`CompactTrace::strings`].
    pub name: u32,
    /// Category id in [`CompactTrace::strings`].
    pub cat: u32,
    /// Position of its event in the file.
    pub seq: u64,
    /// The `bytes` argument.
    pub bytes: Option<u64>,
    /// The `src_pe` argument.
    pub src_pe: Option<u64>,
    /// The `msg_id` argument.
    pub msg_id: Option<u64>,
}

impl Span {
    /// End in ns.
    pub fn end_ns(&self) -> u64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }

    /// The span of a slice with arguments `args`, its strings interned into `strings`.
    pub fn of<A: Args>(
        strings: &mut Strings,
        name: &str,
        cat: &str,
        ts_ns: u64,
        dur_ns: u64,
        args: &A,
        seq: usize,
    ) -> Span {
        Span {
            ts_ns,
            dur_ns,
            name: strings.intern(name),
            cat: strings.intern(cat),
            seq: seq as u64,
            bytes: args.u64_arg("bytes"),
            src_pe: args.u64_arg("src_pe"),
            msg_id: args.u64_arg("msg_id"),
        }
    }
}

/// A flow id: a hex string as chorus writes it (`0x1f`), or any other text, interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowId {
    /// `0x` and lower-case hex digits without leading zeros.
    Hex(u64),
    /// Anything else, by id in [`CompactTrace::strings`].
    Text(u32),
}

impl FlowId {
    /// The id of the text `id`, interning it unless it is chorus's hex form.
    pub fn of(strings: &mut Strings, id: &str) -> FlowId {
        if let Some(digits) = id.strip_prefix("0x") {
            if let Ok(v) = u64::from_str_radix(digits, 16) {
                if Hex(v).to_string() == id {
                    return FlowId::Hex(v);
                }
            }
        }
        FlowId::Text(strings.intern(id))
    }

    /// The id as written.
    pub fn text<'a>(&self, strings: &'a Strings) -> std::borrow::Cow<'a, str> {
        match *self {
            FlowId::Hex(v) => Hex(v).to_string().into(),
            FlowId::Text(t) => strings.get(t).into(),
        }
    }

    /// Compares the ids as text, without formatting chorus's hex ids.
    pub fn cmp_text(&self, other: &FlowId, strings: &Strings) -> std::cmp::Ordering {
        match (*self, *other) {
            (FlowId::Hex(a), FlowId::Hex(b)) => {
                let digits = |v: u64| (64 - v.leading_zeros()).div_ceil(4).max(1);
                let (na, nb) = (digits(a), digits(b));
                // ASCII orders '0'..'9' before 'a'..'f', as the digits' values.
                let nibble = |v: u64, n: u32, i: u32| (v >> (4 * (n - 1 - i))) & 0xf;
                (0..na.min(nb))
                    .map(|i| nibble(a, na, i).cmp(&nibble(b, nb, i)))
                    .find(|o| o.is_ne())
                    .unwrap_or(na.cmp(&nb))
            }
            _ => self.text(strings).cmp(&other.text(strings)),
        }
    }

    /// The id as a number, when it is hex text (as [`crate::Flow::id_u64`]).
    pub fn as_u64(&self, strings: &Strings) -> Option<u64> {
        match *self {
            FlowId::Hex(v) => Some(v),
            FlowId::Text(t) => {
                let s = strings.get(t);
                u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
            }
        }
    }
}

/// Formats as `0x` and lower-case hex.
struct Hex(u64);

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A flow arrow between two tracks, in 48 bytes: its ends' tracks are indexes into
/// [`CompactTrace::flow_tracks`] (see [`CompactTrace::flow_end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactFlow {
    id: u64,
    /// Category id.
    pub cat: u32,
    /// The name id, with [`ID_TEXT`] set when `id` is a [`FlowId::Text`].
    name: u32,
    ts: [u64; 2],
    seq: [u32; 2],
    track: [u32; 2],
}

impl CompactFlow {
    /// Name id.
    pub fn name(&self) -> u32 {
        self.name & !ID_TEXT
    }

    /// Start (side 0) or end (side 1) time in ns.
    pub fn ts(&self, side: usize) -> u64 {
        self.ts[side]
    }

    /// Index in [`CompactTrace::flow_tracks`] of one end's track: 0 start, 1 end.
    pub fn track(&self, side: usize) -> usize {
        self.track[side] as usize
    }

    /// The flow's id.
    pub fn id(&self) -> FlowId {
        if self.name & ID_TEXT != 0 {
            FlowId::Text(self.id as u32)
        } else {
            FlowId::Hex(self.id)
        }
    }
}

/// The bit of [`CompactFlow`]'s name that marks a text id; names never reach it, as
/// two billion distinct strings would not fit in memory first.
const ID_TEXT: u32 = 1 << 31;

/// Pushes onto `v`, growing it by a quarter rather than doubling it: the big vectors
/// of a compact trace then waste at most a fifth of their memory.
fn push_frugal<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 4).max(16));
    }
    v.push(x);
}

/// Makes room for `n` more bytes in a packed log, growing it by a quarter.
fn reserve_frugal(v: &mut Vec<u8>, n: usize) {
    if v.capacity() - v.len() < n {
        v.reserve_exact((v.len() / 4).max(n).max(64));
    }
}

/// Most bytes a packed slice takes: a flag and eight varints of at most 10 bytes.
const MAX_PACKED_SLICE: usize = 81;

/// One thread track with its slices packed.
#[derive(Clone, Debug, Default)]
pub struct CompactTrack {
    /// Chrome process id.
    pub pid: u32,
    /// Chrome thread id (PE n is tid n + 1: `crate::ids`).
    pub tid: u32,
    /// `process_name` metadata, if present.
    pub process_name: Option<String>,
    /// `thread_name` metadata, if present.
    pub thread_name: Option<String>,
    /// `thread_sort_index` metadata, if present.
    pub sort_index: Option<i64>,
    slices: Vec<u8>,
    slice_count: usize,
    last: (u64, u64),
    instants: Vec<u8>,
    instant_count: usize,
    last_instant: u64,
}

/// Which optional arguments a packed slice carries.
const HAS_BYTES: u64 = 1;
const HAS_SRC_PE: u64 = 2;
const HAS_MSG_ID: u64 = 4;

impl CompactTrack {
    fn new(pid: u32, tid: u32) -> Self {
        CompactTrack {
            pid,
            tid,
            ..CompactTrack::default()
        }
    }

    /// Appends a slice to the packed log.
    pub fn push(&mut self, s: &Span) {
        let b = &mut self.slices;
        reserve_frugal(b, MAX_PACKED_SLICE);
        let flags = u64::from(s.bytes.is_some()) * HAS_BYTES
            + u64::from(s.src_pe.is_some()) * HAS_SRC_PE
            + u64::from(s.msg_id.is_some()) * HAS_MSG_ID;
        put_varint(b, flags);
        put_varint(b, zigzag(s.ts_ns.wrapping_sub(self.last.0) as i64));
        put_varint(b, s.dur_ns);
        put_varint(b, u64::from(s.name));
        put_varint(b, u64::from(s.cat));
        put_varint(b, zigzag(s.seq.wrapping_sub(self.last.1) as i64));
        for v in [s.bytes, s.src_pe, s.msg_id].into_iter().flatten() {
            put_varint(b, v);
        }
        self.last = (s.ts_ns, s.seq);
        self.slice_count += 1;
    }

    /// Appends an instant's time.
    pub fn push_instant(&mut self, ts_ns: u64) {
        let d = ts_ns.wrapping_sub(self.last_instant) as i64;
        reserve_frugal(&mut self.instants, 10);
        put_varint(&mut self.instants, zigzag(d));
        self.last_instant = ts_ns;
        self.instant_count += 1;
    }

    /// Slices in file order.
    pub fn spans(&self) -> impl Iterator<Item = Span> + '_ {
        let mut pos = 0;
        let mut last = (0u64, 0u64);
        std::iter::from_fn(move || {
            let b = &self.slices;
            let mut next = || get_varint(b, &mut pos);
            let flags = next()?;
            let ts_ns = last.0.wrapping_add(unzigzag(next()?) as u64);
            let dur_ns = next()?;
            let name = next()? as u32;
            let cat = next()? as u32;
            let seq = last.1.wrapping_add(unzigzag(next()?) as u64);
            let mut opt = |bit| if flags & bit != 0 { next() } else { None };
            let bytes = opt(HAS_BYTES);
            let src_pe = opt(HAS_SRC_PE);
            let msg_id = opt(HAS_MSG_ID);
            last = (ts_ns, seq);
            Some(Span {
                ts_ns,
                dur_ns,
                name,
                cat,
                seq,
                bytes,
                src_pe,
                msg_id,
            })
        })
    }

    /// Number of slices.
    pub fn slice_count(&self) -> usize {
        self.slice_count
    }

    /// Instant times in file order.
    pub fn instant_times(&self) -> impl Iterator<Item = u64> + '_ {
        let mut pos = 0;
        let mut last = 0u64;
        std::iter::from_fn(move || {
            last = last.wrapping_add(unzigzag(get_varint(&self.instants, &mut pos)?) as u64);
            Some(last)
        })
    }

    /// Number of instants.
    pub fn instant_count(&self) -> usize {
        self.instant_count
    }

    /// Bytes held by the packed logs.
    pub fn packed_bytes(&self) -> usize {
        self.slices.capacity() + self.instants.capacity()
    }
}

/// A whole trace in compact form (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct CompactTrace {
    /// Names and categories.
    pub strings: Strings,
    /// Tracks sorted by pid, then thread sort index, then tid.
    pub tracks: Vec<CompactTrack>,
    /// Flows whose start and end were both found, by category, name and id.
    pub flows: Vec<CompactFlow>,
    /// The (pid, tid) of flow ends, by the index a [`CompactFlow`] holds.
    pub flow_tracks: Vec<(u32, u32)>,
    /// Flow starts or ends without their other half.
    pub dangling_flow_events: usize,
    /// The file's `displayTimeUnit`, if any.
    pub display_time_unit: Option<String>,
    /// The file's format (Chrome JSON for a trace converted from memory).
    pub format: Format,
    /// The chare-array balancing steps, in file order (one per step of the run, so
    /// as many as the run had, a handful per phase of the program).
    pub lb_steps: Vec<LbStep>,
    /// Each traced PE's load in each balancing step, in file order (one per traced
    /// PE and step: a slice of the PE's track holds each).
    pub lb_pe_loads: Vec<LbPeLoad>,
}

impl CompactTrace {
    /// Reads the trace at `path` (Chrome JSON or Perfetto protobuf), streaming it.
    pub fn read(path: impl AsRef<Path>) -> Result<CompactTrace, TraceError> {
        let path = path.as_ref();
        let mut b = CompactBuilder::default();
        let source = for_each_item(path, |item| b.push(item, path))?;
        let mut c = b.finish(true);
        (c.format, c.display_time_unit) = (source.format, source.display_time_unit);
        Ok(c)
    }

    /// The compact form of a trace already in memory.
    pub fn from_trace(trace: &Trace) -> CompactTrace {
        let mut b = CompactBuilder::default();
        for t in &trace.tracks {
            if let Some(name) = &t.process_name {
                b.process_names.insert(t.pid, name.clone());
            }
            let i = b.track(t.pid, t.tid);
            b.tracks[i].thread_name = t.thread_name.clone();
            b.tracks[i].sort_index = t.sort_index;
            for s in &t.slices {
                let span = Span::of(
                    &mut b.strings,
                    &s.name,
                    &s.cat,
                    s.ts_ns,
                    s.dur_ns,
                    &s.args,
                    s.seq,
                );
                b.tracks[i].push(&span);
                b.lb_steps
                    .extend(LbStep::of(&s.name, s.ts_ns, s.dur_ns, &s.args));
                b.lb_pe_loads
                    .extend(LbPeLoad::of(&s.name, t.pe(), s.ts_ns, &s.args));
            }
            for inst in &t.instants {
                b.tracks[i].push_instant(inst.ts_ns);
            }
        }
        for f in &trace.flows {
            let cat = b.strings.intern(&f.cat);
            let id = FlowId::of(&mut b.strings, &f.id);
            b.add_flow((cat, 0, id), f.from, f.to);
        }
        let mut c = b.finish(false);
        c.dangling_flow_events = trace.dangling_flow_events;
        c.display_time_unit = trace.display_time_unit.clone();
        c
    }

    /// The track of `(pid, tid)`.
    pub fn track(&self, pid: u32, tid: u32) -> Option<&CompactTrack> {
        self.tracks.iter().find(|t| t.pid == pid && t.tid == tid)
    }

    /// One end of `flow`: 0 its start, 1 its end.
    pub fn flow_end(&self, flow: &CompactFlow, side: usize) -> FlowEnd {
        let (pid, tid) = self.flow_tracks[flow.track[side] as usize];
        FlowEnd {
            pid,
            tid,
            ts_ns: flow.ts[side],
            seq: flow.seq[side] as usize,
        }
    }

    /// Bytes held by the packed slice logs and the flows.
    pub fn packed_bytes(&self) -> usize {
        self.tracks
            .iter()
            .map(CompactTrack::packed_bytes)
            .sum::<usize>()
            + self.flows.capacity() * std::mem::size_of::<CompactFlow>()
    }
}

/// Streams the trace file at `path` (Chrome JSON or Perfetto protobuf) as [`Item`]s
/// with the arguments the analyses read.
pub fn for_each_item(
    path: &Path,
    each: impl FnMut(Item<KnownArgs>) -> Result<(), TraceError>,
) -> Result<Source, TraceError> {
    read_items(path, each)
}

/// Flows are matched by category, name and id, as the viewers do.
type FlowKey = (u32, u32, FlowId);

/// Collects [`Item`]s into a [`CompactTrace`].
#[derive(Default)]
struct CompactBuilder {
    strings: Strings,
    tracks: Vec<CompactTrack>,
    index: HashMap<(u32, u32), usize>,
    process_names: HashMap<u32, String>,
    matcher: FlowMatcher<FlowKey>,
    flows: Vec<CompactFlow>,
    flow_track_index: HashMap<(u32, u32), u32>,
    flow_tracks: Vec<(u32, u32)>,
    lb_steps: Vec<LbStep>,
    lb_pe_loads: Vec<LbPeLoad>,
}

impl CompactBuilder {
    fn track(&mut self, pid: u32, tid: u32) -> usize {
        let tracks = &mut self.tracks;
        *self.index.entry((pid, tid)).or_insert_with(|| {
            tracks.push(CompactTrack::new(pid, tid));
            tracks.len() - 1
        })
    }

    fn flow_track(&mut self, at: &FlowEnd) -> u32 {
        let tracks = &mut self.flow_tracks;
        *self
            .flow_track_index
            .entry((at.pid, at.tid))
            .or_insert_with(|| {
                tracks.push((at.pid, at.tid));
                (tracks.len() - 1) as u32
            })
    }

    fn add_flow(&mut self, (cat, name, id): FlowKey, from: FlowEnd, to: FlowEnd) {
        let (id, id_text) = match id {
            FlowId::Hex(v) => (v, false),
            FlowId::Text(t) => (u64::from(t), true),
        };
        let track = [self.flow_track(&from), self.flow_track(&to)];
        let seq = [from.seq, to.seq].map(|s| u32::try_from(s).unwrap_or(u32::MAX));
        push_frugal(
            &mut self.flows,
            CompactFlow {
                id,
                cat,
                name: name | if id_text { ID_TEXT } else { 0 },
                ts: [from.ts_ns, to.ts_ns],
                seq,
                track,
            },
        );
    }

    fn push(&mut self, item: Item<KnownArgs>, path: &Path) -> Result<(), TraceError> {
        match item {
            Item::Slice {
                pid,
                tid,
                name,
                cat,
                ts_ns,
                dur_ns,
                args,
                seq,
            } => {
                let span = Span::of(&mut self.strings, &name, &cat, ts_ns, dur_ns, &args, seq);
                let i = self.track(pid, tid);
                self.tracks[i].push(&span);
                self.lb_steps
                    .extend(LbStep::of(&name, ts_ns, dur_ns, &args));
                let pe = crate::ids::run_id(tid);
                self.lb_pe_loads
                    .extend(LbPeLoad::of(&name, pe, ts_ns, &args));
            }
            Item::Instant {
                pid, tid, ts_ns, ..
            } => {
                let i = self.track(pid, tid);
                self.tracks[i].push_instant(ts_ns);
            }
            Item::Flow {
                start,
                at,
                cat,
                name,
                id,
            } => {
                if u32::try_from(at.seq).is_err() {
                    return Err(bad(path, "more than 2^32 events".to_owned()));
                }
                let key = (
                    self.strings.intern(&cat),
                    self.strings.intern(&name),
                    FlowId::of(&mut self.strings, &id),
                );
                if let Some((key, from, to)) = self.matcher.add(start, key, at) {
                    self.add_flow(key, from, to);
                }
            }
            Item::ProcessName { pid, name } => {
                self.process_names.insert(pid, name);
            }
            Item::ThreadName { pid, tid, name } => {
                let i = self.track(pid, tid);
                self.tracks[i].thread_name = name;
            }
            Item::SortIndex { pid, tid, index } => {
                let i = self.track(pid, tid);
                self.tracks[i].sort_index = index;
            }
        }
        Ok(())
    }

    /// The trace; `sort` puts flows in the in-memory reader's order (by category, name
    /// and id as text), which [`CompactTrace::from_trace`] gets from the trace.
    fn finish(mut self, sort: bool) -> CompactTrace {
        let strings = self.strings;
        if sort {
            self.flows.sort_by(|a, b| {
                (strings.get(a.cat), strings.get(a.name()))
                    .cmp(&(strings.get(b.cat), strings.get(b.name())))
                    .then_with(|| a.id().cmp_text(&b.id(), &strings))
            });
        }
        let mut tracks = self.tracks;
        for t in &mut tracks {
            t.process_name = self.process_names.get(&t.pid).cloned();
            t.slices.shrink_to_fit();
            t.instants.shrink_to_fit();
        }
        tracks.sort_by_key(|t| track_order(t.pid, t.sort_index, t.tid));
        CompactTrace {
            strings,
            tracks,
            flows: self.flows,
            flow_tracks: self.flow_tracks,
            dangling_flow_events: self.matcher.dangling(),
            display_time_unit: None,
            format: Format::ChromeJson,
            lb_steps: self.lb_steps,
            lb_pe_loads: self.lb_pe_loads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_round_trip_through_the_packed_log() {
        let mut t = CompactTrack::new(0, 3);
        let spans = [
            Span {
                ts_ns: 1_000_000,
                dur_ns: 500,
                name: 2,
                cat: 1,
                seq: 10,
                bytes: Some(64),
                src_pe: Some(0),
                msg_id: Some(u64::MAX),
            },
            // Earlier than the one before it, as holders written after the track are.
            Span {
                ts_ns: 3,
                dur_ns: u64::MAX,
                name: 0,
                cat: 0,
                seq: 2,
                ..Span::default()
            },
        ];
        for s in &spans {
            t.push(s);
        }
        t.push_instant(7);
        t.push_instant(5);
        assert_eq!(t.spans().collect::<Vec<_>>(), spans);
        assert_eq!(t.instant_times().collect::<Vec<_>>(), [7, 5]);
        assert_eq!((t.slice_count(), t.instant_count()), (2, 2));
    }

    #[test]
    fn flow_ids_keep_their_text() {
        let mut s = Strings::default();
        for text in ["0x1f", "0x0", "0x01", "0X1", "42", "msg-7"] {
            let id = FlowId::of(&mut s, text);
            assert_eq!(id.text(&s), text);
        }
        assert_eq!(FlowId::of(&mut s, "0x1f"), FlowId::Hex(31));
        assert_eq!(FlowId::of(&mut s, "42").as_u64(&s), Some(0x42));
        let ids = [0u64, 1, 9, 0xa, 0xf, 0x10, 0x1f, 0x100, 0xabc, u64::MAX];
        for a in ids {
            for b in ids {
                let (x, y) = (FlowId::Hex(a), FlowId::Hex(b));
                let by_text = x.text(&s).cmp(&y.text(&s));
                assert_eq!(x.cmp_text(&y, &s), by_text, "{a:#x} {b:#x}");
            }
        }
    }
}
