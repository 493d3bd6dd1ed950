//! The state of a summary's two passes, fed one slice at a time: the first
//! ([`Scan`]) finds the span and the tracks, the second ([`SummaryAcc`]) counts per
//! PE, per bin and per entry name, and turns its counts into a [`Summary`] at the end.

use crate::ids::run_id;
use std::collections::{BTreeMap, HashMap};

use crate::analysis::compact::{CompactTrack, Span, Strings};
use crate::analysis::figures::{
    EntryStats, HeatMap, HeatRow, MessageCell, PeUsage, Summary, SummaryOptions, TimeProfile,
};
use crate::analysis::model::{track_order, CAT_ENTRY, CAT_IDLE};
use crate::analysis::read::{Slice, Trace, Track};
use crate::analysis::views::{row_groups, size_bucket, size_histogram, SIZE_BUCKETS};

/// Something with a start and a duration in ns: a [`Slice`] or a [`Span`].
pub trait Timed {
    /// Start.
    fn start_ns(&self) -> u64;
    /// Duration.
    fn length_ns(&self) -> u64;
}

impl Timed for Slice {
    fn start_ns(&self) -> u64 {
        self.ts_ns
    }
    fn length_ns(&self) -> u64 {
        self.dur_ns
    }
}

impl Timed for Span {
    fn start_ns(&self) -> u64 {
        self.ts_ns
    }
    fn length_ns(&self) -> u64 {
        self.dur_ns
    }
}

/// The outermost of `items` (nested ones would count twice), in start order.
pub fn outermost_of<'a, T: Timed>(items: impl Iterator<Item = &'a T>) -> Vec<&'a T> {
    let mut sorted: Vec<&T> = items.collect();
    sorted.sort_by_key(|s| (s.start_ns(), std::cmp::Reverse(s.length_ns())));
    let mut cover = Cover::default();
    sorted.retain(|s| cover.keeps(s.start_ns(), s.length_ns()));
    sorted
}

/// The outermost slices of category `cat` on a track (nested ones would count twice).
pub fn outermost<'a>(track: &'a Track, cat: &'a str) -> impl Iterator<Item = &'a Slice> + 'a {
    outermost_of(track.slices.iter().filter(move |s| s.cat == cat)).into_iter()
}

/// The outermost slices of category `cat` on a compact track, in start order.
pub fn outermost_spans(strings: &Strings, track: &CompactTrack, cat: &str) -> Vec<Span> {
    let Some(cat) = strings.id(cat) else {
        return Vec::new();
    };
    let all: Vec<Span> = track.spans().filter(|s| s.cat == cat).collect();
    outermost_of(all.iter()).into_iter().copied().collect()
}

/// Picks outermost slices from slices coming in start order, longest first at a tie.
#[derive(Clone, Copy, Debug, Default)]
struct Cover {
    /// End of the last slice kept, once one was.
    to: Option<u64>,
}

impl Cover {
    fn keeps(&mut self, ts: u64, dur: u64) -> bool {
        // Inside (or, in a foreign trace, overlapping) the previous outermost one.
        if self.to.is_some_and(|to| ts < to) {
            return false;
        }
        self.to = Some(ts.saturating_add(dur));
        true
    }
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
    let mut scan = Scan::default();
    for t in &trace.tracks {
        let i = scan.track(t.pid, t.tid);
        for s in &t.slices {
            scan.slice(i, &s.cat, s.ts_ns, s.dur_ns);
        }
        for p in &t.instants {
            scan.instant(p.ts_ns);
        }
    }
    scan.span()
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Index of the categories whose outermost slices are measured.
fn measured(cat: &str) -> Option<usize> {
    match cat {
        CAT_ENTRY => Some(0),
        CAT_IDLE => Some(1),
        _ => None,
    }
}

/// The first pass of a summary: the span, the tracks and their order, and which
/// tracks' entry or idle slices come out of start order (those are sorted at the end;
/// the others are measured as they stream past).
#[derive(Debug, Default)]
pub struct Scan {
    lo: u64,
    hi: u64,
    any: bool,
    index: HashMap<(u32, u32), usize>,
    tracks: Vec<ScanTrack>,
}

#[derive(Debug)]
struct ScanTrack {
    pid: u32,
    tid: u32,
    sort_index: Option<i64>,
    /// Per measured category: the last (start, longest-first) key, and whether the
    /// slices went out of that order.
    last: [Option<(u64, std::cmp::Reverse<u64>)>; 2],
    unsorted: [bool; 2],
}

impl Scan {
    /// The index of track `(pid, tid)`, adding it on first sight.
    pub fn track(&mut self, pid: u32, tid: u32) -> usize {
        let tracks = &mut self.tracks;
        *self.index.entry((pid, tid)).or_insert_with(|| {
            tracks.push(ScanTrack {
                pid,
                tid,
                sort_index: None,
                last: [None; 2],
                unsorted: [false; 2],
            });
            tracks.len() - 1
        })
    }

    /// Sets a track's `thread_sort_index`.
    pub fn sort_index(&mut self, track: usize, index: Option<i64>) {
        self.tracks[track].sort_index = index;
    }

