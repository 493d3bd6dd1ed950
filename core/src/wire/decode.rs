//! Decoding received bytes into an envelope, every length checked before it is used.

use super::{
    body_options, u16_at, u32_at, WireError, COUNTED, EXPEDITED, HAS_PAYLOAD, HEADER_BYTES,
    KIND_NAMES, LONG_MAGIC, MAGIC, RUN, SEGMENTED, USER, VERSION,
};
use crate::base::ids::Pe;
use crate::msg::envelope::{Envelope, Kind};
use crate::msg::payload::Payload;
use bincode::Options;
use serde::de::DeserializeSeed;
use std::sync::Arc;

/// The destination PE an envelope's header names, if it is long enough to have one
/// (a process running several PEs routes by it; `decode` checks the rest).
#[cfg(feature = "mpi")]
pub(crate) fn destination(bytes: &[u8]) -> Option<Pe> {
    (bytes.len() >= HEADER_BYTES).then(|| u32_at(bytes, 12))
}

/// Messages the sender counted for quiescence in `bytes`, read from the header alone,
/// for bytes that did not decode: `Some(0)` for an uncounted envelope, `None` when the
/// header itself is unreadable (too short, wrong magic or version, or a run's count
/// beyond its bytes), so nothing can be told.
pub(crate) fn counted_weight(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_BYTES || bytes[..4] != MAGIC || u16_at(bytes, 4) != VERSION {
        return None;
    }
    let flags = bytes[6];
    if flags & COUNTED == 0 {
        return Some(0);
    }
    if bytes[7] != USER || flags & RUN == 0 {
        return Some(1);
    }
    let start = HEADER_BYTES + u32_at(bytes, 24) as usize;
    let count = bytes.get(start..start + 8)?;
    let count = u64::from_le_bytes(count.try_into().ok()?);
    // A count no run holds is as garbled as the rest.
    (1..=crate::msg::payload::MAX_RUN_MESSAGES)
        .contains(&count)
        .then_some(count)
}

/// The fixed header of an envelope, as read and checked by `read_header`.
struct Header {
    flags: u8,
    tag: u8,
    kind_name: &'static str,
    src: Pe,
    prio: i32,
    seq: u32,
    body_len: u32,
    payload_len: u32,
}

/// Read and check the header of `bytes`, an envelope for PE `me`: magic, version,
/// lengths against the bytes received, kind and destination.
fn read_header(bytes: &[u8], me: Pe) -> Result<Header, WireError> {
    if bytes.starts_with(&LONG_MAGIC) {
        // A notice the receiver did not take as one: another version's, or garbled.
        return Err(WireError::Segments {
            reason: "a long-envelope notice where an envelope was expected: run the same chorus build on every rank".into(),
        });
    }
    if bytes.len() < HEADER_BYTES {
        return Err(WireError::Truncated { len: bytes.len() });
    }
    let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
    if magic != MAGIC {
        return Err(WireError::BadMagic { found: magic });
    }
    let version = u16_at(bytes, 4);
    if version != VERSION {
        return Err(WireError::Version { found: version });
    }
    let flags = bytes[6];
    if flags & SEGMENTED != 0 {
        return Err(WireError::Segments {
            reason: "its segments were not received with it".into(),
        });
    }
    let (tag, dst) = (bytes[7], u32_at(bytes, 12));
    let (body_len, payload_len) = (u32_at(bytes, 24), u32_at(bytes, 28));
    let total = HEADER_BYTES as u64 + u64::from(body_len) + u64::from(payload_len);
    if total != bytes.len() as u64 {
        return Err(WireError::Length {
            header: total,
            body: body_len,
            payload: payload_len,
            actual: bytes.len(),
        });
    }
    let kind_name = *KIND_NAMES
        .get(tag as usize)
        .filter(|name| !name.is_empty())
        .ok_or(WireError::UnknownKind(tag))?;
    if dst != me {
        return Err(WireError::WrongDestination { dst, me });
    }
    Ok(Header {
        flags,
        tag,
        kind_name,
        src: u32_at(bytes, 8),
        prio: u32_at(bytes, 16) as i32,
        seq: u32_at(bytes, 20),
        body_len,
        payload_len,
    })
}

