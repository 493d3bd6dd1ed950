//! chorus-traces: Projections-like tracing for the chorus runtime.
//!
//! The runtime gives each PE a [`Recorder`] that appends 32-byte [`Record`]s to a
//! bounded buffer; full buffers go to a shared [`Collector`], which streams them to a
//! spool file next to the output. At the end, [`Collector::write`] merges the spool
//! into one trace file: Chrome Trace Event JSON (Perfetto / chrome://tracing, also
//! [`Collector::write_chrome`]), or Perfetto protobuf for a `.perfetto-trace` path.
//! [`read_chrome`] reads either back for [`summarize`] (utilisation, time profile,
//! entry table, message matrix, message sizes, heat map) and [`render_report`] (a
//! self-contained HTML report). The `chorus-trace` binary wraps these for people and
//! streams big files: [`summarize_file`] reads the file twice keeping only per-PE and
//! per-bin state, and [`CompactTrace::read`] keeps interned names and varint-packed
//! slices (a fifth of the file or less) for [`check_compact`],
//! [`render_report_compact`] and [`critical_path`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use chorus_traces::{Collector, Names, Recorder, TraceConfig};
//!
//! let names = Names::new();
//! let sink = Arc::new(Collector::new(TraceConfig::new("run.json"))?);
//! let go = names.intern("Worker::go");
//! let mut pe0 = Recorder::new(0, 0, sink.clone());
//! pe0.send(100, 7, 1, 64);
//! let mut pe1 = Recorder::new(1, 0, sink.clone());
//! pe1.entry_begin(250, go, 0, 64, Some(7));
//! pe1.entry_end(900);
//! pe0.finish();
//! pe1.finish();
//! let stats = sink.write_chrome(&names, "run.json".as_ref())?;
//! println!("{} events, {:.1} bytes/event", stats.events, stats.bytes_per_event);
//! # Ok::<(), chorus_traces::TraceError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The run side (capture) and the tool side (analysis) share only the vocabulary
// below them: records, names, configuration and errors.
pub mod analysis;
pub mod capture;
pub mod config;
pub mod error;
pub mod ids;
pub mod mutate;
pub mod names;
pub mod proto;
pub mod record;
pub mod wire;

// The modules' first paths (`chorus_traces::chrome`, ...) stay valid.
pub use analysis::{compact, read, report_html, summary, validate, views};
pub use capture::{chrome, collector, recorder};

pub use analysis::events::{Format, Source};
pub use analysis::model::{LbPeLoad, LbStep, LB_PE_LOAD, LB_STEP};
pub use chrome::WriteStats;
pub use collector::Collector;
pub use compact::{CompactFlow, CompactTrace, CompactTrack, FlowId, Span, Strings};
pub use config::TraceConfig;
pub use error::TraceError;
pub use names::{NameId, Names};
pub use read::{parse_chrome, read_chrome, Flow, FlowEnd, Instant, Slice, Trace, Track};
pub use record::{flow_kept, Event, Record, RECORD_BYTES};
pub use recorder::Recorder;
pub use report_html::{render_report, render_report_compact, ReportOptions};
pub use summary::{
    render_critical_path, render_text, summarize, summarize_compact, summarize_file, EntryStats,
    MessageCell, PeUsage, Summary, SummaryOptions, TimeProfile,
};
pub use validate::{check, check_compact, validate, CheckReport, Problem, Rule};
pub use views::{critical_path, CriticalPath, HeatMap, HeatRow, PathEntry, SizeBucket};
