//! Hash maps with fixed keys: iteration order is the same in every run, so the sim
//! layer's event order (and every result that depends on it) is reproducible.

use std::hash::BuildHasherDefault;

/// A hash map keyed by ahash with fixed keys.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<ahash::AHasher>>;
