//! What a simulation measured, and the digest of its event log.

use serde::{Deserialize, Serialize};

/// Statistics of one sim run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    /// Envelopes that crossed the simulated network.
    pub messages: u64,
    /// Bytes those envelopes carried, headers included.
    pub bytes: u64,
    /// Events the simulator processed (arrivals, wake-ups, failures).
    pub events: u64,
    /// Events per wall second of the event loop.
    pub events_per_s: f64,
    /// Wall-clock seconds of the event loop.
    pub events_s: f64,
    /// Wall-clock seconds of the whole run: building PEs, the event loop, and
    /// collecting every PE's report.
    pub wall_s: f64,
    /// Virtual time when the last PE went idle for good, in microseconds.
    pub makespan_us: f64,
    /// Least busy time of any PE, microseconds.
    pub busy_min_us: f64,
    /// Mean busy time per PE, microseconds.
    pub busy_mean_us: f64,
    /// Most busy time of any PE, microseconds.
    pub busy_max_us: f64,
    /// PEs whose runtime was ever built (PEs nothing reached stay unbuilt).
    pub pes_built: u64,
    /// PEs stopped by `--sim-kill`.
    pub pes_killed: u64,
    /// Messages lost because their PE had failed (queued or arriving after).
    pub dropped: u64,
    /// Digest of the event log: equal for runs with the same program, flags and seed.
    pub digest: u64,
    /// Digest of every message handed to user code (virtual time, PE, chare,
    /// encoded payload), PE by PE; only under `--sim-digest`.
    pub delivery_digest: Option<u64>,
    /// Handler invocations in `delivery_digest` (a run of messages is one).
    pub delivered: u64,
    /// Digest of the deliveries since the last disk checkpoint's commit, or since a
    /// restarted job resumed, folded as `delivery_digest` is over the PEs that
    /// delivered any; only under `--sim-digest`. A job restarted on as many PEs from
    /// the checkpoint, resuming with `Ctx::resume_from_checkpoint`, has the digest
    /// the job that wrote it had since its commit.
    pub digest_since_commit: Option<u64>,
    /// Handler invocations in `digest_since_commit`.
    pub delivered_since_commit: u64,
    /// Virtual time of that commit or resume, microseconds.
    pub since_commit_us: Option<f64>,
}

impl SimStats {
    /// Human-readable lines, one figure each.
    pub fn to_text(&self) -> String {
        format!(
            "sim: {} events in {:.3} s ({:.0} events/s; {:.3} s wall in all), virtual makespan {:.3} us\n\
             sim: {} messages, {} bytes over the network\n\
             sim: busy per PE (us): min {:.3}, mean {:.3}, max {:.3}; {} PEs built\n\
             sim: {} PEs killed, {} messages dropped; event-log digest {:016x}",
            self.events,
            self.events_s,
            self.events_per_s,
            self.wall_s,
            self.makespan_us,
            self.messages,
            self.bytes,
            self.busy_min_us,
            self.busy_mean_us,
            self.busy_max_us,
            self.pes_built,
            self.pes_killed,
            self.dropped,
            self.digest
        ) + &self.delivery_digest.map_or_else(String::new, |d| {
            format!(
                "\nsim: {} deliveries, delivery digest {d:016x}",
                self.delivered
            )
        }) + &self
            .digest_since_commit
            .zip(self.since_commit_us)
            .map_or_else(String::new, |(d, at)| {
                format!(
                    "\nsim: since the commit or resume at {at:.3} us: {} deliveries, digest {d:016x}",
                    self.delivered_since_commit
                )
            })
    }
}

/// A running FNV-1a-style digest over 64-bit words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
}

impl Digest {
    /// Mix in one word.
    pub(crate) fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(0x0000_0100_0000_01b3);
        self.0 ^= self.0 >> 29;
    }

    /// The digest so far.
    pub(crate) fn value(self) -> u64 {
        self.0
    }
}
