//! How an idle rank waits for work: spin, then yield, then nap.

use std::time::Duration;

/// Idle polls spent spinning, then yielding, before the rank starts to sleep.
const SPIN_POLLS: u32 = 2_000;
const YIELD_POLLS: u32 = 200;
/// Longest sleep of an idle rank: bounds the latency a sleeping rank adds.
const MAX_SLEEP: Duration = Duration::from_micros(500);

/// How an idle rank waits: spin, then yield, then sleep with growing naps.
pub(crate) struct Backoff(pub(crate) u32);

impl Backoff {
    /// Start over, after the rank found work.
    pub(crate) fn reset(&mut self) {
        self.0 = 0;
    }

    /// Spin, yield or sleep once.
    pub(crate) fn wait(&mut self) {
        if let Some(nap) = self.next() {
            std::thread::sleep(nap);
        }
    }

    /// Spin or yield once, or say how long to sleep (the caller may wait on
    /// something else meanwhile).
    pub(crate) fn next(&mut self) -> Option<Duration> {
        self.0 = self.0.saturating_add(1);
        if self.0 <= SPIN_POLLS {
            std::hint::spin_loop();
            None
        } else if self.0 <= SPIN_POLLS + YIELD_POLLS {
            std::thread::yield_now();
            None
        } else {
            let naps = self.0 - SPIN_POLLS - YIELD_POLLS;
            Some(Duration::from_micros(u64::from(naps.min(500))).min(MAX_SLEEP))
        }
    }
}
