//! Hash maps with fixed keys: iteration order is the same in every run and in every
//! process, so the sim layer's event order (and every result that depends on it) is
//! reproducible.
//!
//! `ahash::AHasher::default()` is not enough: with ahash's default `runtime-rng`
//! feature (which any crate in the build may switch on) its "fixed" keys are drawn
//! from the OS once per process, so two processes iterated an array's elements, and
//! so delivered a broadcast, in different orders.

use std::hash::{BuildHasher, Hasher};

/// splitmix64's output function: a fixed 64-bit mixer, the same in every process.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Builds ahash hashers from keys written here, never from the OS or the clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct FixedState;

/// The keys of every `FixedState` hasher (the first 32 bytes of pi's fraction).
const KEYS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

impl BuildHasher for FixedState {
    type Hasher = ahash::AHasher;

    #[inline]
    fn build_hasher(&self) -> ahash::AHasher {
        ahash::RandomState::with_seeds(KEYS[0], KEYS[1], KEYS[2], KEYS[3]).build_hasher()
    }
}

/// A hash map whose iteration order depends only on what was inserted.
pub type HashMap<K, V> = std::collections::HashMap<K, V, FixedState>;
/// A hash set iterated in the same order in every run and process.
pub type HashSet<K> = std::collections::HashSet<K, FixedState>;

/// FNV-1a over bytes, 64-bit: a digest that is the same on every machine and in
/// every process (ahash's output may depend on the CPU's AES support).
#[derive(Debug, Clone, Copy)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv64 {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Little-endian, so the digest of a number is the same on every machine.
    fn write_u64(&mut self, v: u64) {
        self.write(&v.to_le_bytes());
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        let mut h = Fnv64::default();
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
        let mut h = Fnv64::default();
        h.write(b"foobar");
        assert_eq!(h.finish(), 0x8594_4171_f739_67e8);
    }
}
