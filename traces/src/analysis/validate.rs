//! Checks a trace against the rules by which Perfetto, catapult (chrome://tracing)
//! and Chrome DevTools draw it, so that a trace this accepts is drawn the same, and
//! right, by all three.
//!
//! The binding rules applied to each end of a flow arrow (an `s` or `f` event at time
//! `ts` on a track):
//! - **DevTools** binds a flow event to the one event with the same `cat`, `pid`,
//!   `tid` and `ts`: exactly one slice of the flow's category must start at `ts` (the
//!   *holder*);
//! - **catapult** binds it to the deepest slice whose closed interval holds `ts`, and
//!   **Perfetto** to the innermost slice open at `ts`: so no slice other than the
//!   holder may start or end at `ts` (an `idle` slice ending where the entry starts
//!   would win), and the innermost slice strictly around `ts` must not be `idle`;
//! - the arrow's end must lie in the entry that handled its message (an entry slice
//!   whose `msg_id` argument is another message is the wrong one), and the end must
//!   come strictly after the start, or Perfetto drops it;
//! - DevTools reads flow events in file order, dropping an `f` read before its `s`,
//!   and draws the arrow from the bound slice written first: the `s` and its holder
//!   must come before the `f` and its holder in the file.
//!
//! The file-order rule is not applied to Perfetto protobuf traces, which DevTools
//! does not read and Perfetto binds by flow id whatever the order.
//!
//! Besides: every track with events is named; slices have a positive duration
//! (catapult drops arrows bound to zero-length slices) and nest (two slices are
//! disjoint or one contains the other; touching ends are fine); instants are in time
//! order; every flow event has its partner. Slices need not be in start order in the
//! file: all three viewers sort them.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::compact::{CompactFlow, CompactTrace, CompactTrack, Span, Strings};
use crate::analysis::model::{FlowEnd, Format, CAT_ENTRY, CAT_IDLE};
use crate::analysis::read::Trace;

/// Examples kept per rule; every problem is counted.
const EXAMPLES_PER_RULE: usize = 20;

/// A rule a trace can break (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Rule {
    /// A flow start or end without its partner.
    DanglingFlow,
    /// A track with events but no `thread_name`.
    UnnamedTrack,
    /// Two slices overlap without one containing the other.
    PartialOverlap,
    /// A slice of zero duration.
    ZeroLength,
    /// Instants not written in time order.
    InstantOrder,
    /// No slice of the flow's category starts at the flow event's time (DevTools binds nothing).
    FlowUnbound,
    /// Several slices of the flow's category start at the flow event's time.
    FlowAmbiguous,
    /// The flow event is not strictly inside any slice of its track.
    FlowOutsideSlice,
    /// The innermost slice strictly around the flow event is `idle`.
    FlowInIdle,
    /// Another slice starts or ends exactly at the flow event's time.
    FlowAtBoundary,
    /// The flow's holder slice reaches the end of the slice around it.
    HolderAtEnd,
    /// The arrow ends in an entry that handled another message.
    FlowWrongEntry,
    /// The arrow ends at or before its start.
    FlowBackwards,
    /// The `f` event or its holder comes before the `s` event or its holder in the file.
    FlowFileOrder,
}

/// One problem: the rule broken and a sentence naming the events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong, naming the events.
    pub message: String,
}

/// What [`check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The first problems of each rule, in the order found.
    pub problems: Vec<Problem>,
    /// How many problems of each rule there are in all.
    pub counts: BTreeMap<Rule, usize>,
    /// Flows in the trace.
    pub flows: usize,
    /// Flows with a problem at either end (misdrawn or dropped by some viewer).
    pub misbound_flows: usize,
}

impl CheckReport {
    /// True when no rule is broken.
    pub fn ok(&self) -> bool {
        self.counts.is_empty()
    }

    /// Every problem counted, all rules together.
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    fn add(&mut self, rule: Rule, message: impl FnOnce() -> String) {
        let n = self.counts.entry(rule).or_default();
        *n += 1;
        if *n <= EXAMPLES_PER_RULE {
            self.problems.push(Problem {
                rule,
                message: message(),
            });
        }
    }
}

