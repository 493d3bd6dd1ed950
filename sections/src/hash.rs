//! A fixed keyed permutation of 0..n, the hash that picks intermediary PEs.
//!
//! A permutation rather than an ordinary hash: no PE is the intermediary of two ranks
//! of one section, which turns the paper's O(k) state per PE from an expectation into
//! a guarantee. It is a balanced Feistel network over the smallest even power of two
//! that covers n, restricted to 0..n by cycle walking; every process computes the same
//! values (no per-process seeds).

pub use chorus_core::mix64;

const ROUNDS: u64 = 4;

fn feistel(x: u64, half_bits: u32, key: u64) -> u64 {
    let mask = (1u64 << half_bits) - 1;
    let (mut left, mut right) = (x >> half_bits, x & mask);
    for round in 0..ROUNDS {
        let f = mix64(key ^ mix64(right ^ (round << 56))) & mask;
        (left, right) = (right, left ^ f);
    }
    (left << half_bits) | right
}

/// The image of `x` (< n) under the permutation of 0..n chosen by `key`.
pub fn permute(x: u32, n: u32, key: u64) -> u32 {
    assert!(x < n, "permute: {x} is outside 0..{n}");
    let bits = 64 - u64::from(n - 1).leading_zeros();
    let half_bits = bits.div_ceil(2).max(1);
    let mut y = feistel(u64::from(x), half_bits, key);
    while y >= u64::from(n) {
        y = feistel(y, half_bits, key);
    }
    y as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn is_a_bijection(n in 1u32..5000, key: u64) {
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = permute(x, n, key);
                prop_assert!(y < n);
                prop_assert!(!seen[y as usize], "{} hit twice", y);
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn depends_on_the_key_and_is_not_the_identity() {
        let a: Vec<u32> = (0..1000).map(|x| permute(x, 1000, 1)).collect();
        let b: Vec<u32> = (0..1000).map(|x| permute(x, 1000, 2)).collect();
        assert_ne!(a, b);
        assert!(
            a.iter()
                .enumerate()
                .filter(|(i, &y)| *i as u32 == y)
                .count()
                < 20
        );
    }
}
