//! The figures a creation's PEs add up on their way to the parent's root.

use serde::{Deserialize, Serialize};

/// Counts and times of a subtree of the parent, combined bottom-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// PEs of the parent counted.
    pub pes: u64,
    /// Members among them.
    pub members: u64,
    /// Creation messages they accounted for.
    pub messages: u64,
    /// Encoded bytes of those messages.
    pub bytes: u64,
    /// Earliest join, seconds of the layer's clock.
    pub first_join: f64,
    /// Latest finish, seconds of the layer's clock.
    pub last_done: f64,
}

impl Tally {
    /// One PE that joined at `now`.
    pub fn joined(member: bool, now: f64) -> Self {
        Tally {
            pes: 1,
            members: u64::from(member),
            messages: 0,
            bytes: 0,
            first_join: now,
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
        self.members += other.members;
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.first_join = self.first_join.min(other.first_join);
        self.last_done = self.last_done.max(other.last_done);
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
        let mut a = Tally::joined(true, 2.0);
        a.message(10);
        a.last_done = 5.0;
        let mut b = Tally::joined(false, 1.0);
        b.message(3);
        b.message(4);
        b.last_done = 3.0;
        a.merge(&b);
        assert_eq!((a.pes, a.members, a.messages, a.bytes), (2, 1, 3, 17));
        assert_eq!(a.time_us(), 4e6);
    }
}
