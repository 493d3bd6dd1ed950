//! Vectors of numbers serialized as one block of little-endian bytes, for
//! `#[serde(with = "chorus_core::packed")]` on a `Vec<f64>` (or of `f32`, `i32`,
//! `u32`, `i64`, `u64`) field.
//!
//! serde writes a `Vec<f64>` one number at a time: bincode spends about 12
//! instructions a number to encode and 18 to decode, 250,000 for a 64 KiB vector
//! sent once, where a block of bytes is one copy each way. The bytes are the same
//! length as bincode's own form (a u64 length, then the numbers), but the length
//! counts bytes, so the two forms do not read each other.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Serializer;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// A number that packs into a fixed number of little-endian bytes.
pub trait Packable: Copy + Sized {
    /// Bytes of one number.
    const BYTES: usize;
    /// Write the numbers' bytes into `out` (`BYTES` each, in order).
    fn pack(v: &[Self], out: &mut [u8]);
    /// Read the numbers of `b`, a whole number of them.
    fn unpack(b: &[u8]) -> Vec<Self>;
}

// Fixed-size chunks (`as_chunks`), not `chunks_exact`: a copy of a length the
// compiler knows is a move it vectorizes, where one it does not know was a call to
// memcpy per number.
macro_rules! packable {
    ($($t:ty),*) => {$(
        impl Packable for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn pack(v: &[Self], out: &mut [u8]) {
                let (chunks, _) = out.as_chunks_mut::<{ std::mem::size_of::<$t>() }>();
                for (c, x) in chunks.iter_mut().zip(v) {
                    *c = x.to_le_bytes();
                }
            }
            fn unpack(b: &[u8]) -> Vec<Self> {
                let (chunks, _) = b.as_chunks::<{ std::mem::size_of::<$t>() }>();
                chunks.iter().map(|c| <$t>::from_le_bytes(*c)).collect()
            }
        }
    )*};
}

packable!(u8, f32, f64, i32, u32, i64, u64);

/// The numbers' bytes, in order.
pub fn to_bytes<T: Packable>(v: &[T]) -> Vec<u8> {
    let mut bytes = vec![0u8; v.len() * T::BYTES];
    T::pack(v, &mut bytes);
    bytes
}

/// The numbers `to_bytes` wrote, or `None` if `b` is not a whole number of them.
pub fn from_bytes<T: Packable>(b: &[u8]) -> Option<Vec<T>> {
    b.len().is_multiple_of(T::BYTES).then(|| T::unpack(b))
}

/// Scratch space `serialize` packs into, kept so a vector sent twice (sized, then
/// written) or every iteration allocates nothing; freed past `SCRATCH_KEEP`.
const SCRATCH_KEEP: usize = 4 << 20;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serialize `v` as one byte string (serde's `with` protocol).
pub fn serialize<T: Packable, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    SCRATCH.with(|cell| {
        // A serializer that serializes again inside serialize_bytes (none does)
        // would find the scratch taken, and pack into a buffer of its own.
        let Ok(mut scratch) = cell.try_borrow_mut() else {
            return s.serialize_bytes(&to_bytes(v));
        };
        scratch.clear();
        scratch.resize(v.len() * T::BYTES, 0);
        T::pack(v, &mut scratch);
        let done = s.serialize_bytes(&scratch);
        if scratch.capacity() > SCRATCH_KEEP {
            *scratch = Vec::new();
        }
        done
    })
}

/// Deserialize what [`serialize`] wrote (serde's `with` protocol); a byte string
/// that is not a whole number of numbers is an error.
pub fn deserialize<'de, T: Packable, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_bytes(PackedVisitor(PhantomData))
}

/// Serialize a byte vector as one byte string (serde's element-by-element form of
/// a `Vec<u8>` is the same bytes in bincode, written and read a byte at a time).
pub fn serialize_bytes<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(v)
}

/// Deserialize what [`serialize_bytes`] wrote.
pub fn deserialize_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    deserialize::<u8, D>(d)
}

struct PackedVisitor<T>(PhantomData<T>);

impl<'de, T: Packable> Visitor<'de> for PackedVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a byte string of {}-byte numbers", T::BYTES)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<T>, E> {
        from_bytes(v).ok_or_else(|| E::invalid_length(v.len(), &self))
    }

    /// Formats without byte strings (JSON) write them as sequences of bytes.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        self.visit_bytes(&v)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Numbers {
        #[serde(with = "super")]
        f: Vec<f64>,
        #[serde(with = "super")]
        i: Vec<i32>,
    }

    fn sample() -> Numbers {
        Numbers {
            f: vec![0.0, -1.5, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY],
            i: vec![i32::MIN, -1, 0, 7, i32::MAX],
        }
    }

    #[test]
    fn numbers_come_back_bit_for_bit_through_bincode_and_json() {
        let n = sample();
        let b = bincode::serialize(&n).unwrap();
        assert_eq!(bincode::deserialize::<Numbers>(&b).unwrap(), n);
        let j = serde_json::to_string(&n).unwrap();
        assert_eq!(serde_json::from_str::<Numbers>(&j).unwrap(), n);
        let nan = bincode::serialize(&Numbers {
            f: vec![f64::NAN],
            i: vec![],
        })
        .unwrap();
        let back: Numbers = bincode::deserialize(&nan).unwrap();
        assert_eq!(back.f[0].to_bits(), f64::NAN.to_bits());
    }

    #[test]
    fn bincode_form_is_a_byte_length_then_the_little_endian_numbers() {
        let b = bincode::serialize(&Numbers {
            f: vec![1.0, 2.0],
            i: vec![-2],
        })
        .unwrap();
        let mut want = 16u64.to_le_bytes().to_vec();
        want.extend(1.0f64.to_le_bytes());
        want.extend(2.0f64.to_le_bytes());
        want.extend(4u64.to_le_bytes());
        want.extend((-2i32).to_le_bytes());
        assert_eq!(b, want);
    }

    #[test]
    fn a_byte_string_not_a_whole_number_of_numbers_is_refused() {
        let mut b = 9u64.to_le_bytes().to_vec();
        b.extend([0u8; 9]);
        b.extend(0u64.to_le_bytes());
        let err = bincode::deserialize::<Numbers>(&b).unwrap_err();
        assert!(err.to_string().contains("8-byte numbers"), "{err}");
    }
}
