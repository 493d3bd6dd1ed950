//! What a traced run is told: where the trace goes and how much to keep.

use std::path::PathBuf;

/// Default per-PE buffer: 64k records = 2 MiB per PE.
pub const DEFAULT_BUFFER_EVENTS: usize = 64 * 1024;

/// File name used when [`TraceConfig::dir_or_file`] names a directory.
pub const DEFAULT_FILE_NAME: &str = "chorus-trace.json";

/// Settings of one traced run, shared by every PE's recorder through the [`crate::Collector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    /// The final Chrome JSON file, or an existing directory to put `chorus-trace.json` in.
    pub dir_or_file: PathBuf,
    /// Keep 1 in N send-to-receive flow arrows (1 = all); chosen by a fixed hash of the
    /// message id so sender and receiver agree without talking.
    pub flow_every: u64,
    /// Records a PE buffers before handing them to the collector (at least 1).
    pub buffer_events: usize,
    /// Word in front of the pid in process track names: "rank" (MPI) or "node group" (sim).
    pub process_label: String,
    /// Record only these PEs (inclusive ranges, sorted and disjoint); `None` records all.
    /// The others get no track at all.
    pub pes: Option<Vec<(u32, u32)>>,
    /// Record only events timed in `[from, to]` ns (see [`crate::Recorder`] for slices
    /// that cross its edges); `None` records the whole run.
    pub window: Option<(u64, u64)>,
}

impl TraceConfig {
    /// All flows, 64k-record buffers, processes named "rank N".
    pub fn new(dir_or_file: impl Into<PathBuf>) -> Self {
        TraceConfig {
            dir_or_file: dir_or_file.into(),
            flow_every: 1,
            buffer_events: DEFAULT_BUFFER_EVENTS,
            process_label: "rank".to_owned(),
            pes: None,
            window: None,
        }
    }

    /// Whether PE `pe` is recorded.
    pub fn records_pe(&self, pe: u32) -> bool {
        self.pes.as_ref().is_none_or(|ranges| {
            let i = ranges.partition_point(|&(_, last)| last < pe);
            ranges.get(i).is_some_and(|&(first, _)| first <= pe)
        })
    }

    /// The file the trace is written to: `dir_or_file`, or `dir_or_file/chorus-trace.json`
    /// when that is an existing directory.
    pub fn output_file(&self) -> PathBuf {
        if self.dir_or_file.is_dir() {
            self.dir_or_file.join(DEFAULT_FILE_NAME)
        } else {
            self.dir_or_file.clone()
        }
    }
}
