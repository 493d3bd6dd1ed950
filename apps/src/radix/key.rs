//! The key types radix sort handles (u32 and u64) and the input they are drawn from.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// An unsigned integer key, sorted digit by digit from the least significant.
pub trait Key:
    Copy + Ord + Default + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
    /// Width in bits.
    const BITS: u32;
    /// Name on the command line (`u32`, `u64`).
    const NAME: &'static str;

    /// The key as a u64 (zero-extended).
    fn to_u64(self) -> u64;
    /// The low `Self::BITS` bits of `v`.
    fn from_u64(v: u64) -> Self;

    /// The `bits`-wide digit number `round`, counted from the least significant.
    fn digit(self, round: u32, bits: u32) -> usize {
        let shift = round * bits;
        if shift >= 64 {
            return 0;
        }
        ((self.to_u64() >> shift) & ((1u64 << bits) - 1)) as usize
    }
}

impl Key for u32 {
    const BITS: u32 = 32;
    const NAME: &'static str = "u32";
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}

impl Key for u64 {
    const BITS: u32 = 64;
    const NAME: &'static str = "u64";
    fn to_u64(self) -> u64 {
        self
    }
    fn from_u64(v: u64) -> Self {
        v
    }
}

/// Digits of `bits` bits a key of type `K` has (the sort's rounds).
pub fn rounds<K: Key>(bits: u32) -> u32 {
    K::BITS.div_ceil(bits)
}

/// splitmix64: the fixed mixing function the input and the fingerprints use.
pub use chorus_core::mix64 as mix;

/// PE `pe`'s `n` input keys, uniform over the key range, fixed by `seed`.
pub fn input<K: Key>(seed: u64, pe: u32, n: usize) -> Vec<K> {
    let base = mix(seed ^ mix(u64::from(pe)));
    (0..n as u64)
        .map(|i| K::from_u64(mix(base.wrapping_add(i))))
        .collect()
}

/// An order-free fingerprint of a multiset of keys: equal multisets give equal
/// fingerprints, and a lost, duplicated or altered key changes it (with high odds).
pub fn fingerprint<K: Key>(keys: &[K]) -> u64 {
    keys.iter()
        .fold(0u64, |acc, k| acc.wrapping_add(mix(k.to_u64() ^ 0x5EED)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_cover_the_key() {
        let k: u32 = 0xDEAD_BEEF;
        let bits = 5;
        let mut back = 0u64;
        for r in 0..rounds::<u32>(bits) {
            back |= (k.digit(r, bits) as u64) << (r * bits);
        }
        assert_eq!(back, u64::from(k));
        assert_eq!(rounds::<u32>(8), 4);
        assert_eq!(rounds::<u64>(11), 6);
        assert_eq!(rounds::<u64>(16), 4);
    }

    #[test]
    fn fingerprint_ignores_order_but_not_content() {
        let a: Vec<u64> = input(7, 3, 100);
        let mut b = a.clone();
        b.reverse();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b[0] ^= 1;
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_ne!(input::<u64>(7, 3, 10), input::<u64>(7, 4, 10));
        assert_eq!(input::<u32>(7, 3, 10), input::<u32>(7, 3, 10));
    }
}
