//! Projections-style figures computed from a trace: usage per PE, time profile,
//! entry-method table and the PE-to-PE message matrix.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::read::{Slice, Trace, Track};

/// Category of entry-method slices.
pub const CAT_ENTRY: &str = "entry";
/// Category of idle slices.
pub const CAT_IDLE: &str = "idle";

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
}

/// How one PE spent the trace span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeUsage {
    /// PE number (the track's tid).
    pub pe: u32,
    /// Process (rank or node group).
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

/// The outermost slices of category `cat` on a track (nested ones would count twice).
pub fn outermost<'a>(track: &'a Track, cat: &'a str) -> impl Iterator<Item = &'a Slice> + 'a {
    let mut sorted: Vec<&Slice> = track.slices.iter().filter(|s| s.cat == cat).collect();
    sorted.sort_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    let mut covered_to = 0u64;
    let mut any = false;
    sorted.into_iter().filter(move |s| {
        if any && s.ts_ns < covered_to {
            // Inside (or, in a foreign trace, overlapping) the previous outermost one.
            return false;
        }
        any = true;
        covered_to = s.end_ns();
        true
    })
}

/// Adds the interval `[start, end)` to `bins` (each `bin_ns` wide from `t0`), split
/// by overlap.
pub fn spread(bins: &mut [f64], t0: u64, bin_ns: f64, start: u64, end: u64) {
    if bins.is_empty() || end <= start || bin_ns <= 0.0 {
        return;
    }
    let n = bins.len();
    let a = (start - t0) as f64;
    let b = (end - t0) as f64;
    let first = ((a / bin_ns) as usize).min(n - 1);
    let last = ((b / bin_ns) as usize).min(n - 1);
    for (i, bin) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = (i as f64 * bin_ns).max(a);
        let hi = ((i + 1) as f64 * bin_ns).min(b);
        if hi > lo {
            *bin += hi - lo;
        }
    }
}

