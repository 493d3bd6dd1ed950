//! Shared immutable bytes for large message payloads.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

/// Immutable bytes that clone without copying and, received from another process,
/// stay in the buffer they arrived in: the way to send large blocks of data.
///
/// A `Vec<u8>` field is copied when a message is cloned for a broadcast and copied
/// again out of the receive buffer when it is decoded; a `Bytes` field is neither.
#[derive(Clone, Default)]
pub struct Bytes {
    buf: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl Bytes {
    /// The bytes as a slice.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True if there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// `decode` of these bytes, with the buffer they lie in as the one `Bytes` fields
    /// decoded from them keep views of (see [`decoding_from`]): a restarted element's
    /// state stays in the checkpoint file it was read into, uncopied.
    pub(crate) fn decode_in_place<R>(&self, decode: impl FnOnce(&[u8]) -> R) -> R {
        decoding_from(&self.buf, || decode(self.as_slice()))
    }

    /// The bytes in a vector of their own (copies unless this is the only view of a
    /// whole buffer).
    pub fn into_vec(self) -> Vec<u8> {
        if self.start == 0 && self.end == self.buf.len() {
            Arc::try_unwrap(self.buf).unwrap_or_else(|shared| shared.to_vec())
        } else {
            self.as_slice().to_vec()
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        let end = v.len();
        Bytes {
            buf: Arc::new(v),
            start: 0,
            end,
        }
    }
}

impl From<&[u8]> for Bytes {
    fn from(v: &[u8]) -> Self {
        Bytes::from(v.to_vec())
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Bytes {}

/// Byte strings at least this long are sent on a wire as segments, without copying
/// them (see `wire::encode_segmented`).
pub const SEGMENT_MIN: usize = 64 << 10;

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} B)", self.len())
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.len() >= SEGMENT_MIN {
            NOTED.with(|n| {
                if let Some(noted) = n.borrow_mut().as_mut() {
                    noted.push(self.clone());
                }
            });
        }
        s.serialize_bytes(self.as_slice())
    }
}

thread_local! {
    /// While an envelope is encoded for a zero-copy send: the long `Bytes` serialised
    /// so far, whose contents the writer may send from where they are.
    static NOTED: RefCell<Option<Vec<Bytes>>> = const { RefCell::new(None) };
}

/// Run `encode`, noting every `Bytes` of at least [`SEGMENT_MIN`] bytes it
/// serialises (see [`take_noted`] and [`any_noted`]).
pub(crate) fn noting_long<R>(encode: impl FnOnce() -> R) -> R {
    /// Puts the previous state back even if `encode` panics (a user `Serialize`
    /// may), so noting never stays on and holds buffers.
    struct Restore(Option<Vec<Bytes>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            NOTED.with(|n| *n.borrow_mut() = previous);
        }
    }
    let _restore = Restore(NOTED.with(|n| n.replace(Some(Vec::new()))));
    encode()
}

/// True if a `Bytes` was noted and not taken yet.
#[cfg(feature = "mpi")]
pub(crate) fn any_noted() -> bool {
    NOTED.with(|n| n.borrow().as_ref().is_some_and(|v| !v.is_empty()))
}

/// The noted `Bytes` whose contents are `part` itself (same address and length): a
/// handle that keeps those bytes alive and unchanged.
pub(crate) fn take_noted(part: &[u8]) -> Option<Bytes> {
    NOTED.with(|n| {
        let mut n = n.borrow_mut();
        let noted = n.as_mut()?;
        let i = noted
            .iter()
            .position(|b| b.as_ptr() == part.as_ptr() && b.len() == part.len())?;
        Some(noted.swap_remove(i))
    })
}

thread_local! {
    /// The receive buffer a message is being decoded from on this thread.
    static ARRIVED: RefCell<Option<Arc<Vec<u8>>>> = const { RefCell::new(None) };
}

/// Run `decode` with `buf` as the buffer that `Bytes` fields may keep views of.
pub(crate) fn decoding_from<R>(buf: &Arc<Vec<u8>>, decode: impl FnOnce() -> R) -> R {
    let previous = ARRIVED.with(|a| a.replace(Some(buf.clone())));
    let out = decode();
    ARRIVED.with(|a| *a.borrow_mut() = previous);
    out
}

/// Where `part` lies inside the buffer being decoded, if it does.
fn view_of(part: &[u8]) -> Option<Bytes> {
    ARRIVED.with(|a| {
        let a = a.borrow();
        let buf = a.as_ref()?;
        // Addresses are compared as integers: no pointer is dereferenced.
        let base = buf.as_ptr() as usize;
        let at = part.as_ptr() as usize;
        let start = at.checked_sub(base)?;
        let end = start.checked_add(part.len())?;
        (end <= buf.len()).then(|| Bytes {
            buf: buf.clone(),
            start,
            end,
        })
    })
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Bytes, E> {
        Ok(view_of(v).unwrap_or_else(|| Bytes::from(v)))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        Ok(Bytes::from(v))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_bytes(BytesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::{decoding_from, Bytes};
    use std::sync::Arc;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Msg {
        tag: u32,
        data: Bytes,
    }

    #[test]
    fn received_bytes_stay_in_their_buffer() {
        let msg = Msg {
            tag: 7,
            data: Bytes::from((0..=255u8).collect::<Vec<_>>()),
        };
        let wire = Arc::new(bincode::serialize(&msg).unwrap());
        let back: Msg = decoding_from(&wire, || bincode::deserialize(&wire).unwrap());
        assert_eq!(back, msg);
        let base = wire.as_ptr() as usize;
        let at = back.data.as_ptr() as usize;
        assert!(at >= base && at + back.data.len() <= base + wire.len());
        assert_eq!(Arc::strong_count(&wire), 2);
    }

    #[test]
    fn bytes_from_elsewhere_are_copied() {
        let msg = Msg {
            tag: 1,
            data: Bytes::from(&b"abc"[..]),
        };
        let wire = bincode::serialize(&msg).unwrap();
        let back: Msg = bincode::deserialize(&wire).unwrap();
        assert_eq!(back, msg);
        assert_eq!(back.data.clone().into_vec(), b"abc");
        let json = serde_json::to_string(&msg).unwrap();
        let back: Msg = serde_json::from_str(&json).unwrap();
        assert_eq!(back, msg);
    }
}
