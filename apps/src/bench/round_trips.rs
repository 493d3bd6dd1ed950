//! Round trips timed one after another, as the ping-pong chares of the messaging and
//! mpi-pingpong benches take them.

/// The start of the current round trip and the lengths of the finished ones, in the
/// clock's seconds (`ctx.now()`).
#[derive(Debug, Clone, Default)]
pub struct RoundTrips {
    sent_at: f64,
    rtts: Vec<f64>,
}

impl RoundTrips {
    /// No round trip yet, room for `n`.
    pub fn with_capacity(n: usize) -> Self {
        RoundTrips {
            sent_at: 0.0,
            rtts: Vec::with_capacity(n),
        }
    }

    /// The ball left at `now`.
    pub fn start(&mut self, now: f64) {
        self.sent_at = now;
    }

    /// The ball came back at `now`: records the round trip; returns how many are done.
    pub fn back(&mut self, now: f64) -> usize {
        self.rtts.push(now - self.sent_at);
        self.rtts.len()
    }

    /// Seconds from the last start to `now`.
    pub fn since_start(&self, now: f64) -> f64 {
        now - self.sent_at
    }

    /// The finished round trips, in order.
    pub fn rtts(&self) -> &Vec<f64> {
        &self.rtts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_return_records_the_time_since_its_start() {
        let mut t = RoundTrips::with_capacity(2);
        t.start(1.0);
        assert_eq!(t.back(1.5), 1);
        t.start(2.0);
        assert_eq!(t.since_start(2.25), 0.25);
        assert_eq!(t.back(3.0), 2);
        assert_eq!(t.rtts(), &vec![0.5, 1.0]);
    }
}
