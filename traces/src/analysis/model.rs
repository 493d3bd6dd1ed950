//! The vocabulary the readers and the analyses share: the [`Item`]s both file
//! readers hand on, flow ends and how their halves are matched, event arguments, the
//! categories chorus writes, and what a file says about itself.

use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::TraceError;

/// Category of entry-method slices.
pub const CAT_ENTRY: &str = "entry";
/// Category of idle slices.
pub const CAT_IDLE: &str = "idle";

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

/// The typed readers of [`Args`], for a type whose `get(key)` gives the value.
macro_rules! typed_readers {
    () => {
        fn u64_arg(&self, key: &str) -> Option<u64> {
            self.get(key).and_then(Value::as_u64)
        }
        fn i64_arg(&self, key: &str) -> Option<i64> {
            self.get(key).and_then(Value::as_i64)
        }
        fn str_arg(&self, key: &str) -> Option<&str> {
            self.get(key).and_then(Value::as_str)
        }
    };
}

impl Args for Map<String, Value> {
    typed_readers!();
    fn set(&mut self, key: &str, value: Value) {
        self.insert(key.to_owned(), value);
    }
}

/// The only arguments the analyses read; any others are skipped while parsing. A key
/// written twice keeps its last value, as a full argument map does.
#[derive(Clone, Debug, Default)]
pub struct KnownArgs {
    bytes: Option<Value>,
    src_pe: Option<Value>,
    msg_id: Option<Value>,
    name: Option<Value>,
    sort_index: Option<Value>,
    lb: [Option<Value>; LB_ARGS.len()],
}

impl KnownArgs {
    fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        match key {
            "bytes" => Some(&mut self.bytes),
            "src_pe" => Some(&mut self.src_pe),
            "msg_id" => Some(&mut self.msg_id),
            "name" => Some(&mut self.name),
            "sort_index" => Some(&mut self.sort_index),
            _ => LB_ARGS
                .iter()
                .position(|&k| k == key)
                .map(|i| &mut self.lb[i]),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        match key {
            "bytes" => self.bytes.as_ref(),
            "src_pe" => self.src_pe.as_ref(),
            "msg_id" => self.msg_id.as_ref(),
            "name" => self.name.as_ref(),
            "sort_index" => self.sort_index.as_ref(),
            _ => LB_ARGS
                .iter()
                .position(|&k| k == key)
                .and_then(|i| self.lb[i].as_ref()),
        }
    }
}

impl<'de> Deserialize<'de> for KnownArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = KnownArgs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of event arguments")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<KnownArgs, M::Error> {
                let mut args = KnownArgs::default();
                while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    match args.slot(&key) {
                        Some(slot) => *slot = Some(m.next_value()?),
                        None => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(args)
            }
        }
        d.deserialize_map(Visitor)
    }
}

impl Args for KnownArgs {
    typed_readers!();
    fn set(&mut self, key: &str, value: Value) {
        if let Some(slot) = self.slot(key) {
            *slot = Some(value);
        }
    }
}

/// The name of the phase a chare-array balancing step is in chorus traces.
pub const LB_STEP: &str = "chorus::lb_step";

/// The arguments of an [`LB_STEP`] phase the report reads.
const LB_STEP_ARGS: [&str; 9] = [
    "round",
    "migrations",
    "objects",
    "load_min_before_ns",
    "load_avg_before_ns",
    "load_max_before_ns",
    "load_min_after_ns",
    "load_avg_after_ns",
    "load_max_after_ns",
];

/// The arguments of an [`LB_PE_LOAD`] phase the report reads.
const LB_PE_LOAD_ARGS: [&str; 4] = ["round", "array", "load_before_ns", "load_after_ns"];

/// Every balancing argument [`KnownArgs`] keeps: a step's, and a PE's in a step.
const LB_ARGS: [&str; 12] = [
    LB_STEP_ARGS[0],
    LB_STEP_ARGS[1],
    LB_STEP_ARGS[2],
    LB_STEP_ARGS[3],
    LB_STEP_ARGS[4],
    LB_STEP_ARGS[5],
    LB_STEP_ARGS[6],
    LB_STEP_ARGS[7],
    LB_STEP_ARGS[8],
    LB_PE_LOAD_ARGS[1],
    LB_PE_LOAD_ARGS[2],
    LB_PE_LOAD_ARGS[3],
];

