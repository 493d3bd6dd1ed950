//! The figures a creation's PEs add up on their way to the parent's root.

use serde::{Deserialize, Serialize};

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
        }
    }

    /// Count one message of `bytes`.
    pub fn message(&mut self, bytes: u64) {
        self.messages += 1;
        self.bytes += bytes;
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
}
