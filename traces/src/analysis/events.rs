//! Streams a Chrome Trace Event JSON file one event at a time.
//!
//! The file is never held whole: [`read_json`] drives serde_json over a reader and
//! hands each `traceEvents` element, once parsed into a small [`Item`], to a callback
//! before the next is read. `B`/`E` pairs are joined here (only open `B`s are kept);
//! flows are left to the consumer, which matches halves by id with [`FlowMatcher`].

use std::fmt;
use std::io::{BufRead, Read};
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::analysis::model::{bad, OpenSlices};
use crate::analysis::protobuf::read_perfetto;
use crate::error::TraceError;

// The shared vocabulary keeps its first paths (`events::Item`, ...).
pub use crate::analysis::model::{Args, FlowEnd, FlowMatcher, Format, Item, KnownArgs, Source};

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

/// Microseconds (float) to ns, rounded: chorus prints exactly three decimals. A time
/// that is negative, not finite or past 2^64 ns (about 584 years) is refused, naming
/// the field: clamping it gave figures that looked right and were not.
fn us_to_ns(us: f64, what: &str, path: &Path) -> Result<u64, TraceError> {
    let ns = (us * 1000.0).round();
    if us.is_finite() && ns >= 0.0 && ns < u64::MAX as f64 {
        Ok(ns as u64)
    } else {
        // Huge values in the exponent form they were most likely written in.
        let shown = if us.abs() < 1e15 {
            us.to_string()
        } else {
            format!("{us:e}")
        };
        Err(bad(
            path,
            format!("{what} {shown} us is outside 0 to 2^64 ns; not a time a trace can hold"),
        ))
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

/// Turns raw events into [`Item`]s: resolves ids, units and `B`/`E` pairs.
struct Assembler<'p, A> {
    path: &'p Path,
    seq: usize,
    open_b: OpenSlices<(u32, u32), A>,
}

impl<A: Args> Assembler<'_, A> {
    fn push(&mut self, e: RawEvent<A>) -> Result<Option<Item<A>>, TraceError> {
        let seq = self.seq;
        self.seq += 1;
        let pid = id_value(&e.pid, "pid", self.path)?;
        let tid = id_value(&e.tid, "tid", self.path)?;
        let ts_ns = e.ts.map_or(Ok(0), |us| us_to_ns(us, "ts", self.path))?;
        let name = e.name.unwrap_or_default();
        let cat = e.cat.unwrap_or_default();
        let item = match e.ph.as_str() {
            "X" => Item::Slice {
                pid,
                tid,
                name,
                cat,
                ts_ns,
                dur_ns: e.dur.map_or(Ok(0), |us| us_to_ns(us, "dur", self.path))?,
                args: e.args.unwrap_or_default(),
                seq,
            },
            "B" => {
                let args = e.args.unwrap_or_default();
                self.open_b.begin((pid, tid), name, cat, ts_ns, args, seq);
                return Ok(None);
            }
            "E" => {
                let slice = self.open_b.end(&(pid, tid), pid, tid, ts_ns, self.path)?;
                return Ok(Some(slice));
            }
            "i" | "I" => Item::Instant {
                pid,
                tid,
                name,
                cat,
                ts_ns,
            },
            "s" | "f" => {
                let at = FlowEnd {
                    pid,
                    tid,
                    ts_ns,
                    seq,
                };
                self.flow(&e.ph, e.id, at, cat, name)?
            }
            "M" => return Ok(metadata(&name, pid, tid, &e.args.unwrap_or_default())),
            _ => return Ok(None),
        };
        Ok(Some(item))
    }

    /// A flow half (`ph` is `s` or `f`), which must have an id.
    fn flow(
        &self,
        ph: &str,
        id: Option<Value>,
        at: FlowEnd,
        cat: String,
        name: String,
    ) -> Result<Item<A>, TraceError> {
        let id = match id {
            Some(Value::String(s)) => s,
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad(self.path, format!("flow event '{ph}' without an id"))),
        };
        Ok(Item::Flow {
            start: ph == "s",
            at,
            cat,
            name,
            id,
        })
    }
}

/// The item of an `M` (metadata) event named `name`, if it is one the analyses read.
fn metadata<A: Args>(name: &str, pid: u32, tid: u32, args: &A) -> Option<Item<A>> {
    Some(match name {
        "process_name" => Item::ProcessName {
            pid,
            name: args.str_arg("name")?.to_owned(),
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
        _ => return None,
    })
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
            open_b: OpenSlices::default(),
        },
        each,
        failure: None,
        display_time_unit: None,
        saw_events: false,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed =
        de::Deserializer::deserialize_any(&mut de, FileSeed(&mut driver)).and_then(|()| de.end());
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
    driver.asm.open_b.finish(path)?;
    Ok(driver.display_time_unit)
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
