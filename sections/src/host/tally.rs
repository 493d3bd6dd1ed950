//! The figures a creation's PEs add up on their way to the parent's root.

use crate::creation::protocol::Phase;
use serde::{Deserialize, Serialize};

/// One phase's share of a subtree's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTally {
    /// Messages of the phase between distinct PEs, counted as `Tally::messages` is.
    pub messages: u64,
    /// Messages of the phase a PE sent itself (not sent, not in `messages`; the
    /// paper's formulas count them).
    pub local: u64,
    /// Latest handling of one of its messages, seconds of the layer's clock (0: none).
    pub end: f64,
}

/// One phase of a finished creation, as reports give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// The phase (`Phase::name`), or `finish` for the time after the last message.
    pub name: String,
    /// Its messages between distinct PEs.
    pub messages: u64,
    /// Its messages a PE sent itself.
    pub local: u64,
    /// Microseconds from the previous phase's end (the first join for the first) to
    /// the last handling of one of its messages; the phases sum to `time_us`.
    pub time_us: f64,
}

/// Counts and times of a subtree of the parent, combined bottom-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// PEs of the parent counted.
    pub pes: u64,
    /// Members among them, per section made (one per colour).
    pub members: Vec<u64>,
    /// Creation messages they accounted for.
    pub messages: u64,
    /// Encoded bytes of those messages.
    pub bytes: u64,
    /// Earliest join, seconds of the layer's clock.
    pub first_join: f64,
    /// Latest join, seconds of the layer's clock.
    pub last_join: f64,
    /// Latest finish, seconds of the layer's clock.
    pub last_done: f64,
    /// Per phase, in `Phase::ALL` order.
    pub phases: [PhaseTally; 4],
}

impl Tally {
    /// One PE that joined section `colour` (if any) of `sections` at `now`.
    pub fn joined(colour: Option<u32>, sections: u32, now: f64) -> Self {
        let mut members = vec![0; sections as usize];
        if let Some(c) = colour.and_then(|c| members.get_mut(c as usize)) {
            *c = 1;
        }
        Tally {
            pes: 1,
            members,
            messages: 0,
            bytes: 0,
            first_join: now,
            last_join: now,
            last_done: now,
            phases: [PhaseTally::default(); 4],
        }
    }

    /// Count one message of `bytes`.
    pub fn message(&mut self, bytes: u64) {
        self.messages += 1;
        self.bytes += bytes;
    }

    /// Count one message of `bytes` of `phase`.
    pub fn phase_message(&mut self, phase: Phase, bytes: u64) {
        self.message(bytes);
        self.phases[phase.index()].messages += 1;
    }

    /// Count one message of `phase` a PE sent itself.
    pub fn phase_local(&mut self, phase: Phase) {
        self.phases[phase.index()].local += 1;
    }

    /// A message of `phase` was handled at `now`.
    pub fn phase_seen(&mut self, phase: Phase, now: f64) {
        let p = &mut self.phases[phase.index()];
        p.end = p.end.max(now);
    }

    /// The phases with any message, in order, then `finish` (the last message to the
    /// last finish): each phase's time runs from the previous one's end, so they sum
    /// to `time_us`.
    pub fn phase_reports(&self) -> Vec<PhaseReport> {
        let mut out = Vec::new();
        let mut prev = self.first_join;
        for phase in Phase::ALL {
            let t = &self.phases[phase.index()];
            if t.messages + t.local == 0 {
                continue;
            }
            let end = t.end.clamp(prev, self.last_done.max(prev));
            out.push(PhaseReport {
                name: phase.name().into(),
                messages: t.messages,
                local: t.local,
                time_us: (end - prev) * 1e6,
            });
            prev = end;
        }
        out.push(PhaseReport {
            name: "finish".into(),
            messages: 0,
            local: 0,
            time_us: (self.last_done.max(prev) - prev) * 1e6,
        });
        out
    }

    /// Add a child subtree's tally.
    pub fn merge(&mut self, other: &Tally) {
        self.pes += other.pes;
        for (m, o) in self.members.iter_mut().zip(&other.members) {
            *m += o;
        }
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.first_join = self.first_join.min(other.first_join);
        self.last_join = self.last_join.max(other.last_join);
        self.last_done = self.last_done.max(other.last_done);
        for (p, o) in self.phases.iter_mut().zip(&other.phases) {
            p.messages += o.messages;
            p.local += o.local;
            p.end = p.end.max(o.end);
        }
    }

    /// Microseconds from the first join to the last join (how long the start took
    /// to reach every PE).
    pub fn join_spread_us(&self) -> f64 {
        (self.last_join - self.first_join) * 1e6
    }

    /// Microseconds from the first join to the last finish.
    pub fn time_us(&self) -> f64 {
        (self.last_done - self.first_join) * 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_widens_the_time_span() {
        let mut a = Tally::joined(Some(0), 1, 2.0);
        a.message(10);
        a.last_done = 5.0;
        let mut b = Tally::joined(None, 1, 1.0);
        b.message(3);
        b.message(4);
        b.last_done = 3.0;
        a.merge(&b);
        assert_eq!(
            (a.pes, a.members.clone(), a.messages, a.bytes),
            (2, vec![1], 3, 17)
        );
        let mut c = Tally::joined(Some(1), 2, 0.0);
        c.merge(&Tally::joined(Some(1), 2, 0.0));
        assert_eq!(c.members, vec![0, 2]);
        assert_eq!(a.time_us(), 4e6);
        assert_eq!(a.join_spread_us(), 1e6);
    }

    #[test]
    fn phases_run_back_to_back_and_sum_to_the_total() {
        let mut a = Tally::joined(Some(0), 1, 1.0);
        a.phase_message(Phase::Up, 4);
        a.phase_seen(Phase::Up, 2.0);
        a.phase_local(Phase::Answer);
        a.phase_seen(Phase::Answer, 1.5);
        a.last_done = 4.0;
        let r = a.phase_reports();
        let names: Vec<&str> = r.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["up", "answer", "finish"]);
        let times: Vec<f64> = r.iter().map(|p| p.time_us).collect();
        assert_eq!(times, [1e6, 0.0, 2e6]);
        assert_eq!(times.iter().sum::<f64>(), a.time_us());
        assert_eq!((r[0].messages, r[1].local), (1, 1));
    }
}