    fn cover(&mut self, lo: u64, hi: u64) {
        self.lo = if self.any { self.lo.min(lo) } else { lo };
        self.hi = if self.any { self.hi.max(hi) } else { hi };
        self.any = true;
    }

    /// Notes a slice on `track`.
    pub fn slice(&mut self, track: usize, cat: &str, ts_ns: u64, dur_ns: u64) {
        self.cover(ts_ns, ts_ns.saturating_add(dur_ns));
        if let Some(c) = measured(cat) {
            let t = &mut self.tracks[track];
            let key = (ts_ns, std::cmp::Reverse(dur_ns));
            t.unsorted[c] |= t.last[c].is_some_and(|last| key < last);
            t.last[c] = Some(key);
        }
    }

    /// Notes an instant.
    pub fn instant(&mut self, ts_ns: u64) {
        self.cover(ts_ns, ts_ns);
    }

    /// Earliest start and latest end, `(0, 0)` for an empty trace.
    pub fn span(&self) -> (u64, u64) {
        if self.any && self.lo <= self.hi {
            (self.lo, self.hi)
        } else {
            (0, 0)
        }
    }
}

/// The second pass of a summary: takes every slice once, in file order, keeping only
/// per-PE, per-bin and per-entry-name state (plus the out-of-order tracks' slices).
#[derive(Debug)]
pub struct SummaryAcc {
    index: HashMap<(u32, u32), usize>,
    start_ns: u64,
    end_ns: u64,
    bin_ns: f64,
    busy_bins: Vec<f64>,
    idle_bins: Vec<f64>,
    pes: Vec<PeAcc>,
    entries: HashMap<String, EntryStats>,
    matrix: BTreeMap<(u32, u32), (u64, u64)>,
    sizes: [(u64, u64); SIZE_BUCKETS],
    /// Track indexes in PE order, grouped into heat-map rows.
    rows: Vec<std::ops::Range<usize>>,
    order: Vec<usize>,
    /// Per track: its heat-map row.
    row_of: Vec<usize>,
    heat: Vec<Vec<f64>>,
}

#[derive(Debug)]
struct PeAcc {
    pid: u32,
    tid: u32,
    busy_ns: u64,
    idle_ns: u64,
    entries: u64,
    cover: [Cover; 2],
    /// Out-of-order measured slices, kept as (start, duration) to sort at the end.
    deferred: [Option<Vec<(u64, u64)>>; 2],
}

impl SummaryAcc {
    /// Starts the second pass.
    pub fn new(scan: Scan, opts: &SummaryOptions) -> Self {
        let bins = opts.bins.max(1);
        let mut order: Vec<usize> = (0..scan.tracks.len()).collect();
        order.sort_by_key(|&i| {
            let t = &scan.tracks[i];
            track_order(t.pid, t.sort_index, t.tid)
        });
        let rows = row_groups(order.len(), opts.heat_rows);
        let mut row_of = vec![0; order.len()];
        for (r, range) in rows.iter().enumerate() {
            for &i in &order[range.clone()] {
                row_of[i] = r;
            }
        }
        let (start_ns, end_ns) = scan.span();
        let pes = scan
            .tracks
            .into_iter()
            .map(|t| PeAcc {
                pid: t.pid,
                tid: t.tid,
                busy_ns: 0,
                idle_ns: 0,
                entries: 0,
                cover: [Cover::default(); 2],
                deferred: t.unsorted.map(|u| u.then(Vec::new)),
            })
            .collect();
        SummaryAcc {
            index: scan.index,
            start_ns,
            end_ns,
            bin_ns: (end_ns - start_ns) as f64 / bins as f64,
            busy_bins: vec![0.0; bins],
            idle_bins: vec![0.0; bins],
            pes,
            entries: HashMap::new(),
            matrix: BTreeMap::new(),
            sizes: [(0, 0); SIZE_BUCKETS],
            heat: vec![vec![0.0; bins]; rows.len()],
            rows,
            order,
            row_of,
        }
    }

