//! Checks that a trace is well formed the way Perfetto and chrome://tracing need it.

use crate::analysis::read::{FlowEnd, Slice, Trace, Track};

/// Every problem found in `trace`, as sentences; empty means well formed.
///
/// Checked: every track with events is named; slices on a track are in start order
/// and nest (two slices are disjoint or one contains the other; touching ends are
/// fine); instants are in time order; every flow has both ends, and each end lies
/// inside a slice of its track.
pub fn validate(trace: &Trace) -> Vec<String> {
    let mut problems = Vec::new();
    if trace.dangling_flow_events > 0 {
        problems.push(format!(
            "{} flow events have no partner",
            trace.dangling_flow_events
        ));
    }
    for t in &trace.tracks {
        let busy = !t.slices.is_empty() || !t.instants.is_empty();
        if busy && t.thread_name.is_none() {
            problems.push(format!(
                "track pid {} tid {} has no thread_name",
                t.pid, t.tid
            ));
        }
        check_nesting(t, &mut problems);
        if let Some(w) = t.instants.windows(2).find(|w| w[1].ts_ns < w[0].ts_ns) {
            problems.push(format!(
                "track pid {} tid {}: instant at {} ns after one at {} ns",
                t.pid, t.tid, w[1].ts_ns, w[0].ts_ns
            ));
        }
    }
    for f in &trace.flows {
        for (end, what) in [(&f.from, "start"), (&f.to, "end")] {
            if !enclosed(trace, end) {
                problems.push(format!(
                    "flow {} {what} at pid {} tid {} {} ns is not inside a slice",
                    f.id, end.pid, end.tid, end.ts_ns
                ));
            }
        }
        if f.to.ts_ns < f.from.ts_ns {
            problems.push(format!("flow {} goes backwards in time", f.id));
        }
    }
    problems
}

fn enclosed(trace: &Trace, at: &FlowEnd) -> bool {
    trace.track(at.pid, at.tid).is_some_and(|t| {
        t.slices
            .iter()
            .any(|s| s.ts_ns <= at.ts_ns && at.ts_ns <= s.end_ns())
    })
}

fn check_nesting(t: &Track, problems: &mut Vec<String>) {
    let mut stack: Vec<&Slice> = Vec::new();
    let mut prev_start = 0u64;
    for s in &t.slices {
        if s.ts_ns < prev_start {
            problems.push(format!(
                "track pid {} tid {}: slice '{}' at {} ns written after one starting at {} ns",
                t.pid, t.tid, s.name, s.ts_ns, prev_start
            ));
            return;
        }
        prev_start = s.ts_ns;
        while stack.last().is_some_and(|top| top.end_ns() <= s.ts_ns) {
            stack.pop();
        }
        if let Some(top) = stack.last() {
            if s.end_ns() > top.end_ns() {
                problems.push(format!(
                    "track pid {} tid {}: slice '{}' [{}, {}] ns partially overlaps '{}' [{}, {}] ns",
                    t.pid,
                    t.tid,
                    s.name,
                    s.ts_ns,
                    s.end_ns(),
                    top.name,
                    top.ts_ns,
                    top.end_ns()
                ));
                return;
            }
        }
        stack.push(s);
    }
}
