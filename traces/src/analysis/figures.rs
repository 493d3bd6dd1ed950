//! What the analyses find, as plain data: the summary's figures (usage per PE, time
//! profile, entry table, message matrix) and Projections' extra views (message sizes,
//! heat map, critical path). Computed by `accumulate` and `views`, drawn by
//! `summary_text` and the report.

use serde::Serialize;

/// Everything `chorus-trace summary` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Earliest event time in ns.
    pub start_ns: u64,
    /// Latest event end in ns.
    pub end_ns: u64,
    /// `end_ns - start_ns`: the span utilisation is measured over.
    pub span_ns: u64,
    /// Number of tracks (PEs).
    pub pe_count: usize,
    /// Mean of the per-PE utilisations.
    pub mean_utilisation: f64,
    /// Entry slices in the trace (nested ones included).
    pub entry_count: u64,
    /// Messages received (entry slices with a `src_pe` argument).
    pub message_count: u64,
    /// Their total bytes.
    pub message_bytes: u64,
    /// Usage per PE, in track order (the Overview / Usage Profile).
    pub pes: Vec<PeUsage>,
    /// Busy and idle fraction over time (the Time Profile).
    pub time_profile: TimeProfile,
    /// One row per entry name, largest total time first.
    pub entries: Vec<EntryStats>,
    /// Non-empty cells of the PE-to-PE message matrix, by source then destination PE.
    pub messages: Vec<MessageCell>,
    /// Received messages by size, in power-of-two buckets (empty ones left out).
    pub message_sizes: Vec<SizeBucket>,
    /// Busy fraction per PE (or range of PEs) and time-profile bin.
    pub heat_map: HeatMap,
}

/// How a summary is binned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryOptions {
    /// Bins of the time profile and the heat map (at least 1).
    pub bins: usize,
    /// Most heat-map rows; above this many PEs, rows aggregate PE ranges.
    pub heat_rows: usize,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            bins: 20,
            heat_rows: 64,
        }
    }
}

impl SummaryOptions {
    /// The defaults with `bins` bins.
    pub fn bins(bins: usize) -> Self {
        SummaryOptions {
            bins,
            ..SummaryOptions::default()
        }
    }
}

/// How one PE spent the trace span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeUsage {
    /// PE number (the track's tid less 1: `crate::ids`).
    pub pe: u32,
    /// Process (rank or node group), as the run numbers it (the pid less 1).
    pub pid: u32,
    /// Time in outermost entry slices.
    pub busy_ns: u64,
    /// Time in outermost idle slices.
    pub idle_ns: u64,
    /// Entry slices on this PE.
    pub entries: u64,
    /// `busy_ns / span_ns`.
    pub utilisation: f64,
    /// `idle_ns / span_ns`.
    pub idle_fraction: f64,
}

/// Busy and idle fraction of all PEs per time bin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeProfile {
    /// Width of a bin in ns.
    pub bin_ns: f64,
    /// Per bin: entry time of all PEs over `bin_ns * pe_count`.
    pub busy: Vec<f64>,
    /// Per bin: idle time of all PEs over `bin_ns * pe_count`.
    pub idle: Vec<f64>,
}

/// Figures of one entry method.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryStats {
    /// Entry name.
    pub name: String,
    /// Executions.
    pub count: u64,
    /// Total time (inclusive of anything nested) in ns.
    pub total_ns: u64,
    /// Mean time in ns.
    pub mean_ns: f64,
    /// Longest execution in ns.
    pub max_ns: u64,
    /// Message bytes received by this entry.
    pub bytes: u64,
}

/// Messages from one PE to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MessageCell {
    /// Sending PE.
    pub src_pe: u32,
    /// Receiving PE.
    pub dst_pe: u32,
    /// Messages.
    pub messages: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Messages whose size falls in one power-of-two bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Smallest size in the bucket (0, or a power of two).
    pub min_bytes: u64,
    /// Largest size in the bucket (0, or the next power of two less one).
    pub max_bytes: u64,
    /// Messages of a size in the bucket.
    pub messages: u64,
    /// Their total bytes.
    pub bytes: u64,
}

/// Busy fraction per PE (or range of PEs) and time bin.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HeatMap {
    /// Width of a bin in ns (the time profile's).
    pub bin_ns: f64,
    /// Rows in PE order.
    pub rows: Vec<HeatRow>,
}

/// One row of the [`HeatMap`]: a PE, or a range of consecutive PEs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeatRow {
    /// First PE of the row.
    pub first_pe: u32,
    /// Last PE of the row.
    pub last_pe: u32,
    /// PEs in the row.
    pub pes: usize,
    /// Per bin: time in outermost entries of the row's PEs over `bin_ns * pes`.
    pub busy: Vec<f64>,
}

/// The longest chain in time of entries each started by a message from the one before.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CriticalPath {
    /// From the first entry of the chain to the last.
    pub entries: Vec<PathEntry>,
    /// From the first entry's start to the last one's end, in ns.
    pub span_ns: u64,
}

/// One entry execution on the [`CriticalPath`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathEntry {
    /// Entry name.
    pub name: String,
    /// PE (the track's tid).
    pub pe: u32,
    /// Start in ns.
    pub start_ns: u64,
    /// Duration in ns.
    pub dur_ns: u64,
}