/// The first problems of each rule in `trace`, as sentences; empty means well formed.
pub fn validate(trace: &Trace) -> Vec<String> {
    check(trace)
        .problems
        .into_iter()
        .map(|p| p.message)
        .collect()
}

/// Checks `trace` against the viewers' rules (see the module docs).
pub fn check(trace: &Trace) -> CheckReport {
    check_compact(&CompactTrace::from_trace(trace))
}

/// [`check`] for a [`CompactTrace`]: holds one track's slices unpacked at a time.
pub fn check_compact(trace: &CompactTrace) -> CheckReport {
    let strings = &trace.strings;
    let mut r = CheckReport {
        flows: trace.flows.len(),
        ..CheckReport::default()
    };
    for _ in 0..trace.dangling_flow_events {
        r.add(Rule::DanglingFlow, || {
            format!("{} flow events have no partner", trace.dangling_flow_events)
        });
    }
    for t in &trace.tracks {
        let busy = t.slice_count() > 0 || t.instant_count() > 0;
        if busy && t.thread_name.is_none() {
            r.add(Rule::UnnamedTrack, || {
                format!("track pid {} tid {} has no thread_name", t.pid, t.tid)
            });
        }
        check_slices(strings, t, &mut r);
        let mut last = None;
        for ts in t.instant_times() {
            if let Some(prev) = last.filter(|&prev| ts < prev) {
                r.add(Rule::InstantOrder, || {
                    format!(
                        "track pid {} tid {}: instant at {ts} ns after one at {prev} ns",
                        t.pid, t.tid
                    )
                });
            }
            last = Some(ts);
        }
    }
    let mut bad = vec![false; trace.flows.len()];
    let holders = check_flow_ends(trace, &mut bad, &mut r);
    for (i, f) in trace.flows.iter().enumerate() {
        let [s, e] = holders[i];
        let holders_reversed = s != NO_HOLDER && e != NO_HOLDER && e < s;
        let (from, to) = (trace.flow_end(f, 0), trace.flow_end(f, 1));
        // Only DevTools reads events in file order, and it reads no protobuf.
        let json = trace.format == Format::ChromeJson;
        if json && (to.seq < from.seq || holders_reversed) {
            bad[i] = true;
            r.add(Rule::FlowFileOrder, || {
                format!(
                    "flow {}: its end (event {}) or end's slice is written before its start (event {}) or start's slice; DevTools drops or reverses such arrows",
                    f.id().text(strings), to.seq, from.seq
                )
            });
        }
        if to.ts_ns <= from.ts_ns {
            bad[i] = true;
            r.add(Rule::FlowBackwards, || {
                format!(
                    "flow {} ends at {} ns, not after its start at {} ns",
                    f.id().text(strings),
                    to.ts_ns,
                    from.ts_ns
                )
            });
        }
    }
    r.misbound_flows = bad.iter().filter(|&&b| b).count();
    r
}

fn describe(strings: &Strings, s: &Span) -> String {
    format!(
        "'{}' ({}) [{}, {}] ns",
        strings.get(s.name),
        strings.get(s.cat),
        s.ts_ns,
        s.end_ns()
    )
}

/// Zero length and nesting of one track's slices.
fn check_slices(strings: &Strings, t: &CompactTrack, r: &mut CheckReport) {
    let slices = sorted(t);
    for s in t.spans() {
        if s.dur_ns == 0 {
            r.add(Rule::ZeroLength, || {
                format!(
                    "track pid {} tid {}: slice {} has zero duration",
                    t.pid,
                    t.tid,
                    describe(strings, &s)
                )
            });
        }
    }
    let mut stack: Vec<&Span> = Vec::new();
    for s in &slices {
        while stack.last().is_some_and(|top| top.end_ns() <= s.ts_ns) {
            stack.pop();
        }
        if let Some(top) = stack.last() {
            if s.end_ns() > top.end_ns() {
                r.add(Rule::PartialOverlap, || {
                    format!(
                        "track pid {} tid {}: slice {} partially overlaps {}",
                        t.pid,
                        t.tid,
                        describe(strings, s),
                        describe(strings, top)
                    )
                });
                // Go on as if it had ended with the slice it overlaps.
                continue;
            }
        }
        stack.push(s);
    }
}

