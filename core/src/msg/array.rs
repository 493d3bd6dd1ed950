//! Chare-array indices, shapes and placement maps.

use crate::base::ids::{IndexKey, Pe};
use crate::msg::payload::Message;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;

/// A type that indexes the elements of a chare array.
pub trait ArrayIndex: Message + Eq + Hash + Debug {
    /// Position of the element in contributor order: Gather and Concat reductions list
    /// elements by it, and maps place dense arrays by it. Must be unique per index.
    fn order_key(&self) -> u64;

    /// The encoded index, the element's identity: its bincode encoding (an override
    /// must give the same bytes, as the built-in index types do without bincode).
    fn key(&self) -> IndexKey {
        IndexKey::encode(self)
    }
}

impl ArrayIndex for usize {
    fn order_key(&self) -> u64 {
        *self as u64
    }
    fn key(&self) -> IndexKey {
        IndexKey::new(&(*self as u64).to_le_bytes())
    }
}

impl ArrayIndex for u64 {
    fn order_key(&self) -> u64 {
        *self
    }
    fn key(&self) -> IndexKey {
        IndexKey::new(&self.to_le_bytes())
    }
}

impl ArrayIndex for u32 {
    fn order_key(&self) -> u64 {
        u64::from(*self)
    }
    fn key(&self) -> IndexKey {
        IndexKey::new(&self.to_le_bytes())
    }
}

impl ArrayIndex for (usize, usize) {
    fn order_key(&self) -> u64 {
        ((self.0 as u64) << 32) | (self.1 as u64 & 0xffff_ffff)
    }
    fn key(&self) -> IndexKey {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&(self.0 as u64).to_le_bytes());
        b[8..].copy_from_slice(&(self.1 as u64).to_le_bytes());
        IndexKey::new(&b)
    }
}

impl ArrayIndex for (u32, u32) {
    fn order_key(&self) -> u64 {
        (u64::from(self.0) << 32) | u64::from(self.1)
    }
    fn key(&self) -> IndexKey {
        let mut b = [0; 8];
        b[..4].copy_from_slice(&self.0.to_le_bytes());
        b[4..].copy_from_slice(&self.1.to_le_bytes());
        IndexKey::new(&b)
    }
}

/// Where an array element's messages go: its encoded index and its order key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ElemAddr {
    /// Encoded index (the element's identity).
    pub key: IndexKey,
    /// `ArrayIndex::order_key` of the index.
    pub order: u64,
}

impl ElemAddr {
    /// Address of a typed index.
    pub fn of<I: ArrayIndex>(index: &I) -> Self {
        ElemAddr {
            key: index.key(),
            order: index.order_key(),
        }
    }
}

/// Which indices an array starts with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Shape {
    /// Indices 0..n (index type usize).
    Dense1(u64),
    /// Indices (0..x, 0..y) (index type (usize, usize)).
    Dense2(u64, u64),
    /// An explicit list of indices of any type.
    List(Vec<ElemAddr>),
}

/// A dense shape no array can have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A 2-D side does not fit the 32 bits its order key gives it, or x * y
    /// elements overflow.
    #[error(
        "a {x} x {y} array is too large: each side must be below 2^32 and x * y at most 2^64 - 1"
    )]
    TooLarge {
        /// Rows.
        x: u64,
        /// Columns.
        y: u64,
    },
}

impl Shape {
    /// Check a shape made by a caller or read from the wire: a 2-D index's order
    /// key holds each side in 32 bits, and the element count must fit 64 bits.
    pub(crate) fn check(&self) -> Result<(), ShapeError> {
        match *self {
            Shape::Dense2(x, y)
                if x > u64::from(u32::MAX) + 1
                    || y > u64::from(u32::MAX) + 1
                    || x.checked_mul(y).is_none() =>
            {
                Err(ShapeError::TooLarge { x, y })
            }
            _ => Ok(()),
        }
    }

    /// Row-major position of an order key in a dense shape, with the shape's size
    /// (saturating: an unchecked shape must not panic here).
    fn dense_position(&self, order: u64) -> Option<(u64, u64)> {
        match self {
            Shape::Dense1(n) => Some((order, *n)),
            Shape::Dense2(_, y) => Some((
                (order >> 32)
                    .saturating_mul(*y)
                    .saturating_add(order & 0xffff_ffff),
                self.len(),
            )),
            Shape::List(_) => None,
        }
    }

    /// Elements in the shape (saturating for an unchecked 2-D shape).
    pub(crate) fn len(&self) -> u64 {
        match self {
            Shape::Dense1(n) => *n,
            Shape::Dense2(x, y) => x.saturating_mul(*y),
            Shape::List(l) => l.len() as u64,
        }
    }

