//! One PE's local steps of a radix round: bucket counts, then the local
//! redistribution that moves keys into bucket order, in chunks so that the
//! histogram allgather can progress between them.

use super::key::Key;

/// Counts of this PE's keys per value of digit `round` (`1 << bits` buckets).
pub fn counts<K: Key>(keys: &[K], round: u32, bits: u32) -> Vec<u64> {
    let mut h = vec![0u64; 1 << bits];
    for k in keys {
        h[k.digit(round, bits)] += 1;
    }
    h
}

/// A local redistribution in progress: keys go, stably, to their bucket's next slot.
#[derive(Debug, Clone)]
pub struct Scatter<K> {
    round: u32,
    bits: u32,
    /// Next free slot of every bucket.
    cursors: Vec<usize>,
    /// Where bucket b starts (the exclusive prefix sum of the counts).
    starts: Vec<usize>,
    out: Vec<K>,
    /// Keys moved so far.
    done: usize,
}

impl<K: Key> Scatter<K> {
    /// Prepare to move `n` keys by digit `round`, with this PE's `counts`.
    pub fn new(counts: &[u64], round: u32, bits: u32, n: usize) -> Self {
        let mut starts = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        for &c in counts {
            starts.push(at);
            at += c as usize;
        }
        debug_assert_eq!(at, n, "counts add up to the keys");
        Scatter {
            round,
            bits,
            cursors: starts.clone(),
            starts,
            out: vec![K::default(); n],
            done: 0,
        }
    }

    /// Move up to `max` more keys of `keys`; returns how many moved.
    pub fn step(&mut self, keys: &[K], max: usize) -> usize {
        let end = (self.done + max).min(keys.len());
        for &k in &keys[self.done..end] {
            let b = k.digit(self.round, self.bits);
            self.out[self.cursors[b]] = k;
            self.cursors[b] += 1;
        }
        let moved = end - self.done;
        self.done = end;
        moved
    }

    /// True once every key has moved.
    pub fn finished(&self) -> bool {
        self.done == self.out.len()
    }

    /// The keys in bucket order and where each bucket starts.
    pub fn into_parts(self) -> (Vec<K>, Vec<usize>) {
        (self.out, self.starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::radix::key::input;

    #[test]
    fn chunked_scatter_is_a_stable_counting_sort_by_the_digit() {
        let keys: Vec<u32> = input(5, 0, 1000);
        for chunk in [1, 7, 1000, 5000] {
            let h = counts(&keys, 1, 4);
            assert_eq!(h.iter().sum::<u64>(), 1000);
            let mut s = Scatter::new(&h, 1, 4, keys.len());
            while !s.finished() {
                assert!(s.step(&keys, chunk) > 0);
            }
            let (out, starts) = s.into_parts();
            let mut want = keys.clone();
            want.sort_by_key(|k| k.digit(1, 4));
            assert_eq!(out, want, "chunk {chunk}");
            assert_eq!(starts.len(), 16);
            assert_eq!(starts[0], 0);
        }
    }

    #[test]
    fn no_keys_is_finished_at_once() {
        let s = Scatter::<u64>::new(&counts::<u64>(&[], 0, 3), 0, 3, 0);
        assert!(s.finished());
    }
}