/// The time span of the trace: earliest start to latest end over slices and instants.
pub fn trace_span(trace: &Trace) -> (u64, u64) {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    for t in &trace.tracks {
        for s in &t.slices {
            lo = lo.min(s.ts_ns);
            hi = hi.max(s.end_ns());
        }
        for i in &t.instants {
            lo = lo.min(i.ts_ns);
            hi = hi.max(i.ts_ns);
        }
    }
    if lo > hi {
        (0, 0)
    } else {
        (lo, hi)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Computes the summary with a time profile of `bins` bins (at least 1).
pub fn summarize(trace: &Trace, bins: usize) -> Summary {
    let bins = bins.max(1);
    let (start_ns, end_ns) = trace_span(trace);
    let span_ns = end_ns - start_ns;
    let bin_ns = span_ns as f64 / bins as f64;
    let mut busy_bins = vec![0.0; bins];
    let mut idle_bins = vec![0.0; bins];
    let mut pes = Vec::with_capacity(trace.tracks.len());
    let mut entries: HashMap<&str, EntryStats> = HashMap::new();
    let mut matrix: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    let mut entry_count = 0u64;

    for t in &trace.tracks {
        let mut busy_ns = 0;
        for s in outermost(t, CAT_ENTRY) {
            busy_ns += s.dur_ns;
            spread(&mut busy_bins, start_ns, bin_ns, s.ts_ns, s.end_ns());
        }
        let mut idle_ns = 0;
        for s in outermost(t, CAT_IDLE) {
            idle_ns += s.dur_ns;
            spread(&mut idle_bins, start_ns, bin_ns, s.ts_ns, s.end_ns());
        }
        let mut count = 0u64;
        for s in t.slices.iter().filter(|s| s.cat == CAT_ENTRY) {
            count += 1;
            let bytes = s.arg_u64("bytes").unwrap_or(0);
            let e = entries.entry(&s.name).or_insert_with(|| EntryStats {
                name: s.name.clone(),
                count: 0,
                total_ns: 0,
                mean_ns: 0.0,
                max_ns: 0,
                bytes: 0,
            });
            e.count += 1;
            e.total_ns += s.dur_ns;
            e.max_ns = e.max_ns.max(s.dur_ns);
            e.bytes += bytes;
            if let Some(src) = s.arg_u64("src_pe").and_then(|v| u32::try_from(v).ok()) {
                let cell = matrix.entry((src, t.tid)).or_default();
                cell.0 += 1;
                cell.1 += bytes;
            }
        }
        entry_count += count;
        pes.push(PeUsage {
            pe: t.tid,
            pid: t.pid,
            busy_ns,
            idle_ns,
            entries: count,
            utilisation: ratio(busy_ns as f64, span_ns as f64),
            idle_fraction: ratio(idle_ns as f64, span_ns as f64),
        });
    }

    let denom = bin_ns * trace.tracks.len() as f64;
    for b in busy_bins.iter_mut().chain(idle_bins.iter_mut()) {
        *b = ratio(*b, denom);
    }
    let mut entries: Vec<EntryStats> = entries
        .into_values()
        .map(|mut e| {
            e.mean_ns = ratio(e.total_ns as f64, e.count as f64);
            e
        })
        .collect();
    entries.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    let messages: Vec<MessageCell> = matrix
        .into_iter()
        .map(|((src_pe, dst_pe), (messages, bytes))| MessageCell {
            src_pe,
            dst_pe,
            messages,
            bytes,
        })
        .collect();
    let mean_utilisation = ratio(
        pes.iter().map(|p| p.utilisation).sum::<f64>(),
        pes.len() as f64,
    );
    Summary {
        start_ns,
        end_ns,
        span_ns,
        pe_count: trace.tracks.len(),
        mean_utilisation,
        entry_count,
        message_count: messages.iter().map(|c| c.messages).sum(),
        message_bytes: messages.iter().map(|c| c.bytes).sum(),
        pes,
        time_profile: TimeProfile {
            bin_ns,
            busy: busy_bins,
            idle: idle_bins,
        },
        entries,
        messages,
    }
}

/// A duration for people: ns, µs, ms or s with a sensible number of digits.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.3} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// A byte count for people.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b < 1024.0 {
        format!("{b} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    }
}

/// PEs listed one by one in the text output; above this, the extremes are shown.
const TEXT_PE_ROWS: usize = 64;
/// Matrix drawn densely up to this many PEs; above, the largest pairs are listed.
const TEXT_DENSE_MATRIX: usize = 16;

/// The summary as plain-text tables for people.
pub fn render_text(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Trace: {} PEs, span {} ({} .. {})",
        s.pe_count,
        fmt_ns(s.span_ns as f64),
        fmt_ns(s.start_ns as f64),
        fmt_ns(s.end_ns as f64)
    );
    let _ = writeln!(
        o,
        "Mean utilisation {:.1}%, {} entry executions, {} messages ({})",
        s.mean_utilisation * 100.0,
        s.entry_count,
        s.message_count,
        fmt_bytes(s.message_bytes)
    );

    let _ = writeln!(o, "\nUtilisation per PE (busy = in entry methods)");
    let _ = writeln!(
        o,
        "{:>8} {:>6} {:>14} {:>14} {:>7} {:>7} {:>9}",
        "PE", "pid", "busy", "idle", "busy%", "idle%", "entries"
    );
    let row = |o: &mut String, p: &PeUsage| {
        let _ = writeln!(
            o,
            "{:>8} {:>6} {:>14} {:>14} {:>6.1}% {:>6.1}% {:>9}",
            p.pe,
            p.pid,
            fmt_ns(p.busy_ns as f64),
            fmt_ns(p.idle_ns as f64),
            p.utilisation * 100.0,
            p.idle_fraction * 100.0,
            p.entries
        );
    };
    if s.pes.len() <= TEXT_PE_ROWS {
        for p in &s.pes {
            row(&mut o, p);
        }
    } else {
        let mut by_util: Vec<&PeUsage> = s.pes.iter().collect();
        by_util.sort_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        let _ = writeln!(o, "  (least utilised 8)");
        for p in by_util.iter().take(8) {
            row(&mut o, p);
        }
        let _ = writeln!(o, "  (most utilised 8)");
        for p in by_util.iter().rev().take(8).rev() {
            row(&mut o, p);
        }
    }

    let tp = &s.time_profile;
    let _ = writeln!(
        o,
        "\nTime profile (busy % of all PEs per bin of {}; '#' busy, '.' idle)",
        fmt_ns(tp.bin_ns)
    );
    const BAR: usize = 50;
    for (i, (b, idle)) in tp.busy.iter().zip(&tp.idle).enumerate() {
        let nb = ((b * BAR as f64).round() as usize).min(BAR);
        let ni = ((idle * BAR as f64).round() as usize).min(BAR - nb);
        let _ = writeln!(
            o,
            "{:>14} |{}{}{}| {:>5.1}%",
            fmt_ns(i as f64 * tp.bin_ns),
            "#".repeat(nb),
            ".".repeat(ni),
            " ".repeat(BAR - nb - ni),
            b * 100.0
        );
    }

    let _ = writeln!(o, "\nEntry methods (by total time)");
    let width = s
        .entries
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 48);
    let _ = writeln!(
        o,
        "{:<width$} {:>10} {:>14} {:>14} {:>14} {:>12}",
        "entry", "count", "total", "mean", "max", "bytes"
    );
    for e in &s.entries {
        let _ = writeln!(
            o,
            "{:<width$} {:>10} {:>14} {:>14} {:>14} {:>12}",
            e.name,
            e.count,
            fmt_ns(e.total_ns as f64),
            fmt_ns(e.mean_ns),
            fmt_ns(e.max_ns as f64),
            fmt_bytes(e.bytes)
        );
    }

    render_matrix(&mut o, s);
    o
}

