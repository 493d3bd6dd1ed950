//! Streams a Chrome Trace Event JSON file one event at a time.
//!
//! The file is never held whole: [`read_json`] drives serde_json over a reader and
//! hands each `traceEvents` element, once parsed into a small [`Item`], to a callback
//! before the next is read. `B`/`E` pairs are joined here (only open `B`s are kept);
//! flows are left to the consumer, which matches halves by id with [`FlowMatcher`].

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Read};
use std::path::Path;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::analysis::protobuf::read_perfetto;
use crate::analysis::read::FlowEnd;
use crate::error::TraceError;

/// The event arguments a consumer keeps: all of them, or only those the analyses read.
pub trait Args: DeserializeOwned + Default {
    /// A non-negative integer argument.
    fn u64_arg(&self, key: &str) -> Option<u64>;
    /// A signed integer argument.
    fn i64_arg(&self, key: &str) -> Option<i64>;
    /// A string argument.
    fn str_arg(&self, key: &str) -> Option<&str>;
    /// Sets an argument (one read from a Perfetto debug annotation).
    fn set(&mut self, key: &str, value: Value);
}

impl Args for Map<String, Value> {
    fn u64_arg(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }
    fn i64_arg(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }
    fn str_arg(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
    fn set(&mut self, key: &str, value: Value) {
        self.insert(key.to_owned(), value);
    }
}

/// The only arguments the analyses read; any others are skipped while parsing.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct KnownArgs {
    bytes: Option<Value>,
    src_pe: Option<Value>,
    msg_id: Option<Value>,
    name: Option<Value>,
    sort_index: Option<Value>,
}

impl KnownArgs {
    fn get(&self, key: &str) -> Option<&Value> {
        match key {
            "bytes" => self.bytes.as_ref(),
            "src_pe" => self.src_pe.as_ref(),
            "msg_id" => self.msg_id.as_ref(),
            "name" => self.name.as_ref(),
            "sort_index" => self.sort_index.as_ref(),
            _ => None,
        }
    }
}

