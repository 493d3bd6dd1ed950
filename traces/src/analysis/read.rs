//! Reads a Chrome Trace Event JSON file back into a typed model.
//!
//! Understands what [`crate::Collector::write_chrome`] writes and the common subset of
//! other Chrome traces: `X` slices, `B`/`E` pairs, `i`/`I` instants, `s`/`f` flows and
//! `M` name metadata; other phases are skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::analysis::events::{read_items, read_json};
use crate::analysis::model::{track_order, FlowMatcher, Item};
use crate::error::TraceError;

// Flow ends keep their first path (`read::FlowEnd`).
pub use crate::analysis::model::FlowEnd;

/// A whole trace: one track per (pid, tid) and the flows between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Trace {
    /// Tracks sorted by pid, then thread sort index, then tid.
    pub tracks: Vec<Track>,
    /// Flows whose start and end were both found.
    pub flows: Vec<Flow>,
    /// Flow starts or ends without their other half.
    pub dangling_flow_events: usize,
    /// The file's `displayTimeUnit`, if any.
    pub display_time_unit: Option<String>,
}

/// One thread track; for chorus traces, one PE (tid = PE number).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Track {
    /// Chrome process id (MPI rank or node group r is r + 1: `crate::ids`).
    pub pid: u32,
    /// Chrome thread id (PE n is n + 1).
    pub tid: u32,
    /// `process_name` metadata, if present.
    pub process_name: Option<String>,
    /// `thread_name` metadata, if present.
    pub thread_name: Option<String>,
    /// `thread_sort_index` metadata, if present.
    pub sort_index: Option<i64>,
    /// Slices in file order (chorus writes them by start time).
    pub slices: Vec<Slice>,
    /// Instant events in file order.
    pub instants: Vec<Instant>,
}

/// A slice (`X` event or `B`/`E` pair) on a track.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Slice {
    /// Slice name, e.g. the entry method.
    pub name: String,
    /// Category: `entry`, `user`, `phase`, `idle` or `send` in chorus traces.
    pub cat: String,
    /// Start in ns.
    pub ts_ns: u64,
    /// Duration in ns.
    pub dur_ns: u64,
    /// The event's `args` object.
    pub args: Map<String, Value>,
    /// Position of its event in the file's `traceEvents` (the `B` event for a pair).
    pub seq: usize,
}

impl Track {
    /// The PE this track shows, as the run numbers it.
    pub fn pe(&self) -> u32 {
        crate::ids::run_id(self.tid)
    }
}

impl Slice {
    /// End in ns.
    pub fn end_ns(&self) -> u64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }

    /// A numeric argument, if present and a non-negative integer.
    pub fn arg_u64(&self, key: &str) -> Option<u64> {
        self.args.get(key).and_then(Value::as_u64)
    }
}

/// An instant event on a track.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Instant {
    /// Event name.
    pub name: String,
    /// Category.
    pub cat: String,
    /// Time in ns.
    pub ts_ns: u64,
}

/// A flow arrow from an `s` event to an `f` event with the same category, name and id.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Flow {
    /// The id as written (chorus writes the message id as a hex string).
    pub id: String,
    /// Category (`msg` in chorus traces).
    pub cat: String,
    /// Where the arrow starts (the send).
    pub from: FlowEnd,
    /// Where the arrow ends (the receiving entry).
    pub to: FlowEnd,
}

impl Flow {
    /// The id as a number, when it is a hex string or a decimal number.
    pub fn id_u64(&self) -> Option<u64> {
        let s = self.id.strip_prefix("0x").unwrap_or(&self.id);
        u64::from_str_radix(s, 16).ok()
    }
}

impl Trace {
    /// The track of `(pid, tid)`.
    pub fn track(&self, pid: u32, tid: u32) -> Option<&Track> {
        self.tracks.iter().find(|t| t.pid == pid && t.tid == tid)
    }
}

/// Reads the trace at `path`, streaming it (the text is never held whole): Chrome
/// JSON, or a Perfetto protobuf trace as chorus writes them.
pub fn read_chrome(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
    let path = path.as_ref();
    let mut b = Builder::default();
    let source = read_items(path, |item| {
        b.push(item);
        Ok(())
    })?;
    Ok(b.finish(source.display_time_unit))
}

/// Parses Chrome JSON trace text; `path` only labels errors.
pub fn parse_chrome(text: &str, path: &Path) -> Result<Trace, TraceError> {
    let mut b = Builder::default();
    let unit = read_json(text.as_bytes(), path, |item| {
        b.push(item);
        Ok(())
    })?;
    Ok(b.finish(unit))
}

/// Flows are matched by category, name and id, as the viewers do.
type FlowKey = (String, String, String);

/// Collects [`Item`]s into a [`Trace`].
#[derive(Default)]
struct Builder {
    tracks: BTreeMap<(u32, u32), Track>,
    process_names: HashMap<u32, String>,
    flows: FlowMatcher<FlowKey>,
    matched: Vec<(FlowKey, FlowEnd, FlowEnd)>,
}

impl Builder {
    fn push(&mut self, item: Item<Map<String, Value>>) {
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
            } => get_track(&mut self.tracks, pid, tid).slices.push(Slice {
                name,
                cat,
                ts_ns,
                dur_ns,
                args,
                seq,
            }),
            Item::Instant {
                pid,
                tid,
                name,
                cat,
                ts_ns,
            } => get_track(&mut self.tracks, pid, tid)
                .instants
                .push(Instant { name, cat, ts_ns }),
            Item::Flow {
                start,
                at,
                cat,
                name,
                id,
            } => self
                .matched
                .extend(self.flows.add(start, (cat, name, id), at)),
            Item::ProcessName { pid, name } => {
                self.process_names.insert(pid, name);
            }
            Item::ThreadName { pid, tid, name } => {
                get_track(&mut self.tracks, pid, tid).thread_name = name
            }
            Item::SortIndex { pid, tid, index } => {
                get_track(&mut self.tracks, pid, tid).sort_index = index
            }
        }
    }

    fn finish(mut self, display_time_unit: Option<String>) -> Trace {
        self.matched.sort_by(|a, b| a.0.cmp(&b.0));
        let flows = self
            .matched
            .into_iter()
            .map(|((cat, _name, id), from, to)| Flow { id, cat, from, to })
            .collect();
        let mut tracks: Vec<Track> = self.tracks.into_values().collect();
        for t in &mut tracks {
            t.process_name = self.process_names.get(&t.pid).cloned();
        }
        tracks.sort_by_key(|t| track_order(t.pid, t.sort_index, t.tid));
        Trace {
            tracks,
            flows,
            dangling_flow_events: self.flows.dangling(),
            display_time_unit,
        }
    }
}

fn get_track(tracks: &mut BTreeMap<(u32, u32), Track>, pid: u32, tid: u32) -> &mut Track {
    tracks.entry((pid, tid)).or_insert_with(|| Track {
        pid,
        tid,
        ..Track::default()
    })
}
