//! A map kept as a vector sorted by key, for tables that usually hold one or two
//! entries: a simulated PE's collections table holds one, in 16 bytes of heap where
//! a hash table takes 96, and it iterates in key order, the same on every run.

/// A map from `K` to `V` kept as a vector sorted by key.
pub(crate) struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap(Vec::new())
    }
}

impl<K: Ord, V> VecMap<K, V> {
    fn find(&self, key: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// The value of `key`, if any.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// The value of `key` to change, if any.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    /// True if `key` has a value.
    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Set `key`'s value, returning the one it replaced.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                // The first entry takes room for itself alone: most tables keep one.
                if self.0.capacity() == 0 {
                    self.0.reserve_exact(1);
                }
                self.0.insert(i, (key, value));
                None
            }
        }
    }
}

impl<K: Ord, V> std::ops::Index<&K> for VecMap<K, V> {
    type Output = V;

    /// The value of `key`, which must have one (as a `HashMap`'s index).
    fn index(&self, key: &K) -> &V {
        self.get(key).expect("a key in the map")
    }
}

impl<K, V> VecMap<K, V> {
    /// The keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// True when the map holds nothing.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Any sequence of inserts and lookups agrees with a BTreeMap's.
        #[test]
        fn agrees_with_a_btree_map(ops in prop::collection::vec((any::<bool>(), 0u8..16, any::<u32>()), 0..64)) {
            let mut m = VecMap::default();
            let mut b = BTreeMap::new();
            for (put, k, v) in ops {
                if put {
                    prop_assert_eq!(m.insert(k, v), b.insert(k, v));
                }
                prop_assert_eq!(m.contains_key(&k), b.contains_key(&k));
                prop_assert_eq!(m.get(&k), b.get(&k));
            }
            prop_assert!(m.keys().eq(b.keys()));
            prop_assert!(m.values().eq(b.values()));
            prop_assert_eq!(m.is_empty(), b.is_empty());
            if let Some((&k, _)) = b.iter().next() {
                *m.get_mut(&k).expect("present") += 0;
            }
        }
    }

    #[test]
    fn one_entry_takes_room_for_one() {
        let mut m = VecMap::default();
        m.insert(3u64, 7u64);
        assert_eq!(m.0.capacity(), 1);
        m.insert(1, 5);
        assert!(m.keys().eq([1, 3].iter()));
        assert_eq!(m[&3], 7);
    }
}
