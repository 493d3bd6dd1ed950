//! Projections' extra views: the message-size histogram and the utilisation heat map
//! (filled while a summary streams, see [`crate::summary::SummaryAcc`]), and the
//! critical path through the message arrows ([`critical_path`], which needs every
//! entry and so a [`CompactTrace`]).

use crate::ids::run_id;
use std::collections::HashMap;
use std::ops::Range;

use crate::analysis::compact::{CompactTrace, Span};
use crate::analysis::model::CAT_ENTRY;

// The views' figures keep their first paths (`views::HeatMap`, ...).
pub use crate::analysis::figures::{CriticalPath, HeatMap, HeatRow, PathEntry, SizeBucket};

/// Buckets of [`SizeBucket`]: 0 bytes, then `[2^k, 2^(k+1))` for k in 0..64.
pub const SIZE_BUCKETS: usize = 65;

/// The bucket of a message of `bytes` bytes.
pub fn size_bucket(bytes: u64) -> usize {
    if bytes == 0 {
        0
    } else {
        64 - bytes.leading_zeros() as usize
    }
}

/// The non-empty buckets of per-bucket (messages, bytes) counts, smallest first.
pub fn size_histogram(counts: &[(u64, u64); SIZE_BUCKETS]) -> Vec<SizeBucket> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.0 > 0)
        .map(|(k, &(messages, bytes))| SizeBucket {
            min_bytes: if k == 0 { 0 } else { 1 << (k - 1) },
            max_bytes: match k {
                0 => 0,
                64 => u64::MAX,
                _ => (1 << k) - 1,
            },
            messages,
            bytes,
        })
        .collect()
}

/// Splits `n` tracks into at most `max_rows` consecutive ranges of equal size.
pub fn row_groups(n: usize, max_rows: usize) -> Vec<Range<usize>> {
    let per_row = n.div_ceil(max_rows.max(1)).max(1);
    (0..n)
        .step_by(per_row)
        .map(|a| a..(a + per_row).min(n))
        .collect()
}

/// Rows of a long list to show: `Some(i)` for the first and last `keep` of `len`,
/// and one `None` where the rest are left out.
pub fn elide(len: usize, keep: usize) -> impl Iterator<Item = Option<usize>> {
    let cut = len > 2 * keep;
    let head = if cut { keep } else { len };
    (0..head)
        .map(Some)
        .chain(cut.then_some(None))
        .chain((if cut { len - keep } else { len }..len).map(Some))
}

/// No entry found, in node tables.
const NONE: u32 = u32::MAX;

/// The track's entry slices by start, outer ones first.
fn entries_of(trace: &CompactTrace, track: usize, entry: u32) -> Vec<Span> {
    let mut v: Vec<Span> = trace.tracks[track]
        .spans()
        .filter(|s| s.cat == entry)
        .collect();
    v.sort_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    v
}

/// The critical path: of the chains of entries each started by a message from the one
/// before (an entry's sender being the entry around the send of the last message it
/// handled, as the arrows show), the longest in time, from its first entry's start
/// to its last one's end; the later-ending one at a tie. `None` without entries.
///
/// Holds one track's entries at a time, plus about 40 bytes per entry and 16 per flow
/// end.
pub fn critical_path(trace: &CompactTrace) -> Option<CriticalPath> {
    let entry = trace.strings.id(CAT_ENTRY)?;
    let nodes = Nodes::of(trace, entry);
    let total = nodes.times.len();
    let pred = senders(trace, &nodes.node_of, total);
    let origin = chain_starts(&pred, &nodes.times);
    let times = &nodes.times;
    let end_node =
        (0..total).max_by_key(|&n| (times[n].1.saturating_sub(origin[n]), times[n].1))? as u32;
    let mut chain = vec![end_node];
    // Arrows go forward in time, so a chain has no loops; the bound guards bad input.
    while chain.len() <= total {
        let p = pred[*chain.last()? as usize];
        if p == NONE {
            break;
        }
        chain.push(p);
    }
    chain.reverse();
    let entries = nodes.entries(trace, entry, &chain);
    let span_ns = match (entries.first(), entries.last()) {
        (Some(a), Some(b)) => b
            .start_ns
            .saturating_add(b.dur_ns)
            .saturating_sub(a.start_ns),
        _ => 0,
    };
    Some(CriticalPath { entries, span_ns })
}

/// Every entry of the trace as a node, numbered track by track in start order, and
/// the node each flow end lies in.
struct Nodes {
    /// Per flow, the nodes of its start and end ([`NONE`] outside any entry).
    node_of: Vec<[u32; 2]>,
    /// Per track, its first node; then the number of nodes.
    offsets: Vec<usize>,
    /// Per node: start and end.
    times: Vec<(u64, u64)>,
}

