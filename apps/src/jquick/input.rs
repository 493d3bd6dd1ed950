//! Input generation: element g of the global input is a fixed function of the seed
//! and g, so any PE makes its own part and a checker can remake any element.

use super::key::{Elem, KeyType, SortKey};
use chorus_sections::hash::mix64;
use serde::{Deserialize, Serialize};

/// Distinct values of the `duplicates` input.
const DUPLICATE_VALUES: u64 = 16;
/// Largest value of the `zipf` input.
const ZIPF_MAX: f64 = (1u64 << 20) as f64;

/// What the input looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputKind {
    /// Independent uniform keys.
    Uniform,
    /// Already sorted (key = global index).
    Sorted,
    /// Sorted backwards.
    Reverse,
    /// Sixteen distinct values, drawn uniformly.
    Duplicates,
    /// Every key equal.
    Equal,
    /// Zipf-like (P(k) ∝ 1/k over 1..=2^20: log-uniform draws), many repeats of small keys.
    Zipf,
}

impl InputKind {
    /// Every kind, for tests and sweeps.
    pub const ALL: [InputKind; 6] = [
        InputKind::Uniform,
        InputKind::Sorted,
        InputKind::Reverse,
        InputKind::Duplicates,
        InputKind::Equal,
        InputKind::Zipf,
    ];

    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            InputKind::Uniform => "uniform",
            InputKind::Sorted => "sorted",
            InputKind::Reverse => "reverse",
            InputKind::Duplicates => "duplicates",
            InputKind::Equal => "equal",
            InputKind::Zipf => "zipf",
        }
    }
}

impl std::str::FromStr for InputKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        InputKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown input {s:?}: use uniform, sorted, reverse, duplicates, equal or zipf"
                )
            })
    }
}

/// A uniform draw in [0, 1) from a 64-bit word.
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The key of element `g` of `n`, as the key type's ordered word.
pub fn key(kind: InputKind, keys: KeyType, seed: u64, n: u64, g: u64) -> u64 {
    let r = mix64(seed ^ mix64(g ^ 0x1A2B_3C4D));
    match (kind, keys) {
        (InputKind::Uniform, KeyType::U64) => r,
        (InputKind::Uniform, KeyType::F64) => unit(r).ordered(),
        (InputKind::Sorted, KeyType::U64) => g,
        (InputKind::Sorted, KeyType::F64) => (g as f64).ordered(),
        (InputKind::Reverse, KeyType::U64) => n - 1 - g,
        (InputKind::Reverse, KeyType::F64) => ((n - 1 - g) as f64).ordered(),
        (InputKind::Duplicates, KeyType::U64) => r % DUPLICATE_VALUES,
        (InputKind::Duplicates, KeyType::F64) => ((r % DUPLICATE_VALUES) as f64 - 7.5).ordered(),
        (InputKind::Equal, KeyType::U64) => 42,
        (InputKind::Equal, KeyType::F64) => (-1.5f64).ordered(),
        (InputKind::Zipf, t) => {
            let k = (unit(r) * (ZIPF_MAX + 1.0).ln()).exp().floor().max(1.0);
            match t {
                KeyType::U64 => k as u64,
                KeyType::F64 => k.ordered(),
            }
        }
    }
}

/// Elements `first..first+count` of the input.
pub fn generate(
    kind: InputKind,
    keys: KeyType,
    seed: u64,
    n: u64,
    first: u64,
    count: u64,
) -> Vec<Elem> {
    (first..first + count)
        .map(|g| (key(kind, keys, seed, n, g), g))
        .collect()
}

/// An order-free fingerprint of a multiset of elements (sum of mixed pairs).
pub fn fingerprint(elems: &[Elem]) -> u64 {
    elems.iter().fold(0u64, |acc, &(k, g)| {
        acc.wrapping_add(mix64(k ^ mix64(g ^ 0xF1A6)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_keys_are_what_they_say() {
        for k in InputKind::ALL {
            assert_eq!(k.name().parse::<InputKind>(), Ok(k));
        }
        assert!("nope".parse::<InputKind>().is_err());
        let n = 100;
        let sorted = generate(InputKind::Sorted, KeyType::U64, 1, n, 0, n);
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        let rev = generate(InputKind::Reverse, KeyType::F64, 1, n, 0, n);
        assert!(rev.windows(2).all(|w| w[0].0 > w[1].0));
        let eq = generate(InputKind::Equal, KeyType::U64, 1, n, 0, n);
        assert!(eq.iter().all(|e| e.0 == 42));
        let d = generate(InputKind::Duplicates, KeyType::U64, 3, 1000, 0, 1000);
        assert!(d.iter().all(|e| e.0 < DUPLICATE_VALUES));
        let z = generate(InputKind::Zipf, KeyType::U64, 3, 1000, 0, 1000);
        assert!(z.iter().all(|e| (1..=1 << 20).contains(&e.0)));
        assert!(z.iter().filter(|e| e.0 == 1).count() > 20);
        let a = generate(InputKind::Uniform, KeyType::U64, 5, n, 10, 20);
        assert_eq!(
            a,
            generate(InputKind::Uniform, KeyType::U64, 5, n, 0, n)[10..30]
        );
    }
}