/// The track's slices by start, outer (longer) ones first.
fn sorted(t: &CompactTrack) -> Vec<Span> {
    let mut v: Vec<Span> = t.spans().collect();
    // Stable: equal slices keep their file order.
    v.sort_by_key(|s| (s.ts_ns, Reverse(s.end_ns())));
    v
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Start = 0,
    End = 1,
}

/// No holder slice found for a flow end, in the per-flow holder positions.
const NO_HOLDER: u32 = u32::MAX;

/// A flow end packed in 8 bytes: its track's rank among the flow ends' tracks, and
/// the flow's index and side (its time is the flow's).
fn end_key(rank: u32, flow: usize, side: Side) -> u64 {
    (u64::from(rank) << 32) | ((flow as u64) << 1) | side as u64
}

/// The binding rules at every flow start and end, one sweep per track; returns each
/// flow's holder slices' file positions (start, end), where there is one.
fn check_flow_ends(trace: &CompactTrace, bad: &mut [bool], r: &mut CheckReport) -> Vec<[u32; 2]> {
    let mut holders = vec![[NO_HOLDER; 2]; trace.flows.len()];
    let mut ranks: Vec<usize> = (0..trace.flow_tracks.len()).collect();
    ranks.sort_unstable_by_key(|&k| trace.flow_tracks[k]);
    let mut rank_of = vec![0u32; ranks.len()];
    for (rank, &k) in ranks.iter().enumerate() {
        rank_of[k] = rank as u32;
    }
    let mut ends: Vec<u64> = Vec::with_capacity(2 * trace.flows.len());
    for (i, f) in trace.flows.iter().enumerate() {
        for side in [Side::Start, Side::End] {
            ends.push(end_key(rank_of[f.track(side as usize)], i, side));
        }
    }
    let ts_of = |e: u64| trace.flows[((e as u32) >> 1) as usize].ts((e & 1) as usize);
    ends.sort_unstable_by_key(|&e| (e >> 32, ts_of(e), e as u32));
    let index: HashMap<(u32, u32), &CompactTrack> =
        trace.tracks.iter().map(|t| ((t.pid, t.tid), t)).collect();
    for run in ends.chunk_by(|a, b| a >> 32 == b >> 32) {
        let key = trace.flow_tracks[ranks[(run[0] >> 32) as usize]];
        let slices = index.get(&key).map(|t| sorted(t)).unwrap_or_default();
        let mut starts_at: HashMap<u64, Vec<&Span>> = HashMap::new();
        let mut ends_at: HashMap<u64, Vec<&Span>> = HashMap::new();
        for s in &slices {
            starts_at.entry(s.ts_ns).or_default().push(s);
            ends_at.entry(s.end_ns()).or_default().push(s);
        }
        let mut next = 0;
        let mut stack: Vec<&Span> = Vec::new();
        for &packed in run {
            let ts = ts_of(packed);
            let i = ((packed as u32) >> 1) as usize;
            let side = if packed & 1 == 0 {
                Side::Start
            } else {
                Side::End
            };
            while let Some(s) = slices.get(next).filter(|s| s.ts_ns <= ts) {
                while stack.last().is_some_and(|top| top.end_ns() <= s.ts_ns) {
                    stack.pop();
                }
                stack.push(s);
                next += 1;
            }
            while stack.last().is_some_and(|top| top.end_ns() < ts) {
                stack.pop();
            }
            let f = &trace.flows[i];
            let ctx = Ctx {
                strings: &trace.strings,
                f,
                at: trace.flow_end(f, side as usize),
                side,
            };
            let around = stack
                .iter()
                .rev()
                .find(|s| s.ts_ns < ts && ts < s.end_ns())
                .copied();
            let (found, holder) = binding_problems(&ctx, around, &starts_at, &ends_at, r);
            bad[i] |= found;
            holders[i][side as usize] =
                holder.map_or(NO_HOLDER, |h| h.min(u64::from(u32::MAX - 1)) as u32);
        }
    }
    holders
}

/// One flow end being checked.
struct Ctx<'a> {
    strings: &'a Strings,
    f: &'a CompactFlow,
    at: FlowEnd,
    side: Side,
}

impl Ctx<'_> {
    fn what(&self) -> String {
        let side = match self.side {
            Side::Start => "start",
            Side::End => "end",
        };
        format!(
            "flow {} {side} at pid {} tid {} {} ns",
            self.f.id().text(self.strings),
            self.at.pid,
            self.at.tid,
            self.at.ts_ns
        )
    }
}

