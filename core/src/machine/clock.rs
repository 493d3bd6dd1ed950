//! The wall clock of PEs that share a process (the threads layer, the mpi layer's SMP
//! workers): the CPU's time-stamp counter through `quanta`, calibrated once per
//! process, where the CPU has an invariant one (the OS clock otherwise).
//!
//! A traced PE reads its clock four times per message it handles (arrival, send,
//! entry end, idle), so the read is on the path of every traced message; reading the
//! counter skips the OS clock's conversion from its own counter read.

use std::sync::OnceLock;

/// The process's calibrated counter, shared by every clock so they all read the same.
static COUNTER: OnceLock<quanta::Clock> = OnceLock::new();

/// A clock started once for every PE of a process, so their times agree.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WallClock {
    counter: &'static quanta::Clock,
    /// The counter's raw reading at the start.
    start: u64,
}

impl WallClock {
    /// A clock reading 0 now.
    pub(crate) fn start() -> Self {
        let counter = COUNTER.get_or_init(quanta::Clock::new);
        WallClock {
            counter,
            start: counter.raw(),
        }
    }

    /// Seconds since `start`.
    pub(crate) fn seconds(&self) -> f64 {
        // The raw reading scaled once, straight to seconds: `quanta::Instant` scales it
        // to an instant, then a `Duration` (an integer division) and then seconds.
        let ns = self.counter.delta_as_nanos(self.start, self.counter.raw());
        ns as f64 * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::WallClock;
    use std::time::{Duration, Instant};

    #[test]
    fn the_clock_keeps_wall_time_and_never_goes_back() {
        let clock = WallClock::start();
        let std_start = Instant::now();
        let mut last = clock.seconds();
        for _ in 0..1000 {
            let t = clock.seconds();
            assert!(t >= last, "{t} after {last}");
            last = t;
        }
        std::thread::sleep(Duration::from_millis(20));
        let (ours, os) = (clock.seconds(), std_start.elapsed().as_secs_f64());
        assert!(ours >= 0.02, "{ours} s after a 20 ms sleep");
        // Both clocks started within microseconds of each other and count the same
        // seconds; a loaded machine can only stretch the gap between the two reads.
        assert!(
            (ours - os).abs() < 0.01,
            "counter {ours} s, OS clock {os} s"
        );
    }
}
