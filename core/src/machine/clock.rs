//! The wall clock of PEs that share a process (the threads layer, the mpi layer's SMP
//! workers): the CPU's time-stamp counter through `quanta`, calibrated once per
//! process, where the CPU has an invariant one (the OS clock otherwise).
//!
//! A traced PE reads its clock four times per message it handles (arrival, send,
//! entry end, idle), so the read is on the path of every traced message; reading the
//! counter skips the OS clock's conversion from its own counter read.

/// A clock started once for every PE of a process, so their times agree.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WallClock {
    start: quanta::Instant,
}

impl WallClock {
    /// A clock reading 0 now.
    pub(crate) fn start() -> Self {
        WallClock {
            start: quanta::Instant::now(),
        }
    }

    /// Seconds since `start`.
    pub(crate) fn seconds(&self) -> f64 {
        quanta::Instant::now()
            .saturating_duration_since(self.start)
            .as_secs_f64()
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