/// One balancing step as its [`LB_STEP`] phase tells it: when, what moved, and the
/// least, mean and most PE load (ns) before and after.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LbStep {
    /// Start of the phase in ns.
    pub ts_ns: u64,
    /// Its duration in ns.
    pub dur_ns: u64,
    /// The array balanced (its creator PE in the high 32 bits; 0 in older traces).
    pub array: u64,
    /// The step's round.
    pub round: u64,
    /// Elements moved.
    pub migrations: u64,
    /// Elements measured.
    pub objects: u64,
    /// Least, mean and most PE load before the step.
    pub before: [u64; 3],
    /// The same as the moves left them.
    pub after: [u64; 3],
}

impl LbStep {
    /// The step a slice named `name` with `args` records, if it is a balancing step
    /// with its loads (older traces carry none).
    pub fn of<A: Args>(name: &str, ts_ns: u64, dur_ns: u64, args: &A) -> Option<LbStep> {
        if name != LB_STEP {
            return None;
        }
        let get = |k: &str| args.u64_arg(k);
        let loads = |when: &str| -> Option<[u64; 3]> {
            Some([
                get(&format!("load_min_{when}_ns"))?,
                get(&format!("load_avg_{when}_ns"))?,
                get(&format!("load_max_{when}_ns"))?,
            ])
        };
        Some(LbStep {
            ts_ns,
            dur_ns,
            array: get("array").unwrap_or(0),
            round: get("round")?,
            migrations: get("migrations")?,
            objects: get("objects")?,
            before: loads("before")?,
            after: loads("after")?,
        })
    }
}

/// The name of the phase each traced PE records at a balancing step's resume, with
/// its own load in the step.
pub const LB_PE_LOAD: &str = "chorus::lb_pe_load";

/// One PE's load in one balancing step, as its [`LB_PE_LOAD`] phase tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LbPeLoad {
    /// The PE, as the run numbers it.
    pub pe: u32,
    /// When it recorded it (the step's resume on the PE), in ns.
    pub ts_ns: u64,
    /// The array balanced, as [`LbStep::array`].
    pub array: u64,
    /// The step's round.
    pub round: u64,
    /// Its load (ns) in the load database before the step.
    pub before: u64,
    /// The load (ns) the step's moves assigned it.
    pub after: u64,
}

