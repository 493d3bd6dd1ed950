//! `IndexKey`: an array element's encoded index, kept inline when short.
//!
//! Every send to an element builds one (its index, encoded) and every envelope to
//! an element carries one, so a heap buffer per key cost an allocation and a free
//! per message. Indices of up to `INLINE` bytes (every built-in index type: a
//! `usize` takes 8, a pair 16) live in the key itself, in the 24 bytes a `Vec`
//! took; longer ones are boxed. The key encodes, hashes, orders and compares as the
//! byte string it holds, as the `Vec<u8>` it replaces did.

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};

/// Bytes a key holds inline.
const INLINE: usize = 22;

/// Serialized array index: the bincode encoding of the user's index value.
#[derive(Clone, PartialEq, Eq)]
pub struct IndexKey(Repr);

/// A key's bytes: inline (zeros past `len`, so equal keys are equal
/// representations) when they fit, else boxed.
#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl IndexKey {
    /// The key holding `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            IndexKey(Repr::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            })
        } else {
            IndexKey(Repr::Heap(bytes.into()))
        }
    }

    /// The key of `index`'s bincode encoding (empty if it does not encode).
    pub fn encode<T: Serialize + ?Sized>(index: &T) -> Self {
        let mut w = KeyWriter::default();
        match bincode::serialize_into(&mut w, index) {
            Ok(()) => w.finish(),
            Err(_) => IndexKey::new(&[]),
        }
    }

    /// The encoded index.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }

    /// Bytes in the key.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// True for the empty key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for IndexKey {
    fn default() -> Self {
        IndexKey::new(&[])
    }
}

impl From<Vec<u8>> for IndexKey {
    fn from(v: Vec<u8>) -> Self {
        if v.len() <= INLINE {
            IndexKey::new(&v)
        } else {
            IndexKey(Repr::Heap(v.into_boxed_slice()))
        }
    }
}

impl From<&[u8]> for IndexKey {
    fn from(b: &[u8]) -> Self {
        IndexKey::new(b)
    }
}

impl std::ops::Deref for IndexKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for IndexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("IndexKey").field(&self.as_bytes()).finish()
    }
}

impl Hash for IndexKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialOrd for IndexKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IndexKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Serialize for IndexKey {
    /// As a byte string: in bincode a u64 length and the bytes, as a `Vec<u8>` was.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.as_bytes())
    }
}

impl<'de> Deserialize<'de> for IndexKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_byte_buf(KeyVisitor)
    }
}

/// Reads a key from a byte string, or from a sequence of bytes (a text format's
/// array of numbers).
struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = IndexKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an encoded array index (bytes)")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<IndexKey, E> {
        Ok(IndexKey::new(v))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<IndexKey, E> {
        Ok(IndexKey::from(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IndexKey, A::Error> {
        // Bounded by the input: each element is a byte the sequence holds.
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(INLINE));
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        Ok(IndexKey::from(v))
    }
}

/// Collects an encoding in place while it fits inline, spilling to a `Vec` past that.
#[derive(Default)]
struct KeyWriter {
    len: usize,
    inline: [u8; INLINE],
    spilled: Option<Vec<u8>>,
}

impl KeyWriter {
    fn finish(self) -> IndexKey {
        match self.spilled {
            Some(v) => IndexKey::from(v),
            None => IndexKey(Repr::Inline {
                len: self.len as u8,
                bytes: self.inline,
            }),
        }
    }
}

impl std::io::Write for KeyWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(v) = self.spilled.as_mut() {
            v.extend_from_slice(buf);
        } else if self.len + buf.len() <= INLINE {
            self.inline[self.len..self.len + buf.len()].copy_from_slice(buf);
            self.len += buf.len();
        } else {
            let mut v = Vec::with_capacity(self.len + buf.len());
            v.extend_from_slice(&self.inline[..self.len]);
            v.extend_from_slice(buf);
            self.spilled = Some(v);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(t: &T) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    #[test]
    fn a_key_takes_the_room_of_the_vec_it_replaces() {
        assert_eq!(
            std::mem::size_of::<IndexKey>(),
            std::mem::size_of::<Vec<u8>>()
        );
    }

    #[test]
    fn keys_encode_hash_and_order_as_their_bytes_did() {
        let lens = [0usize, 1, 8, 21, 22, 23, 40];
        for &a in &lens {
            let va: Vec<u8> = (0..a as u8).map(|i| i.wrapping_mul(37)).collect();
            let ka = IndexKey::from(va.clone());
            assert_eq!(ka.as_bytes(), &va[..]);
            assert_eq!(
                bincode::serialize(&ka).unwrap(),
                bincode::serialize(&va).unwrap()
            );
            let back: IndexKey = bincode::deserialize(&bincode::serialize(&va).unwrap()).unwrap();
            assert_eq!(back, ka);
            let json: IndexKey =
                serde_json::from_str(&serde_json::to_string(&ka).unwrap()).unwrap();
            assert_eq!(json, ka);
            assert_eq!(hash_of(&ka), hash_of(&va));
            for &b in &lens {
                let vb: Vec<u8> = (0..b as u8).map(|i| i.wrapping_mul(41)).collect();
                let kb = IndexKey::new(&vb);
                assert_eq!(ka.cmp(&kb), va.cmp(&vb));
                assert_eq!(ka == kb, va == vb);
            }
        }
    }

    #[test]
    fn an_encoded_index_is_its_bincode_whatever_its_length() {
        let long: Vec<u64> = (0..9).collect();
        let pair = (3usize, 4usize);
        assert_eq!(
            IndexKey::encode(&pair).as_bytes(),
            &bincode::serialize(&pair).unwrap()[..]
        );
        assert_eq!(
            IndexKey::encode(&7usize).as_bytes(),
            &bincode::serialize(&7usize).unwrap()[..]
        );
        assert_eq!(
            IndexKey::encode(&long).as_bytes(),
            &bincode::serialize(&long).unwrap()[..]
        );
    }
}