impl Args for KnownArgs {
    fn u64_arg(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }
    fn i64_arg(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }
    fn str_arg(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
    fn set(&mut self, key: &str, value: Value) {
        let slot = match key {
            "bytes" => &mut self.bytes,
            "src_pe" => &mut self.src_pe,
            "msg_id" => &mut self.msg_id,
            "name" => &mut self.name,
            "sort_index" => &mut self.sort_index,
            _ => return,
        };
        *slot = Some(value);
    }
}

/// One event as the readers hand it on, times in ns.
#[derive(Clone, Debug, PartialEq)]
pub enum Item<A> {
    /// A slice (`X`, or a `B`/`E` pair at its `E`).
    Slice {
        /// Track process.
        pid: u32,
        /// Track thread.
        tid: u32,
        /// Slice name.
        name: String,
        /// Category.
        cat: String,
        /// Start.
        ts_ns: u64,
        /// Duration.
        dur_ns: u64,
        /// Arguments.
        args: A,
        /// Position of its (first) event in the file.
        seq: usize,
    },
    /// An instant event.
    Instant {
        /// Track process.
        pid: u32,
        /// Track thread.
        tid: u32,
        /// Event name.
        name: String,
        /// Category.
        cat: String,
        /// Time.
        ts_ns: u64,
    },
    /// One half of a flow arrow.
    Flow {
        /// True for the start (`s`), false for the end (`f`).
        start: bool,
        /// Where it is.
        at: FlowEnd,
        /// Category.
        cat: String,
        /// Name.
        name: String,
        /// The id as written.
        id: String,
    },
    /// A `process_name` record.
    ProcessName {
        /// The process.
        pid: u32,
        /// Its name.
        name: String,
    },
    /// A `thread_name` record (names the track and makes sure it exists).
    ThreadName {
        /// Track process.
        pid: u32,
        /// Track thread.
        tid: u32,
        /// The name, if it was a string.
        name: Option<String>,
    },
    /// A `thread_sort_index` record (makes sure the track exists).
    SortIndex {
        /// Track process.
        pid: u32,
        /// Track thread.
        tid: u32,
        /// The index, if it was an integer.
        index: Option<i64>,
    },
}

#[derive(Deserialize)]
struct RawEvent<A> {
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
    #[serde(default = "Option::default")]
    args: Option<A>,
}

/// Microseconds (float) to ns, rounded: chorus prints exactly three decimals.
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

/// A [`TraceError::Format`] about `path`.
pub(crate) fn bad(path: &Path, message: String) -> TraceError {
    TraceError::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// An open `B` slice waiting for its `E`.
type Open<A> = (String, String, u64, A, usize);

/// Turns raw events into [`Item`]s: resolves ids, units and `B`/`E` pairs.
struct Assembler<'p, A> {
    path: &'p Path,
    seq: usize,
    open_b: HashMap<(u32, u32), Vec<Open<A>>>,
}

impl<A: Args> Assembler<'_, A> {
    fn push(&mut self, e: RawEvent<A>) -> Result<Option<Item<A>>, TraceError> {
        let seq = self.seq;
        self.seq += 1;
        let pid = id_value(&e.pid, "pid", self.path)?;
        let tid = id_value(&e.tid, "tid", self.path)?;
        let ts_ns = e.ts.map_or(0, us_to_ns);
        let name = e.name.unwrap_or_default();
        let cat = e.cat.unwrap_or_default();
        let item = match e.ph.as_str() {
            "X" => Item::Slice {
                pid,
                tid,
                name,
                cat,
                ts_ns,
                dur_ns: e.dur.map_or(0, us_to_ns),
                args: e.args.unwrap_or_default(),
                seq,
            },
            "B" => {
                let open = (name, cat, ts_ns, e.args.unwrap_or_default(), seq);
                self.open_b.entry((pid, tid)).or_default().push(open);
                return Ok(None);
            }
            "E" => {
                let Some((name, cat, start, args, seq)) =
                    self.open_b.get_mut(&(pid, tid)).and_then(Vec::pop)
                else {
                    return Ok(None);
                };
                Item::Slice {
                    pid,
                    tid,
                    name,
                    cat,
                    ts_ns: start,
                    dur_ns: ts_ns.saturating_sub(start),
                    args,
                    seq,
                }
            }
            "i" | "I" => Item::Instant {
                pid,
                tid,
                name,
                cat,
                ts_ns,
            },
            "s" | "f" => {
                let id = match e.id {
                    Some(Value::String(s)) => s,
                    Some(Value::Number(n)) => n.to_string(),
                    _ => {
                        return Err(bad(
                            self.path,
                            format!("flow event '{}' without an id", e.ph),
                        ))
                    }
                };
                Item::Flow {
                    start: e.ph == "s",
                    at: FlowEnd {
                        pid,
                        tid,
                        ts_ns,
                        seq,
                    },
                    cat,
                    name,
                    id,
                }
            }
            "M" => {
                let args = e.args.unwrap_or_default();
                match name.as_str() {
                    "process_name" => match args.str_arg("name") {
                        Some(n) => Item::ProcessName {
                            pid,
                            name: n.to_owned(),
                        },
                        None => return Ok(None),
                    },
                    "thread_name" => Item::ThreadName {
                        pid,
                        tid,
                        name: args.str_arg("name").map(str::to_owned),
                    },
                    "thread_sort_index" => Item::SortIndex {
                        pid,
                        tid,
                        index: args.i64_arg("sort_index"),
                    },
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(item))
    }
}

/// Carries the assembler, the callback and the first non-JSON error through serde.
struct Driver<'p, A, F> {
    asm: Assembler<'p, A>,
    each: F,
    failure: Option<TraceError>,
    display_time_unit: Option<String>,
    saw_events: bool,
}

impl<A: Args, F: FnMut(Item<A>) -> Result<(), TraceError>> Driver<'_, A, F> {
    fn event<E: de::Error>(&mut self, raw: RawEvent<A>) -> Result<(), E> {
        let r = match self.asm.push(raw) {
            Ok(Some(item)) => (self.each)(item),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        r.map_err(|e| {
            self.failure = Some(e);
            E::custom("stopped")
        })
    }
}

/// The whole file: an object with `traceEvents`, or a bare array of events.
struct FileSeed<'d, 'p, A, F>(&'d mut Driver<'p, A, F>);
/// The `traceEvents` array.
struct EventsSeed<'d, 'p, A, F>(&'d mut Driver<'p, A, F>);

impl<'de, A: Args, F: FnMut(Item<A>) -> Result<(), TraceError>> Visitor<'de>
    for EventsSeed<'_, '_, A, F>
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        self.0.saw_events = true;
        while let Some(raw) = seq.next_element::<RawEvent<A>>()? {
            self.0.event(raw)?;
        }
        Ok(())
    }
}

