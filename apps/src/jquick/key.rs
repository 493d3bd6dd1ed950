//! Sort keys: u64 and f64 map to u64 words whose unsigned order is the keys' total
//! order, so the distributed sort works on one element type for both.

use serde::{Deserialize, Serialize};

/// A sortable element: the key's ordered word and the element's unique origin (its
/// global index in the input), which breaks ties so equal keys still split evenly.
pub type Elem = (u64, u64);

/// Which key type a run sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyType {
    /// Unsigned 64-bit integers.
    U64,
    /// 64-bit floats, in `f64::total_cmp` order.
    F64,
}

impl std::str::FromStr for KeyType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "u64" => Ok(KeyType::U64),
            "f64" => Ok(KeyType::F64),
            _ => Err(format!("unknown key type {s:?}: use u64 or f64")),
        }
    }
}

impl KeyType {
    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::U64 => "u64",
            KeyType::F64 => "f64",
        }
    }
}

/// A key type the sort handles: an order-preserving map to and from u64 words.
pub trait SortKey: Copy + PartialOrd + std::fmt::Debug {
    /// The word whose unsigned order is this key's order.
    fn ordered(self) -> u64;
    /// The key of an ordered word.
    fn from_ordered(w: u64) -> Self;
}

impl SortKey for u64 {
    fn ordered(self) -> u64 {
        self
    }
    fn from_ordered(w: u64) -> Self {
        w
    }
}

const SIGN: u64 = 1 << 63;

impl SortKey for f64 {
    fn ordered(self) -> u64 {
        let b = self.to_bits();
        // Negative floats order backwards by their bits: flip them all; positives
        // just move above every negative.
        if b & SIGN != 0 {
            !b
        } else {
            b | SIGN
        }
    }
    fn from_ordered(w: u64) -> Self {
        let b = if w & SIGN != 0 { w & !SIGN } else { !w };
        f64::from_bits(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_words_keep_total_order_and_round_trip() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(w[0].ordered() < w[1].ordered(), "{:?}", w);
        }
        for x in xs {
            assert_eq!(f64::from_ordered(x.ordered()).to_bits(), x.to_bits());
        }
        assert_eq!(u64::from_ordered(7u64.ordered()), 7);
    }
}