impl Nodes {
    fn of(trace: &CompactTrace, entry: u32) -> Nodes {
        let track_of: HashMap<(u32, u32), usize> = trace
            .tracks
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.pid, t.tid), i))
            .collect();
        // Flow ends per track, as (time, flow index, side).
        let mut ends: HashMap<usize, Vec<(u64, u32, u8)>> = HashMap::new();
        for (i, f) in trace.flows.iter().enumerate() {
            for side in 0..2 {
                let at = trace.flow_end(f, side);
                if let Some(&t) = track_of.get(&(at.pid, at.tid)) {
                    ends.entry(t)
                        .or_default()
                        .push((at.ts_ns, i as u32, side as u8));
                }
            }
        }
        let mut nodes = Nodes {
            node_of: vec![[NONE; 2]; trace.flows.len()],
            offsets: Vec::with_capacity(trace.tracks.len() + 1),
            times: Vec::new(),
        };
        for t in 0..trace.tracks.len() {
            let spans = entries_of(trace, t, entry);
            nodes.add_track(&spans, ends.remove(&t).unwrap_or_default());
        }
        nodes.offsets.push(nodes.times.len());
        nodes
    }

    /// Numbers one track's entries and finds the innermost one around each of its
    /// flow ends.
    fn add_track(&mut self, spans: &[Span], mut here: Vec<(u64, u32, u8)>) {
        let total = self.times.len();
        self.offsets.push(total);
        self.times
            .extend(spans.iter().map(|s| (s.ts_ns, s.end_ns())));
        here.sort_unstable();
        let (mut next, mut stack) = (0, Vec::<usize>::new());
        for (ts, flow, side) in here {
            while next < spans.len() && spans[next].ts_ns <= ts {
                while stack
                    .last()
                    .is_some_and(|&k| spans[k].end_ns() <= spans[next].ts_ns)
                {
                    stack.pop();
                }
                stack.push(next);
                next += 1;
            }
            let around = stack.iter().rev().find(|&&k| ts < spans[k].end_ns());
            if let Some(&k) = around {
                self.node_of[flow as usize][usize::from(side)] = (total + k) as u32;
            }
        }
    }

    /// The entries of the nodes of `chain`, in its order.
    fn entries(&self, trace: &CompactTrace, entry: u32, chain: &[u32]) -> Vec<PathEntry> {
        let mut cache: HashMap<usize, Vec<Span>> = HashMap::new();
        chain
            .iter()
            .map(|&node| {
                let node = node as usize;
                let t = self.offsets.partition_point(|&o| o <= node) - 1;
                let spans = cache
                    .entry(t)
                    .or_insert_with(|| entries_of(trace, t, entry));
                let s = spans[node - self.offsets[t]];
                PathEntry {
                    name: trace.strings.get(s.name).to_owned(),
                    pe: run_id(trace.tracks[t].tid),
                    start_ns: s.ts_ns,
                    dur_ns: s.dur_ns,
                }
            })
            .collect()
    }
}

/// Each entry's sender: of the messages it handled, the one sent last.
fn senders(trace: &CompactTrace, node_of: &[[u32; 2]], total: usize) -> Vec<u32> {
    let mut pred = vec![(NONE, 0u64); total];
    for (f, nodes) in trace.flows.iter().zip(node_of) {
        let [from, to] = *nodes;
        if from == NONE || to == NONE || from == to {
            continue;
        }
        let sent = f.ts(0);
        let p = &mut pred[to as usize];
        if p.0 == NONE || sent > p.1 {
            *p = (from, sent);
        }
    }
    pred.into_iter().map(|(p, _)| p).collect()
}

/// Per node, the start of the first entry of the chain that ends with it.
fn chain_starts(pred: &[u32], times: &[(u64, u64)]) -> Vec<u64> {
    const UNKNOWN: u64 = u64::MAX;
    let mut origin = vec![UNKNOWN; pred.len()];
    let mut on_walk = vec![false; pred.len()];
    let mut walk = Vec::new();
    for n in 0..pred.len() {
        let mut at = n;
        // Up to a node already resolved, a chain's first entry, or (in a bad trace
        // whose arrows loop) a node of this same walk.
        while origin[at] == UNKNOWN && !on_walk[at] {
            on_walk[at] = true;
            walk.push(at);
            match pred[at] {
                NONE => break,
                p => at = p as usize,
            }
        }
        let mut o = if origin[at] == UNKNOWN {
            times[at].0
        } else {
            origin[at]
        };
        for &m in walk.iter().rev() {
            o = o.min(times[m].0);
            origin[m] = o;
            on_walk[m] = false;
        }
        walk.clear();
    }
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_in_power_of_two_buckets() {
        let b: Vec<usize> = [0, 1, 2, 3, 4, 1023, 1024, u64::MAX]
            .into_iter()
            .map(size_bucket)
            .collect();
        assert_eq!(b, [0, 1, 2, 2, 3, 10, 11, 64]);
        let mut counts = [(0, 0); SIZE_BUCKETS];
        counts[0] = (2, 0);
        counts[11] = (1, 1500);
        let h = size_histogram(&counts);
        assert_eq!((h[0].min_bytes, h[0].max_bytes), (0, 0));
        assert_eq!((h[1].min_bytes, h[1].max_bytes), (1024, 2047));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn chains_start_at_their_first_entry_even_when_arrows_loop() {
        // 0 <- 1 <- 2, and 3 <-> 4 looping (a bad trace).
        let pred = [NONE, 0, 1, 4, 3];
        let times = [(10, 20), (30, 40), (50, 60), (5, 6), (7, 8)];
        assert_eq!(chain_starts(&pred, &times), [10, 10, 10, 5, 5]);
    }

    #[test]
    fn long_lists_are_elided_in_the_middle() {
        let v: Vec<Option<usize>> = elide(5, 2).collect();
        assert_eq!(v, [Some(0), Some(1), None, Some(3), Some(4)]);
        assert_eq!(elide(4, 2).count(), 4);
    }

    #[test]
    fn rows_group_evenly() {
        assert_eq!(row_groups(4, 256), vec![0..1, 1..2, 2..3, 3..4]);
        assert_eq!(row_groups(10, 4), vec![0..3, 3..6, 6..9, 9..10]);
        assert_eq!(row_groups(0, 4), Vec::<Range<usize>>::new());
    }
}