impl<'de, A: Args, F: FnMut(Item<A>) -> Result<(), TraceError>> DeserializeSeed<'de>
    for EventsSeed<'_, '_, A, F>
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, A: Args, F: FnMut(Item<A>) -> Result<(), TraceError>> Visitor<'de>
    for FileSeed<'_, '_, A, F>
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace object with traceEvents, or an array of events")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<(), S::Error> {
        EventsSeed(self.0).visit_seq(seq)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => map.next_value_seed(EventsSeed(&mut *self.0))?,
                "displayTimeUnit" => self.0.display_time_unit = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de, A: Args, F: FnMut(Item<A>) -> Result<(), TraceError>> DeserializeSeed<'de>
    for FileSeed<'_, '_, A, F>
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads Chrome JSON from `reader`, calling `each` with every [`Item`] in file order;
/// returns the file's `displayTimeUnit`. `path` only labels errors.
pub fn read_json<A: Args>(
    reader: impl Read,
    path: &Path,
    each: impl FnMut(Item<A>) -> Result<(), TraceError>,
) -> Result<Option<String>, TraceError> {
    let mut driver = Driver {
        asm: Assembler {
            path,
            seq: 0,
            open_b: HashMap::new(),
        },
        each,
        failure: None,
        display_time_unit: None,
        saw_events: false,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = FileSeed(&mut driver)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Some(e) = driver.failure.take() {
        return Err(e);
    }
    parsed.map_err(|source| TraceError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    if !driver.saw_events {
        return Err(bad(path, "no traceEvents array".to_owned()));
    }
    Ok(driver.display_time_unit)
}

/// The two file formats chorus writes and reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Chrome Trace Event JSON.
    #[default]
    ChromeJson,
    /// Perfetto protobuf (TracePackets).
    Perfetto,
}

/// What a file says about itself besides its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// Its format.
    pub format: Format,
    /// The JSON's `displayTimeUnit`, if any.
    pub display_time_unit: Option<String>,
}

/// Streams the trace file at `path`, Chrome JSON or Perfetto protobuf (told apart by
/// their first bytes), calling `each` with every [`Item`] in file order.
pub fn read_items<A: Args>(
    path: &Path,
    each: impl FnMut(Item<A>) -> Result<(), TraceError>,
) -> Result<Source, TraceError> {
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(|e| TraceError::io(path, e))?;
    // A trace's first packet is field 1, length-delimited: byte 0x0a, which only a
    // JSON text starting with a line break shares.
    if head.first() == Some(&0x0a) && is_protobuf(head) {
        read_perfetto(reader, path, each)?;
        return Ok(Source {
            format: Format::Perfetto,
            display_time_unit: None,
        });
    }
    Ok(Source {
        format: Format::ChromeJson,
        display_time_unit: read_json(reader, path, each)?,
    })
}

/// Whether `head` starts with a well-formed length-delimited field 1, as a Perfetto
/// trace does; a JSON text starting with a line break does not.
fn is_protobuf(head: &[u8]) -> bool {
    let mut pos = 1;
    let Some(len) = crate::wire::get_varint(head, &mut pos) else {
        return false;
    };
    match usize::try_from(len)
        .ok()
        .and_then(|n| head.get(pos..pos.checked_add(n)?))
    {
        Some(packet) => crate::wire::Fields::new(packet).all(|f| f.is_ok()),
        // Longer than the read-ahead: no JSON text has that many blank lines.
        None => true,
    }
}

/// Pairs flow starts and ends by key as they stream past; only unpaired halves are kept.
pub struct FlowMatcher<K> {
    starts: HashMap<K, FlowEnd>,
    ends: HashMap<K, FlowEnd>,
    /// Halves replaced by a later one with the same key.
    dangling: usize,
}

impl<K: std::hash::Hash + Eq> Default for FlowMatcher<K> {
    fn default() -> Self {
        FlowMatcher {
            starts: HashMap::new(),
            ends: HashMap::new(),
            dangling: 0,
        }
    }
}

impl<K: std::hash::Hash + Eq> FlowMatcher<K> {
    /// Adds one half; returns the whole flow (start, end) once both halves are in.
    pub fn add(&mut self, start: bool, key: K, at: FlowEnd) -> Option<(K, FlowEnd, FlowEnd)> {
        // Tracks are written one after another, so an `f` may come before its `s`.
        let (mine, other) = if start {
            (&mut self.starts, &mut self.ends)
        } else {
            (&mut self.ends, &mut self.starts)
        };
        if let Some((key, partner)) = other.remove_entry(&key) {
            return Some(if start {
                (key, at, partner)
            } else {
                (key, partner, at)
            });
        }
        if mine.insert(key, at).is_some() {
            self.dangling += 1;
        }
        None
    }

    /// Flow events without a partner, once every event is in.
    pub fn dangling(&self) -> usize {
        self.dangling + self.starts.len() + self.ends.len()
    }
}
