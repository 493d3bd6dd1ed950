//! Projections-style figures computed from a trace: usage per PE, time profile,
//! entry-method table and the PE-to-PE message matrix. This module runs the two
//! passes over a trace in memory, a compact trace or a file; the figures are in
//! `figures`, the passes' state in `accumulate` and the text in `summary_text`.

use std::path::Path;

use crate::analysis::compact::{for_each_item, CompactTrace};
use crate::analysis::model::{Args, Item};
use crate::analysis::read::Trace;
use crate::error::TraceError;

// What moved out keeps its first paths (`summary::Summary`, `summary::render_text`, ...).
pub use crate::analysis::accumulate::{
    outermost, outermost_of, outermost_spans, spread, trace_span, Scan, SummaryAcc, Timed,
};
pub use crate::analysis::figures::{
    EntryStats, MessageCell, PeUsage, Summary, SummaryOptions, TimeProfile,
};
pub use crate::analysis::model::{CAT_ENTRY, CAT_IDLE};
pub use crate::analysis::summary_text::{fmt_bytes, fmt_ns, render_critical_path, render_text};

/// Computes the summary with a time profile of `bins` bins (at least 1).
pub fn summarize(trace: &Trace, bins: usize) -> Summary {
    let opts = SummaryOptions::bins(bins);
    let mut scan = Scan::default();
    for t in &trace.tracks {
        let i = scan.track(t.pid, t.tid);
        scan.sort_index(i, t.sort_index);
        for s in &t.slices {
            scan.slice(i, &s.cat, s.ts_ns, s.dur_ns);
        }
        for p in &t.instants {
            scan.instant(p.ts_ns);
        }
    }
    let mut acc = SummaryAcc::new(scan, &opts);
    for t in &trace.tracks {
        for s in &t.slices {
            let (bytes, src) = (s.arg_u64("bytes"), s.arg_u64("src_pe"));
            acc.slice(t.pid, t.tid, &s.name, &s.cat, s.ts_ns, s.dur_ns, bytes, src);
        }
    }
    acc.finish()
}

/// [`summarize`] for a [`CompactTrace`].
pub fn summarize_compact(trace: &CompactTrace, opts: &SummaryOptions) -> Summary {
    let mut scan = Scan::default();
    for t in &trace.tracks {
        let i = scan.track(t.pid, t.tid);
        scan.sort_index(i, t.sort_index);
        for s in t.spans() {
            scan.slice(i, trace.strings.get(s.cat), s.ts_ns, s.dur_ns);
        }
        for ts in t.instant_times() {
            scan.instant(ts);
        }
    }
    let mut acc = SummaryAcc::new(scan, opts);
    for t in &trace.tracks {
        for s in t.spans() {
            let (name, cat) = (trace.strings.get(s.name), trace.strings.get(s.cat));
            acc.slice(
                t.pid, t.tid, name, cat, s.ts_ns, s.dur_ns, s.bytes, s.src_pe,
            );
        }
    }
    acc.finish()
}

/// [`summarize`] for the trace file at `path`, streamed twice (a [`Scan`], then a
/// [`SummaryAcc`]): memory holds per-PE, per-bin and per-entry state, not the slices.
pub fn summarize_file(
    path: impl AsRef<Path>,
    opts: &SummaryOptions,
) -> Result<Summary, TraceError> {
    let path = path.as_ref();
    let mut scan = Scan::default();
    for_each_item(path, |item| {
        match item {
            Item::Slice {
                pid,
                tid,
                cat,
                ts_ns,
                dur_ns,
                ..
            } => {
                let i = scan.track(pid, tid);
                scan.slice(i, &cat, ts_ns, dur_ns);
            }
            Item::Instant {
                pid, tid, ts_ns, ..
            } => {
                scan.track(pid, tid);
                scan.instant(ts_ns);
            }
            Item::ThreadName { pid, tid, .. } => {
                scan.track(pid, tid);
            }
            Item::SortIndex { pid, tid, index } => {
                let i = scan.track(pid, tid);
                scan.sort_index(i, index);
            }
            Item::Flow { .. } | Item::ProcessName { .. } => {}
        }
        Ok(())
    })?;
    let mut acc = SummaryAcc::new(scan, opts);
    for_each_item(path, |item| {
        if let Item::Slice {
            pid,
            tid,
            name,
            cat,
            ts_ns,
            dur_ns,
            args,
            ..
        } = item
        {
            let (bytes, src) = (args.u64_arg("bytes"), args.u64_arg("src_pe"));
            acc.slice(pid, tid, &name, &cat, ts_ns, dur_ns, bytes, src);
        }
        Ok(())
    })?;
    Ok(acc.finish())
}
