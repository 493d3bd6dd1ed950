//! What the Chrome writer counts while it writes (shared by the writer and its layout).

use serde::Serialize;

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
    /// Flow arrows written (each is one `s` and one `f` event, each at a holder slice).
    pub flows: u64,
    /// `send` slices made around sends recorded outside any entry.
    pub send_slices: u64,
    /// 1 ns holder slices (cat `msg`) written, one at each flow event.
    pub flow_slices: u64,
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
    /// Phases shortened to nothing by that, and not written.
    pub dropped_phases: u64,
    /// The most any event was moved later than its recorded time to make room for
    /// holders and minimum lengths, in ns.
    pub max_shift_ns: u64,
    /// Passes over the spool that placed events on the trace clock (more than one
    /// when receives had to move after sends that moved).
    pub layout_passes: u64,
}