impl LbPeLoad {
    /// The record a slice named `name` with `args` on PE `pe`'s track is, if any.
    pub fn of<A: Args>(name: &str, pe: u32, ts_ns: u64, args: &A) -> Option<LbPeLoad> {
        if name != LB_PE_LOAD {
            return None;
        }
        let get = |k: &str| args.u64_arg(k);
        Some(LbPeLoad {
            pe,
            ts_ns,
            array: get("array").unwrap_or(0),
            round: get("round")?,
            before: get("load_before_ns")?,
            after: get("load_after_ns")?,
        })
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

impl FlowEnd {
    /// The PE of the end's track, as the run numbers it.
    pub fn pe(&self) -> u32 {
        crate::ids::run_id(self.tid)
    }
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

/// A [`TraceError::Format`] about `path`.
pub(crate) fn bad(path: &Path, message: String) -> TraceError {
    TraceError::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// The order of tracks every reader keeps: by pid, then thread sort index (the tid
/// when there is none), then tid.
pub(crate) fn track_order(pid: u32, sort_index: Option<i64>, tid: u32) -> (u32, i64, u32) {
    (pid, sort_index.unwrap_or(i64::from(tid)), tid)
}

/// A slice whose begin was read: name, category, start, arguments, file position.
type Open<A> = (String, String, u64, A, usize);

/// Slices begun and not yet ended, per track (keyed as the file names tracks).
pub(crate) struct OpenSlices<K, A> {
    open: HashMap<K, Vec<Open<A>>>,
}

impl<K, A> Default for OpenSlices<K, A> {
    fn default() -> Self {
        OpenSlices {
            open: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, A> OpenSlices<K, A> {
    /// Opens a slice on track `key`.
    pub(crate) fn begin(
        &mut self,
        key: K,
        name: String,
        cat: String,
        ts_ns: u64,
        args: A,
        seq: usize,
    ) {
        self.open
            .entry(key)
            .or_default()
            .push((name, cat, ts_ns, args, seq));
    }

    /// Closes the innermost open slice of track `key` at `ts_ns`: the whole slice, on
    /// the track `(pid, tid)`. An end with nothing open, or before its begin, is an
    /// error: the slices around it cannot be trusted.
    pub(crate) fn end(
        &mut self,
        key: &K,
        pid: u32,
        tid: u32,
        ts_ns: u64,
        path: &Path,
    ) -> Result<Item<A>, TraceError> {
        let Some((name, cat, start, args, seq)) = self.open.get_mut(key).and_then(Vec::pop) else {
            return Err(bad(
                path,
                format!(
                    "a slice end at {ts_ns} ns on pid {pid} tid {tid} with no slice begun there"
                ),
            ));
        };
        if ts_ns < start {
            return Err(bad(
                path,
                format!("slice '{name}' on pid {pid} tid {tid} ends at {ts_ns} ns, before it begins at {start} ns"),
            ));
        }
        Ok(Item::Slice {
            pid,
            tid,
            name,
            cat,
            ts_ns: start,
            dur_ns: ts_ns - start,
            args,
            seq,
        })
    }

    /// At the end of the file: an error if any slice was begun and never ended (a cut
    /// file, or a writer that stopped), naming how many and the first.
    pub(crate) fn finish(&self, path: &Path) -> Result<(), TraceError> {
        let open = self.open.values().flatten();
        let Some(first) = open.clone().min_by_key(|o| o.4) else {
            return Ok(());
        };
        Err(bad(
            path,
            format!(
                "{} slice(s) begun and never ended (the first '{}' at {} ns): the file is cut or unbalanced",
                open.count(),
                first.0,
                first.2
            ),
        ))
    }
}

/// Pairs flow starts and ends by key as they stream past; only unpaired halves are kept.
pub struct FlowMatcher<K> {
    starts: HashMap<K, FlowEnd>,
    ends: HashMap<K, FlowEnd>,
    /// Halves replaced by a later one with the same key.
    dangling: usize,
}

impl<K: Hash + Eq> Default for FlowMatcher<K> {
    fn default() -> Self {
        FlowMatcher {
            starts: HashMap::new(),
            ends: HashMap::new(),
            dangling: 0,
        }
    }
}

impl<K: Hash + Eq> FlowMatcher<K> {
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

#[cfg(test)]
mod lb_step_tests {
    use super::*;

    fn args(keys: &[&str]) -> KnownArgs {
        let mut a = KnownArgs::default();
        for (i, k) in keys.iter().enumerate() {
            a.set(k, Value::from(i as u64 + 1));
        }
        a
    }

    #[test]
    fn a_step_reads_every_argument_and_needs_them_all() {
        let a = args(&LB_STEP_ARGS);
        let s = LbStep::of(LB_STEP, 5, 6, &a).expect("a step");
        assert_eq!((s.round, s.migrations, s.objects), (1, 2, 3));
        assert_eq!((s.before, s.after), ([4, 5, 6], [7, 8, 9]));
        assert_eq!(LbStep::of("other", 5, 6, &a), None);
        assert_eq!(LbStep::of(LB_STEP, 5, 6, &args(&LB_STEP_ARGS[..8])), None);
    }

    #[test]
    fn a_pe_load_reads_its_arguments_and_needs_its_loads() {
        let a = args(&LB_PE_LOAD_ARGS);
        let l = LbPeLoad::of(LB_PE_LOAD, 3, 7, &a).expect("a PE load");
        assert_eq!((l.pe, l.ts_ns, l.round, l.array), (3, 7, 1, 2));
        assert_eq!((l.before, l.after), (3, 4));
        assert_eq!(LbPeLoad::of(LB_STEP, 3, 7, &a), None);
        assert_eq!(
            LbPeLoad::of(LB_PE_LOAD, 3, 7, &args(&LB_PE_LOAD_ARGS[..3])),
            None
        );
    }
}
