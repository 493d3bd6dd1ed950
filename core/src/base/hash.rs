//! Hash maps with fixed keys: iteration order is the same in every run, so the sim
//! layer's event order (and every result that depends on it) is reproducible.

use std::hash::BuildHasherDefault;

/// splitmix64's output function: a fixed 64-bit mixer, the same in every process.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash map keyed by ahash with fixed keys.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<ahash::AHasher>>;