    /// Every address in the shape.
    pub(crate) fn addresses(&self) -> Box<dyn Iterator<Item = ElemAddr> + '_> {
        match self {
            Shape::Dense1(n) => Box::new((0..*n as usize).map(|i| ElemAddr::of(&i))),
            Shape::Dense2(x, y) => Box::new(
                (0..*x as usize)
                    .flat_map(move |i| (0..*y as usize).map(move |j| ElemAddr::of(&(i, j)))),
            ),
            Shape::List(l) => Box::new(l.iter().cloned()),
        }
    }
}

/// How array elements are placed on PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArrayMap {
    /// Contiguous blocks of a dense array per PE (dense arrays only).
    Block,
    /// Element with order key k goes to PE k mod P.
    RoundRobin,
    /// A map registered with `Registry::map`.
    Custom(u32),
}

/// Home PE of an element under a built-in map, or None for a custom map.
pub(crate) fn builtin_home(map: ArrayMap, shape: &Shape, order: u64, npes: usize) -> Option<Pe> {
    let p = npes as u64;
    match map {
        ArrayMap::RoundRobin => Some(
            (shape
                .dense_position(order)
                .map(|(pos, _)| pos)
                .unwrap_or(order)
                % p) as Pe,
        ),
        ArrayMap::Block => shape
            .dense_position(order)
            .map(|(pos, n)| block_of(pos, n, p)),
        ArrayMap::Custom(_) => None,
    }
}

/// The PE of position `pos` of `n` under the block map on `p` PEs: `pos * p / n`,
/// in 64 bits when the product fits (every message to a block-mapped element routes
/// through this, and a 128-bit division is a library call).
fn block_of(pos: u64, n: u64, p: u64) -> Pe {
    let n = n.max(1);
    let pe = match pos.checked_mul(p) {
        Some(x) => x / n,
        None => (u128::from(pos) * u128::from(p) / u128::from(n)) as u64,
    };
    pe.min(p.saturating_sub(1)) as Pe
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_map_divides_in_64_bits_as_in_128() {
        let wide = |pos: u64, n: u64, p: u64| {
            (u128::from(pos) * u128::from(p) / u128::from(n.max(1))).min(u128::from(p) - 1) as Pe
        };
        let vals = [
            0,
            1,
            2,
            3,
            7,
            1000,
            1 << 31,
            (1 << 32) + 5,
            u64::MAX / 3,
            u64::MAX,
        ];
        for &n in &vals[1..] {
            for &p in &[1, 2, 3, 64, 131_072, 1 << 20, u64::from(u32::MAX)] {
                for &pos in vals.iter().filter(|&&v| v < n) {
                    assert_eq!(block_of(pos, n, p), wide(pos, n, p), "{pos} of {n} on {p}");
                }
            }
        }
    }

    #[test]
    fn block_map_is_contiguous_and_balanced() {
        let shape = Shape::Dense1(10);
        let homes: Vec<Pe> = (0..10)
            .map(|i| builtin_home(ArrayMap::Block, &shape, i, 4).unwrap())
            .collect();
        assert_eq!(homes, vec![0, 0, 0, 1, 1, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn round_robin_2d_uses_row_major_position() {
        let shape = Shape::Dense2(2, 3);
        let home =
            |i: usize, j: usize| builtin_home(ArrayMap::RoundRobin, &shape, (i, j).order_key(), 4);
        assert_eq!(home(0, 0), Some(0));
        assert_eq!(home(1, 0), Some(3));
        assert_eq!(home(1, 2), Some(1));
    }

    #[test]
    fn a_2d_shape_too_large_is_an_error_not_an_overflow() {
        let huge = Shape::Dense2(u64::MAX, 2);
        assert_eq!(huge.len(), u64::MAX, "x * y once overflowed");
        assert_eq!(
            huge.check(),
            Err(ShapeError::TooLarge { x: u64::MAX, y: 2 })
        );
        assert!(
            Shape::Dense2(1 << 33, 1).check().is_err(),
            "a side past 32 bits"
        );
        assert!(builtin_home(ArrayMap::Block, &huge, u64::MAX, 4).is_some());
        assert_eq!(Shape::Dense2(1 << 20, 1 << 20).check(), Ok(()));
    }

    #[test]
    fn block_map_needs_a_dense_shape() {
        let shape = Shape::List(vec![ElemAddr::of(&7u64)]);
        assert_eq!(builtin_home(ArrayMap::Block, &shape, 7, 4), None);
    }

    #[test]
    fn built_in_indices_key_as_their_bincode() {
        fn same<I: ArrayIndex>(i: I) {
            assert_eq!(
                i.key().as_bytes(),
                &bincode::serialize(&i).unwrap()[..],
                "{i:?}"
            );
            assert_eq!(i.key(), IndexKey::encode(&i));
        }
        for v in [0, 1, 255, 1 << 40, u64::MAX] {
            same(v);
            same(v as usize);
            same(v as u32);
            same((v as usize, (v as usize).wrapping_mul(3)));
            same((v as u32, (v as u32).wrapping_add(7)));
        }
    }
}
