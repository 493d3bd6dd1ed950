//! What one radix sort run is asked to do.

use chorus_sections::collectives::Allgather;
use serde::{Deserialize, Serialize};

/// Most bits per digit (2^16 buckets: the histograms are already 512 KiB per PE).
pub const MAX_RADIX_BITS: u32 = 16;

/// Parameters of one sort.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RadixParams {
    /// Bits per digit: 2^bits buckets, one round per digit.
    pub radix_bits: u32,
    /// Keys every PE starts with.
    pub keys_per_pe: usize,
    /// Keys moved per handler in the local redistribution, so the allgather's
    /// messages are handled between chunks (the progress granularity).
    pub chunk_keys: usize,
    /// Compute time charged with `ctx.work` per key per pass (counting, moving,
    /// placing received keys) and per histogram entry summed, in nanoseconds; 0
    /// charges nothing (on real layers the real work is the cost).
    pub key_ns: f64,
    /// The histogram allgather's algorithm.
    pub allgather: Allgather,
    /// Wait for the allgather before the local key movement (the baseline).
    pub blocking: bool,
}

impl RadixParams {
    /// Check what the command line cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_RADIX_BITS).contains(&self.radix_bits) {
            return Err(format!(
                "--radix-bits must be in 1..={MAX_RADIX_BITS}, got {}",
                self.radix_bits
            ));
        }
        if self.chunk_keys == 0 {
            return Err("--chunk-keys must be at least 1".into());
        }
        if !(self.key_ns.is_finite() && self.key_ns >= 0.0) {
            return Err(format!(
                "--key-ns must be a finite number >= 0, got {}",
                self.key_ns
            ));
        }
        if let Allgather::Bruck(0) | Allgather::StandardExchange(0) = self.allgather {
            return Err("--ports must be at least 1".into());
        }
        Ok(())
    }

    /// Buckets per digit.
    pub fn buckets(&self) -> usize {
        1 << self.radix_bits
    }
}