/// Read the kind's body: a user message's address, or a runtime message's tag and
/// fields; its payload is left empty.
fn read_body(h: &Header, body: &[u8]) -> Result<Kind, WireError> {
    let kind = if h.tag == USER {
        crate::wire::user_body::read(body).map(|(dest, hops)| Kind::User {
            dest,
            payload: Payload::placeholder(),
            hops,
        })
    } else {
        body_options()
            .with_limit(u64::from(h.body_len))
            .deserialize_seed(BodySeed(h.tag), body)
            .map_err(|e| e.to_string())
    };
    kind.map_err(|reason| WireError::Body {
        kind: h.kind_name,
        reason,
    })
}

/// Reads the body of the runtime message a header's tag names.
struct BodySeed(u8);

impl<'de> DeserializeSeed<'de> for BodySeed {
    type Value = Kind;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        Kind::deserialize_body(self.0, d)
    }
}

/// Decode one envelope received by PE `me`; the payload stays in `buf`.
pub(crate) fn decode(buf: Arc<Vec<u8>>, me: Pe) -> Result<Envelope, WireError> {
    decode_from(buf, 0, me)
}

/// Decode the envelope that fills `buf` from byte `at` on, received by PE `me`; the
/// payload stays in `buf`. A receiver leaves bytes before an envelope so that a long
/// byte string inside it lands aligned (the mpi layer's segments).
pub(crate) fn decode_from(buf: Arc<Vec<u8>>, at: usize, me: Pe) -> Result<Envelope, WireError> {
    let h = read_header(buf.get(at..).unwrap_or_default(), me)?;
    let body_end = at + HEADER_BYTES + h.body_len as usize;
    let mut kind = read_body(&h, &buf[at + HEADER_BYTES..body_end])?;
    let has_payload = h.flags & HAS_PAYLOAD != 0;
    let run = h.flags & RUN != 0;
    match (kind.payload_mut(), has_payload) {
        (Some(slot), true) => {
            *slot = Payload::from_wire(buf, body_end, run).map_err(|claimed| WireError::Run {
                claimed,
                max: crate::msg::payload::MAX_RUN_MESSAGES,
            })?;
        }
        (None, false) if h.payload_len == 0 => {}
        _ => {
            return Err(WireError::Flags {
                kind: h.kind_name,
                has_payload,
            })
        }
    }
    Ok(Envelope {
        src: h.src,
        seq: h.seq,
        prio: h.prio,
        expedited: h.flags & EXPEDITED != 0,
        counted: h.flags & COUNTED != 0,
        kind,
    })
}

/// Run every reader of received bytes over `bytes` as PE `me` would, and drop what
/// they make: the long-envelope notice, the segment table and the reassembly it
/// plans, the envelope decoder, and the quiescence weight of bytes that do not
/// decode. What a fuzzer drives; the decoder's answer is returned.
pub fn check(bytes: &[u8], me: Pe) -> Result<(), WireError> {
    /// Largest reassembly tried: a receiver allocates only what really arrived,
    /// which a fuzzer's claimed total need not be.
    const MAX_WHOLE: usize = 1 << 20;
    let _ = super::noticed_len(bytes);
    if let Ok(Some(plan)) = super::segment_plan(bytes) {
        if plan.total <= MAX_WHOLE {
            let mut whole = vec![0; plan.total];
            plan.assemble(bytes, &mut whole);
        }
    }
    let decoded = decode(Arc::new(bytes.to_vec()), me).map(drop);
    if decoded.is_err() {
        let _ = counted_weight(bytes);
    }
    decoded
}