    /// Takes one slice of track `(pid, tid)` (a track the scan saw).
    #[allow(clippy::too_many_arguments)]
    pub fn slice(
        &mut self,
        pid: u32,
        tid: u32,
        name: &str,
        cat: &str,
        ts_ns: u64,
        dur_ns: u64,
        bytes: Option<u64>,
        src_pe: Option<u64>,
    ) {
        let Some(&i) = self.index.get(&(pid, tid)) else {
            return;
        };
        let Some(c) = measured(cat) else {
            return;
        };
        let pe = &mut self.pes[i];
        match &mut pe.deferred[c] {
            Some(v) => v.push((ts_ns, dur_ns)),
            None => {
                if pe.cover[c].keeps(ts_ns, dur_ns) {
                    self.outermost(i, c, ts_ns, dur_ns);
                }
            }
        }
        if c != 0 {
            return;
        }
        let pe = &mut self.pes[i];
        pe.entries += 1;
        let bytes = bytes.unwrap_or(0);
        let e = match self.entries.get_mut(name) {
            Some(e) => e,
            None => self
                .entries
                .entry(name.to_owned())
                .or_insert_with(|| EntryStats {
                    name: name.to_owned(),
                    count: 0,
                    total_ns: 0,
                    mean_ns: 0.0,
                    max_ns: 0,
                    bytes: 0,
                }),
        };
        e.count += 1;
        // Saturating: a foreign trace's durations may be absurd, not a reason to panic.
        e.total_ns = e.total_ns.saturating_add(dur_ns);
        e.max_ns = e.max_ns.max(dur_ns);
        e.bytes = e.bytes.saturating_add(bytes);
        if let Some(src) = src_pe.and_then(|v| u32::try_from(v).ok()) {
            let cell = self.matrix.entry((src, run_id(pe.tid))).or_default();
            cell.0 += 1;
            cell.1 = cell.1.saturating_add(bytes);
            let size = &mut self.sizes[size_bucket(bytes)];
            size.0 += 1;
            size.1 = size.1.saturating_add(bytes);
        }
    }

    /// Counts an outermost slice of category index `c` on PE `i`.
    fn outermost(&mut self, i: usize, c: usize, ts_ns: u64, dur_ns: u64) {
        let end = ts_ns.saturating_add(dur_ns);
        let (total, bins) = if c == 0 {
            (&mut self.pes[i].busy_ns, &mut self.busy_bins)
        } else {
            (&mut self.pes[i].idle_ns, &mut self.idle_bins)
        };
        *total = total.saturating_add(dur_ns);
        spread(bins, self.start_ns, self.bin_ns, ts_ns, end);
        if c == 0 {
            let row = &mut self.heat[self.row_of[i]];
            spread(row, self.start_ns, self.bin_ns, ts_ns, end);
        }
    }

    /// The summary, once every slice is in.
    pub fn finish(mut self) -> Summary {
        self.measure_deferred();
        let span_ns = self.end_ns - self.start_ns;
        let heat_rows = self.heat_rows();
        let pes = self.pe_usage(span_ns);
        let denom = self.bin_ns * pes.len() as f64;
        for b in self.busy_bins.iter_mut().chain(self.idle_bins.iter_mut()) {
            *b = ratio(*b, denom);
        }
        let entries = entry_table(self.entries);
        let messages: Vec<MessageCell> = self
            .matrix
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
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            span_ns,
            pe_count: pes.len(),
            mean_utilisation,
            entry_count: pes.iter().map(|p| p.entries).sum(),
            message_count: messages.iter().map(|c| c.messages).sum(),
            message_bytes: messages.iter().fold(0u64, |a, c| a.saturating_add(c.bytes)),
            pes,
            time_profile: TimeProfile {
                bin_ns: self.bin_ns,
                busy: self.busy_bins,
                idle: self.idle_bins,
            },
            entries,
            messages,
            message_sizes: size_histogram(&self.sizes),
            heat_map: HeatMap {
                bin_ns: self.bin_ns,
                rows: heat_rows,
            },
        }
    }

    /// Measures the out-of-order tracks' slices, sorted now that all are in.
    fn measure_deferred(&mut self) {
        for i in 0..self.pes.len() {
            for c in 0..2 {
                let Some(mut v) = self.pes[i].deferred[c].take() else {
                    continue;
                };
                v.sort_by_key(|&(ts, dur)| (ts, std::cmp::Reverse(dur)));
                let mut cover = Cover::default();
                for (ts, dur) in v {
                    if cover.keeps(ts, dur) {
                        self.outermost(i, c, ts, dur);
                    }
                }
            }
        }
    }

    /// The heat map's rows, their busy times turned into fractions.
    fn heat_rows(&mut self) -> Vec<HeatRow> {
        self.rows
            .iter()
            .zip(std::mem::take(&mut self.heat))
            .map(|(range, mut busy)| {
                let pes = range.len();
                for b in &mut busy {
                    *b = ratio(*b, self.bin_ns * pes as f64);
                }
                let tid = |k: usize| run_id(self.pes[self.order[k]].tid);
                HeatRow {
                    first_pe: tid(range.start),
                    last_pe: tid(range.end - 1),
                    pes,
                    busy,
                }
            })
            .collect()
    }

    /// Usage per PE, in track order, over a span of `span_ns`.
    fn pe_usage(&self, span_ns: u64) -> Vec<PeUsage> {
        self.order
            .iter()
            .map(|&i| &self.pes[i])
            .map(|p| PeUsage {
                pe: run_id(p.tid),
                pid: run_id(p.pid),
                busy_ns: p.busy_ns,
                idle_ns: p.idle_ns,
                entries: p.entries,
                utilisation: ratio(p.busy_ns as f64, span_ns as f64),
                idle_fraction: ratio(p.idle_ns as f64, span_ns as f64),
            })
            .collect()
    }
}

/// The entry table: means filled in, largest total time first (by name at a tie).
fn entry_table(entries: HashMap<String, EntryStats>) -> Vec<EntryStats> {
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
    entries
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