/// Checks one flow end: whether it breaks a rule, and its holder's file position.
fn binding_problems(
    c: &Ctx<'_>,
    around: Option<&Span>,
    starts_at: &HashMap<u64, Vec<&Span>>,
    ends_at: &HashMap<u64, Vec<&Span>>,
    r: &mut CheckReport,
) -> (bool, Option<u64>) {
    let ts = c.at.ts_ns;
    let starting: &[&Span] = starts_at.get(&ts).map_or(&[], Vec::as_slice);
    let ending: &[&Span] = ends_at.get(&ts).map_or(&[], Vec::as_slice);
    let (mut found, holder) = holder_problems(c, starting, ending, r);
    let holder_seq = holder.map(|h| h.seq);
    let Some(around) = around else {
        r.add(Rule::FlowOutsideSlice, || {
            format!("{}: not strictly inside any slice", c.what())
        });
        return (true, holder_seq);
    };
    found |= around_problems(c, around, holder, r);
    (found, holder_seq)
}

/// The DevTools rules at a flow end: exactly one slice of the flow's category starts
/// there (the holder, returned), and no other slice starts or ends there.
fn holder_problems<'s>(
    c: &Ctx<'_>,
    starting: &[&'s Span],
    ending: &[&'s Span],
    r: &mut CheckReport,
) -> (bool, Option<&'s Span>) {
    let holders: Vec<&Span> = starting
        .iter()
        .filter(|s| s.cat == c.f.cat)
        .copied()
        .collect();
    let mut found = false;
    match holders.len() {
        0 => {
            found = true;
            r.add(Rule::FlowUnbound, || {
                format!(
                    "{}: no slice of category '{}' starts there (DevTools binds flow events by cat, pid, tid and ts)",
                    c.what(),
                    c.strings.get(c.f.cat)
                )
            });
        }
        1 => {}
        n => {
            found = true;
            r.add(Rule::FlowAmbiguous, || {
                format!(
                    "{}: {n} slices of category '{}' start there",
                    c.what(),
                    c.strings.get(c.f.cat)
                )
            });
        }
    }
    let holder = holders.first().copied();
    let others: Vec<&Span> = starting
        .iter()
        .filter(|s| holder.is_none_or(|h| !std::ptr::eq(**s, h)))
        .chain(ending.iter())
        .copied()
        .collect();
    if !others.is_empty() {
        found = true;
        r.add(Rule::FlowAtBoundary, || {
            let names: Vec<String> = others
                .iter()
                .take(4)
                .map(|s| describe(c.strings, s))
                .collect();
            format!(
                "{}: slices start or end there, so viewers may bind the arrow to them: {}",
                c.what(),
                names.join(", ")
            )
        });
    }
    (found, holder)
}

/// The rules on the slice `around` a flow end (the innermost strictly around it):
/// not idle, not ended by the holder, and for an arrow's end, the entry that handled
/// its message.
fn around_problems(c: &Ctx<'_>, around: &Span, holder: Option<&Span>, r: &mut CheckReport) -> bool {
    let describe = |s: &Span| describe(c.strings, s);
    let mut found = false;
    if c.strings.get(around.cat) == CAT_IDLE {
        found = true;
        r.add(Rule::FlowInIdle, || {
            format!("{}: inside idle slice {}", c.what(), describe(around))
        });
    }
    if let Some(h) = holder {
        if h.end_ns() >= around.end_ns() {
            found = true;
            r.add(Rule::HolderAtEnd, || {
                format!(
                    "{}: its slice {} reaches the end of {}",
                    c.what(),
                    describe(h),
                    describe(around)
                )
            });
        }
    }
    if c.side == Side::End && c.strings.get(around.cat) == CAT_ENTRY {
        if let (Some(m), Some(id)) = (around.msg_id, c.f.id().as_u64(c.strings)) {
            if m != id {
                found = true;
                r.add(Rule::FlowWrongEntry, || {
                    format!(
                        "{}: inside entry {} which handled message {m:#x}",
                        c.what(),
                        describe(around)
                    )
                });
            }
        }
    }
    found
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
