//! Reads a Chrome Trace Event JSON file back into a typed model.
//!
//! Understands what [`crate::Collector::write_chrome`] writes and the common subset of
//! other Chrome traces: `X` slices, `B`/`E` pairs, `i`/`I` instants, `s`/`f` flows and
//! `M` name metadata; other phases are skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::TraceError;

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
    /// Chrome process id (MPI rank or node group).
    pub pid: u32,
    /// Chrome thread id (the PE).
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

impl Slice {
    /// End in ns.
    pub fn end_ns(&self) -> u64 {
        self.ts_ns + self.dur_ns
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

/// One end of a flow arrow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowEnd {
    /// Process of the track.
    pub pid: u32,
    /// Thread of the track.
    pub tid: u32,
    /// Time in ns.
    pub ts_ns: u64,
    /// Position of the flow event in the file's `traceEvents`.
    pub seq: usize,
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

#[derive(Deserialize)]
#[serde(untagged)]
enum RawFile {
    Object {
        #[serde(rename = "traceEvents")]
        trace_events: Vec<RawEvent>,
        #[serde(rename = "displayTimeUnit", default)]
        display_time_unit: Option<String>,
    },
    Array(Vec<RawEvent>),
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    cat: Option<String>,
    ph: String,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    args: Option<Map<String, Value>>,
}

/// Microseconds (float) to ns, rounded: the writer prints exactly three decimals.
fn us_to_ns(us: f64) -> u64 {
    if us.is_finite() && us > 0.0 {
        (us * 1000.0).round() as u64
    } else {
        0
    }
}

fn id_value(v: &Option<Value>, what: &str, path: &Path) -> Result<u32, TraceError> {
    match v {
        None => Ok(0),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad(path, format!("{what} {n} is not a 32-bit unsigned number"))),
        Some(other) => Err(bad(path, format!("{what} {other} is not a number"))),
    }
}

fn bad(path: &Path, message: String) -> TraceError {
    TraceError::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// Reads and parses the Chrome JSON trace at `path`.
pub fn read_chrome(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
    parse_chrome(&text, path)
}

/// Parses Chrome JSON trace text; `path` only labels errors.
pub fn parse_chrome(text: &str, path: &Path) -> Result<Trace, TraceError> {
    let raw: RawFile = serde_json::from_str(text).map_err(|source| TraceError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let (events, display_time_unit) = match raw {
        RawFile::Object {
            trace_events,
            display_time_unit,
        } => (trace_events, display_time_unit),
        RawFile::Array(v) => (v, None),
    };

    let mut tracks: BTreeMap<(u32, u32), Track> = BTreeMap::new();
    let mut process_names: HashMap<u32, String> = HashMap::new();
    // Open `B` slices per track, and unmatched flow halves by (cat, name, id).
    let mut open_b: HashMap<(u32, u32), Vec<Slice>> = HashMap::new();
    let mut flow_starts: BTreeMap<(String, String, String), FlowEnd> = BTreeMap::new();
    let mut flow_ends: BTreeMap<(String, String, String), FlowEnd> = BTreeMap::new();
    let mut dangling = 0usize;

    for (seq, e) in events.into_iter().enumerate() {
        let pid = id_value(&e.pid, "pid", path)?;
        let tid = id_value(&e.tid, "tid", path)?;
        let ts_ns = e.ts.map_or(0, us_to_ns);
        let name = e.name.clone().unwrap_or_default();
        let cat = e.cat.clone().unwrap_or_default();
        match e.ph.as_str() {
            "X" => {
                let dur_ns = e.dur.map_or(0, us_to_ns);
                get_track(&mut tracks, pid, tid).slices.push(Slice {
                    name,
                    cat,
                    ts_ns,
                    dur_ns,
                    args: e.args.unwrap_or_default(),
                    seq,
                });
            }
            "B" => open_b.entry((pid, tid)).or_default().push(Slice {
                name,
                cat,
                ts_ns,
                dur_ns: 0,
                args: e.args.unwrap_or_default(),
                seq,
            }),
            "E" => {
                if let Some(mut s) = open_b.get_mut(&(pid, tid)).and_then(Vec::pop) {
                    s.dur_ns = ts_ns.saturating_sub(s.ts_ns);
                    get_track(&mut tracks, pid, tid).slices.push(s);
                }
            }
            "i" | "I" => {
                get_track(&mut tracks, pid, tid)
                    .instants
                    .push(Instant { name, cat, ts_ns })
            }
            "s" | "f" => {
                let id = match &e.id {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => return Err(bad(path, format!("flow event '{}' without an id", e.ph))),
                };
                let end = FlowEnd {
                    pid,
                    tid,
                    ts_ns,
                    seq,
                };
                // Tracks are written one after another, so an `f` may come first.
                let side = if e.ph == "s" {
                    &mut flow_starts
                } else {
                    &mut flow_ends
                };
                if side.insert((cat, name, id), end).is_some() {
                    dangling += 1;
                }
            }
            "M" => {
                let arg_str = |k: &str| {
                    e.args
                        .as_ref()
                        .and_then(|a| a.get(k))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                match name.as_str() {
                    "process_name" => {
                        if let Some(n) = arg_str("name") {
                            process_names.insert(pid, n);
                        }
                    }
                    "thread_name" => get_track(&mut tracks, pid, tid).thread_name = arg_str("name"),
                    "thread_sort_index" => {
                        get_track(&mut tracks, pid, tid).sort_index = e
                            .args
                            .as_ref()
                            .and_then(|a| a.get("sort_index"))
                            .and_then(Value::as_i64)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let mut flows = Vec::with_capacity(flow_starts.len());
    for ((cat, _name, id), from) in flow_starts {
        match flow_ends.remove(&(cat.clone(), _name, id.clone())) {
            Some(to) => flows.push(Flow { id, cat, from, to }),
            None => dangling += 1,
        }
    }
    dangling += flow_ends.len();

    let mut tracks: Vec<Track> = tracks.into_values().collect();
    for t in &mut tracks {
        t.process_name = process_names.get(&t.pid).cloned();
    }
    tracks.sort_by_key(|t| (t.pid, t.sort_index.unwrap_or(i64::from(t.tid)), t.tid));
    Ok(Trace {
        tracks,
        flows,
        dangling_flow_events: dangling,
        display_time_unit,
    })
}

fn get_track(tracks: &mut BTreeMap<(u32, u32), Track>, pid: u32, tid: u32) -> &mut Track {
    tracks.entry((pid, tid)).or_insert_with(|| Track {
        pid,
        tid,
        ..Track::default()
    })
}