fn render_matrix(o: &mut String, s: &Summary) {
    if s.messages.is_empty() {
        let _ = writeln!(o, "\nMessages: none recorded");
        return;
    }
    if s.pe_count <= TEXT_DENSE_MATRIX {
        let pes: Vec<u32> = s.pes.iter().map(|p| p.pe).collect();
        let _ = writeln!(
            o,
            "\nMessages PE to PE (row = source, column = destination)"
        );
        let _ = write!(o, "{:>8}", "src\\dst");
        for d in &pes {
            let _ = write!(o, " {d:>8}");
        }
        let _ = writeln!(o);
        let cells: HashMap<(u32, u32), u64> = s
            .messages
            .iter()
            .map(|c| ((c.src_pe, c.dst_pe), c.messages))
            .collect();
        let mut srcs: Vec<u32> = pes.clone();
        for c in &s.messages {
            if !srcs.contains(&c.src_pe) {
                srcs.push(c.src_pe);
            }
        }
        for src in srcs {
            let _ = write!(o, "{src:>8}");
            for d in &pes {
                let _ = write!(o, " {:>8}", cells.get(&(src, *d)).copied().unwrap_or(0));
            }
            let _ = writeln!(o);
        }
    } else {
        let mut top: Vec<&MessageCell> = s.messages.iter().collect();
        top.sort_by(|a, b| b.messages.cmp(&a.messages).then(a.src_pe.cmp(&b.src_pe)));
        let _ = writeln!(
            o,
            "\nMessages PE to PE: {} non-empty pairs; the 20 busiest",
            s.messages.len()
        );
        let _ = writeln!(
            o,
            "{:>8} {:>8} {:>10} {:>12}",
            "src", "dst", "messages", "bytes"
        );
        for c in top.into_iter().take(20) {
            let _ = writeln!(
                o,
                "{:>8} {:>8} {:>10} {:>12}",
                c.src_pe,
                c.dst_pe,
                c.messages,
                fmt_bytes(c.bytes)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_splits_by_overlap() {
        let mut bins = vec![0.0; 4];
        spread(&mut bins, 100, 10.0, 105, 125);
        assert_eq!(bins, vec![5.0, 10.0, 5.0, 0.0]);
        spread(&mut bins, 100, 10.0, 135, 140);
        assert_eq!(bins[3], 5.0);
    }

    #[test]
    fn outermost_skips_nested() {
        let s = |ts, dur| Slice {
            name: "e".into(),
            cat: CAT_ENTRY.into(),
            ts_ns: ts,
            dur_ns: dur,
            ..Slice::default()
        };
        let t = Track {
            slices: vec![s(0, 10), s(2, 3), s(10, 5)],
            ..Track::default()
        };
        let v: Vec<u64> = outermost(&t, CAT_ENTRY).map(|s| s.dur_ns).collect();
        assert_eq!(v, vec![10, 5]);
    }
}
