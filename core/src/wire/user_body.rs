//! The body of a user message on the wire: fixed-width little-endian fields written
//! and read by hand, because user messages are the traffic whose latency matters and
//! a serde round trip of the body cost more than the rest of decoding together.
//!
//! ```text
//! size field
//!    1 destination: 0 chare, 1 group, 2 array, 3 array element, 4 migrated element
//!      chare:   pe u32, creator u32, seq u32
//!      group:   creator u32, seq u32 (likewise array)
//!      element: creator u32, seq u32, order u64, index length u32, index bytes
//!      migrated element: as element, then moves u32
//!    1 hops (forwardings of an element message so far)
//! ```

use crate::base::ids::{ChareId, CollectionId, IndexKey};
use crate::msg::array::ElemAddr;
use crate::msg::envelope::Dest;

const CHARE: u8 = 0;
const GROUP: u8 = 1;
const ARRAY: u8 = 2;
const ELEMENT: u8 = 3;
const ELEMENT_AT: u8 = 4;

/// Append the body of a user message for `dest` forwarded `hops` times.
pub(crate) fn write(dest: &Dest, hops: u8, out: &mut Vec<u8>) -> Result<(), String> {
    match dest {
        Dest::Chare(id) => {
            out.push(CHARE);
            for v in [id.pe, id.creator, id.seq] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        Dest::Group(coll) | Dest::Array(coll) => {
            out.push(if matches!(dest, Dest::Group(_)) {
                GROUP
            } else {
                ARRAY
            });
            write_coll(coll, out);
        }
        Dest::Element(coll, addr) => {
            out.push(ELEMENT);
            write_element(coll, addr, out)?;
        }
        Dest::ElementAt(coll, addr, moves) => {
            out.push(ELEMENT_AT);
            write_element(coll, addr, out)?;
            out.extend_from_slice(&moves.to_le_bytes());
        }
    }
    out.push(hops);
    Ok(())
}

fn write_element(coll: &CollectionId, addr: &ElemAddr, out: &mut Vec<u8>) -> Result<(), String> {
    write_coll(coll, out);
    out.extend_from_slice(&addr.order.to_le_bytes());
    let len =
        u32::try_from(addr.key.len()).map_err(|_| "an array index of over 4 GiB".to_string())?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(addr.key.as_bytes());
    Ok(())
}

fn write_coll(coll: &CollectionId, out: &mut Vec<u8>) {
    out.extend_from_slice(&coll.creator.to_le_bytes());
    out.extend_from_slice(&coll.seq.to_le_bytes());
}

/// The destination and hop count a body written by `write` holds, or what is wrong
/// with it.
pub(crate) fn read(body: &[u8]) -> Result<(Dest, u8), String> {
    let mut r = Reader { body, at: 0 };
    let Some(kind) = r.u8() else {
        return Err("it is empty".into());
    };
    // Fields are read as `Option`s and the error is worded once at the end: an error
    // value per field made every read of this hot path move it around.
    let dest = match kind {
        CHARE => r.chare().map(Dest::Chare),
        GROUP => r.coll().map(Dest::Group),
        ARRAY => r.coll().map(Dest::Array),
        ELEMENT => r.element().map(|(c, a)| Dest::Element(c, a)),
        ELEMENT_AT => r
            .element()
            .and_then(|(c, a)| Some(Dest::ElementAt(c, a, r.u32()?))),
        other => return Err(format!("unknown destination kind {other}")),
    };
    let (Some(dest), Some(hops)) = (dest, r.u8()) else {
        return Err(format!(
            "it ends after {} bytes, inside the destination (kind {kind})",
            body.len()
        ));
    };
    if r.at != body.len() {
        return Err(format!(
            "{} bytes left over after the destination",
            body.len() - r.at
        ));
    }
    Ok((dest, hops))
}

/// Reads fields off a body, each checked against the bytes left.
struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.body.len())?;
        let out = &self.body[self.at..end];
        self.at = end;
        Some(out)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn chare(&mut self) -> Option<ChareId> {
        Some(ChareId {
            pe: self.u32()?,
            creator: self.u32()?,
            seq: self.u32()?,
        })
    }

    fn coll(&mut self) -> Option<CollectionId> {
        Some(CollectionId {
            creator: self.u32()?,
            seq: self.u32()?,
        })
    }

    fn element(&mut self) -> Option<(CollectionId, ElemAddr)> {
        let coll = self.coll()?;
        let order = self.u64()?;
        let len = self.u32()? as usize;
        let key = IndexKey::new(self.take(len)?);
        Some((coll, ElemAddr { key, order }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dests() -> Vec<Dest> {
        let coll = CollectionId { creator: 7, seq: 3 };
        vec![
            Dest::Chare(ChareId {
                pe: 1,
                creator: 2,
                seq: u32::MAX,
            }),
            Dest::Group(coll),
            Dest::Array(coll),
            Dest::Element(
                coll,
                ElemAddr {
                    key: IndexKey::from(vec![9, 8, 7]),
                    order: u64::MAX - 5,
                },
            ),
            Dest::ElementAt(
                coll,
                ElemAddr {
                    key: IndexKey::from(vec![1, 2]),
                    order: 12,
                },
                u32::MAX - 1,
            ),
        ]
    }

    #[test]
    fn every_destination_round_trips() {
        for dest in dests() {
            let mut out = Vec::new();
            write(&dest, 3, &mut out).expect("writes");
            assert_eq!(read(&out), Ok((dest, 3)));
        }
    }

    #[test]
    fn short_long_and_unknown_bodies_are_errors() {
        for dest in dests() {
            let mut out = Vec::new();
            write(&dest, 0, &mut out).expect("writes");
            for cut in 0..out.len() {
                assert!(read(&out[..cut]).is_err(), "{dest:?} cut at {cut}");
            }
            out.push(0);
            assert!(read(&out).unwrap_err().contains("left over"));
        }
        assert!(read(&[9, 0]).unwrap_err().contains("unknown destination"));
        assert!(read(&[]).unwrap_err().contains("empty"));
    }

    proptest! {
        #[test]
        fn garbled_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = read(&body);
        }
    }
}
