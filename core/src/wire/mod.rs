//! The versioned wire form of an envelope, for layers whose PEs live in different
//! processes.
//!
//! ```text
//! offset size field
//!      0    4 magic "CHRS"
//!      4    2 version (3)
//!      6    1 flags: 1 expedited, 2 counted, 4 payload is a run, 8 has a payload,
//!             16 segmented (long byte strings follow as their own messages)
//!      7    1 kind: which runtime message this is (see KIND_NAMES)
//!      8    4 source PE
//!     12    4 destination PE
//!     16    4 priority (i32)
//!     20    4 the sender's sequence number of this message
//!     24    4 length of the kind's body
//!     28    4 length of the payload
//!     32      body: a user message's destination and hops (see `user_body.rs`); any
//!             other kind, bincode (fixed-width integers) with payload fields empty
//!             payload: the message's own bincode encoding, raw
//! ```
//!
//! An envelope longer than a receiver's posted buffers (the mpi layer's) is preceded
//! by a 16-byte notice, magic "CHRL", the version, two zero bytes and its length
//! (u64), and follows as a message of its own (see [`long_notice`]).
//!
//! Decoding checks every length against the bytes received before it allocates, so
//! truncated, oversized or garbled input yields a `WireError` naming what was wrong.

pub(crate) mod user_body;

use crate::base::bytes::Bytes;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::{Dest, Envelope, Kind};
use crate::msg::payload::Payload;
use bincode::Options;
use std::sync::Arc;
use thiserror::Error;

/// The first four bytes of every envelope.
pub const MAGIC: [u8; 4] = *b"CHRS";
/// The wire version this build writes and reads.
pub const VERSION: u16 = 3;
/// Bytes of the fixed header.
pub const HEADER_BYTES: usize = 32;

const EXPEDITED: u8 = 1;
const COUNTED: u8 = 2;
const RUN: u8 = 4;
const HAS_PAYLOAD: u8 = 8;
/// Long byte strings of the payload follow as segment messages (see `encode_segmented`).
const SEGMENTED: u8 = 16;
pub use crate::base::bytes::SEGMENT_MIN;
/// The first four bytes of a notice that a long envelope follows on its own.
const LONG_MAGIC: [u8; 4] = *b"CHRL";
/// Bytes of a long-envelope notice.
const NOTICE_BYTES: usize = 16;

/// Names of the kinds, by their number on the wire.
pub const KIND_NAMES: [&str; 18] = [
    "User",
    "Bcast",
    "CreateChare",
    "CreateGroup",
    "CreateArray",
    "Insert",
    "DoneInserting",
    "Census",
    "Contribute",
    "QdRequest",
    "QdWave",
    "QdReply",
    "Orphans",
    "Exit",
    "PeFailed",
    "Migrate",
    "Moved",
    "HomeContribute",
];

/// What was wrong with bytes that should have been an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// Fewer bytes than a header.
    #[error("{len} bytes is shorter than the {HEADER_BYTES}-byte envelope header")]
    Truncated { len: usize },
    /// The magic number is wrong: not a chorus envelope.
    #[error("bad magic {found:02x?} (expected {MAGIC:02x?}): not a chorus envelope")]
    BadMagic { found: [u8; 4] },
    /// Written by another wire version.
    #[error("wire version {found}, but this build speaks version {VERSION}: run the same chorus build on every rank")]
    Version { found: u16 },
    /// The header's lengths disagree with the bytes received.
    #[error("header says {header} bytes (body {body} + payload {payload}) but {actual} arrived")]
    Length {
        header: u64,
        body: u32,
        payload: u32,
        actual: usize,
    },
    /// The header names a kind this build does not know.
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    /// Addressed to another PE than the one that received it.
    #[error("addressed to PE {dst}, but it reached PE {me}")]
    WrongDestination { dst: Pe, me: Pe },
    /// The body did not decode as the kind the header names.
    #[error("the {kind} body does not decode: {reason}")]
    Body { kind: &'static str, reason: String },
    /// The header's flags disagree with the body.
    #[error("the {kind} header says payload={has_payload}, which that kind never has")]
    Flags {
        kind: &'static str,
        has_payload: bool,
    },
    /// A segmented envelope's table is inconsistent, or its segments were not received.
    #[error("bad segmented envelope: {reason}")]
    Segments { reason: String },
    /// A message could not be encoded for sending.
    #[error("could not encode a {kind} envelope: {reason}")]
    Encode { kind: &'static str, reason: String },
}

impl WireError {
    /// The runtime error for bad bytes that reached PE `pe` from `source`.
    pub fn at(self, pe: Pe, source: &str) -> RuntimeError {
        RuntimeError::Decode {
            pe,
            what: format!("an envelope from {source}"),
            reason: self.to_string(),
        }
    }
}

fn body_options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
}

/// The number of `Kind::User` on the wire, whose body `user_body` writes.
const USER: u8 = 0;

fn kind_tag(kind: &Kind) -> u8 {
    match kind {
        Kind::User { .. } => USER,
        Kind::Bcast { .. } => 1,
        Kind::CreateChare { .. } => 2,
        Kind::CreateGroup { .. } => 3,
        Kind::CreateArray { .. } => 4,
        Kind::Insert { .. } => 5,
        Kind::DoneInserting { .. } => 6,
        Kind::Census { .. } => 7,
        Kind::Contribute { .. } => 8,
        Kind::QdRequest { .. } => 9,
        Kind::QdWave { .. } => 10,
        Kind::QdReply { .. } => 11,
        Kind::Orphans { .. } => 12,
        Kind::Exit { .. } => 13,
        Kind::PeFailed { .. } => 14,
        Kind::Migrate { .. } => 15,
        Kind::Moved { .. } => 16,
        Kind::HomeContribute { .. } => 17,
    }
}

fn payload_of(kind: &Kind) -> Option<&Payload> {
    match kind {
        Kind::User { payload, .. } | Kind::Bcast { payload, .. } => Some(payload),
        Kind::CreateChare { init, .. }
        | Kind::CreateGroup { init, .. }
        | Kind::CreateArray { init, .. }
        | Kind::Insert { init, .. } => Some(init),
        Kind::Migrate { state, .. } => Some(state),
        _ => None,
    }
}

fn payload_mut(kind: &mut Kind) -> Option<&mut Payload> {
    match kind {
        Kind::User { payload, .. } | Kind::Bcast { payload, .. } => Some(payload),
        Kind::CreateChare { init, .. }
        | Kind::CreateGroup { init, .. }
        | Kind::CreateArray { init, .. }
        | Kind::Insert { init, .. } => Some(init),
        Kind::Migrate { state, .. } => Some(state),
        _ => None,
    }
}

/// About the bytes the wire form of `env` takes (exact for the payload, a guess for
/// the body), to size a buffer before `encode`.
#[cfg(feature = "mpi")]
pub(crate) fn size_hint(env: &Envelope) -> usize {
    HEADER_BYTES + 64 + payload_of(&env.kind).map_or(0, |p| p.wire_len() as usize)
}

/// Append the wire form of `env`, bound for PE `dst`, to `out`.
pub fn encode(env: &Envelope, dst: Pe, out: &mut Vec<u8>) -> Result<(), WireError> {
    encode_with(env, dst, out, |p, out| Ok((p.encode_into(out)?, 0)))
}

/// Append the wire form of `env` for PE `dst` to `out`, leaving out of it every
/// `Bytes` of at least [`SEGMENT_MIN`] bytes: those are returned, in order, to be sent
/// as segment messages right after `out`, straight from where they are. Without any,
/// `out` is exactly what [`encode`] writes; with some, it ends in the table of where
/// they go (each segment's offset in the payload and length, then their count).
pub fn encode_segmented(
    env: &Envelope,
    dst: Pe,
    out: &mut Vec<u8>,
) -> Result<Vec<Bytes>, WireError> {
    let start = out.len();
    let mut gaps = Vec::new();
    encode_with(env, dst, out, |p, out| {
        let mut w = Diverting {
            from: out.len(),
            out,
            diverted: 0,
            gaps: &mut gaps,
        };
        let run = crate::base::bytes::noting_long(|| p.encode_to(&mut w))?;
        Ok((run, w.diverted))
    })?;
    if gaps.is_empty() {
        return Ok(Vec::new());
    }
    out[start + 6] |= SEGMENTED;
    let count = u32::try_from(gaps.len()).map_err(|_| WireError::Encode {
        kind: KIND_NAMES[kind_tag(&env.kind) as usize],
        reason: "over 4 Gi segments".into(),
    })?;
    let mut segments = Vec::with_capacity(gaps.len());
    for (at, b) in gaps {
        out.extend_from_slice(&at.to_le_bytes());
        // Below 4 GiB: the whole payload's length was checked.
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        segments.push(b);
    }
    out.extend_from_slice(&count.to_le_bytes());
    Ok(segments)
}

/// A writer that appends to `out`, except the contents of noted `Bytes`, which it
/// records as gaps at their offset in the payload.
struct Diverting<'a> {
    out: &'a mut Vec<u8>,
    /// Where the payload starts in `out`.
    from: usize,
    /// Bytes left out so far.
    diverted: usize,
    gaps: &'a mut Vec<(u32, Bytes)>,
}

impl std::io::Write for Diverting<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.len() >= SEGMENT_MIN {
            if let Some(b) = crate::base::bytes::take_noted(data) {
                let at = self.out.len() - self.from + self.diverted;
                let at = u32::try_from(at).map_err(|_| std::io::ErrorKind::InvalidInput)?;
                self.gaps.push((at, b));
                self.diverted += data.len();
                return Ok(data.len());
            }
        }
        self.out.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The common part of the encoders: `payload` writes the payload to `out` and says
/// whether it is a run and how many of its bytes it left out.
fn encode_with(
    env: &Envelope,
    dst: Pe,
    out: &mut Vec<u8>,
    payload: impl FnOnce(&Payload, &mut Vec<u8>) -> Result<(bool, usize), String>,
) -> Result<(), WireError> {
    let tag = kind_tag(&env.kind);
    let kind_name = KIND_NAMES[tag as usize];
    let start = out.len();
    out.resize(start + HEADER_BYTES, 0);
    let body = match &env.kind {
        Kind::User { dest, hops, .. } => crate::wire::user_body::write(dest, *hops, out),
        kind => body_options()
            .serialize_into(&mut *out, kind)
            .map_err(|e| e.to_string()),
    };
    body.map_err(|reason| WireError::Encode {
        kind: kind_name,
        reason,
    })?;
    let body_len = out.len() - start - HEADER_BYTES;
    let mut flags = 0;
    if env.expedited {
        flags |= EXPEDITED;
    }
    if env.counted {
        flags |= COUNTED;
    }
    let mut diverted = 0;
    if let Some(p) = payload_of(&env.kind) {
        flags |= HAS_PAYLOAD;
        let (run, left_out) = payload(p, out).map_err(|reason| WireError::Encode {
            kind: kind_name,
            reason,
        })?;
        if run {
            flags |= RUN;
        }
        diverted = left_out;
    }
    let payload_len = out.len() - start - HEADER_BYTES - body_len + diverted;
    let too_big = |what: &str| WireError::Encode {
        kind: kind_name,
        reason: format!("{what} is over 4 GiB"),
    };
    let body_len = u32::try_from(body_len).map_err(|_| too_big("the body"))?;
    let payload_len = u32::try_from(payload_len).map_err(|_| too_big("the payload"))?;
    let h = &mut out[start..start + HEADER_BYTES];
    h[0..4].copy_from_slice(&MAGIC);
    h[4..6].copy_from_slice(&VERSION.to_le_bytes());
    h[6] = flags;
    h[7] = tag;
    h[8..12].copy_from_slice(&env.src.to_le_bytes());
    h[12..16].copy_from_slice(&dst.to_le_bytes());
    h[16..20].copy_from_slice(&env.prio.to_le_bytes());
    h[20..24].copy_from_slice(&env.seq.to_le_bytes());
    h[24..28].copy_from_slice(&body_len.to_le_bytes());
    h[28..32].copy_from_slice(&payload_len.to_le_bytes());
    Ok(())
}

/// Where the segments of a segmented envelope `main` go in the whole envelope: its
/// length and, per segment in sending order, (offset, length). None if `main` is not
/// segmented (or not an envelope at all: `decode` says what is wrong with it).
pub fn segment_plan(main: &[u8]) -> Result<Option<SegmentPlan>, WireError> {
    if main.len() < HEADER_BYTES || main[0..4] != MAGIC || main[6] & SEGMENTED == 0 {
        return Ok(None);
    }
    let bad = |reason: String| WireError::Segments { reason };
    // Lengths are u32 on the wire; u64 arithmetic cannot overflow on any target.
    let body_len = u64::from(u32_at(main, 24));
    let payload_len = u64::from(u32_at(main, 28));
    let main_len = main.len() as u64;
    let rest = main_len
        .checked_sub(HEADER_BYTES as u64 + body_len + 4)
        .ok_or_else(|| {
            bad(format!(
                "{main_len} bytes cannot hold the header, body and table"
            ))
        })?;
    let count = u64::from(u32_at(main, main.len() - 4));
    let table = (count * 8 <= rest)
        .then_some(count * 8)
        .ok_or_else(|| bad(format!("a table of {count} segments does not fit")))?;
    let kept = rest - table;
    let table_at = main_len - 4 - table;
    let payload_at = HEADER_BYTES as u64 + body_len;
    let total = usize::try_from(payload_at + payload_len).map_err(|_| {
        bad(format!(
            "a {payload_len}-byte payload does not fit in memory"
        ))
    })?;
    let (mut end, mut sum) = (0u64, 0u64);
    let mut gaps = Vec::new();
    for i in 0..count as usize {
        let at = u64::from(u32_at(main, table_at as usize + 8 * i));
        let len = u64::from(u32_at(main, table_at as usize + 8 * i + 4));
        if at < end || len == 0 || at + len > payload_len {
            return Err(bad(format!(
                "segment {i} at {at} of {len} bytes overlaps another or leaves the {payload_len}-byte payload"
            )));
        }
        end = at + len;
        sum += len;
        // Below `total`, which fits in usize.
        gaps.push(((payload_at + at) as usize, len as usize));
    }
    if kept + sum != payload_len {
        return Err(bad(format!(
            "{kept} bytes sent with the envelope and {sum} in segments make no {payload_len}-byte payload"
        )));
    }
    let (total, kept_end) = (total, table_at as usize);
    Ok(Some(SegmentPlan {
        total,
        kept_end,
        gaps,
    }))
}

/// Where a segmented envelope's parts go (see [`segment_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentPlan {
    /// Bytes of the whole envelope.
    pub total: usize,
    /// Where the segment table starts in the main message.
    kept_end: usize,
    /// (offset in the whole envelope, length) of each segment, in order.
    pub gaps: Vec<(usize, usize)>,
}

impl SegmentPlan {
    /// Copy what `main` holds into `whole` (of exactly `total` bytes), leaving the
    /// gaps for the segments to be received into; the result decodes as an envelope
    /// once they are.
    pub fn assemble(&self, main: &[u8], whole: &mut [u8]) {
        assert_eq!(whole.len(), self.total, "a buffer of the whole envelope");
        let (mut from, mut to) = (0, 0);
        for &(at, len) in &self.gaps {
            let n = at - to;
            whole[to..at].copy_from_slice(&main[from..from + n]);
            from += n;
            to = at + len;
        }
        whole[to..].copy_from_slice(&main[from..self.kept_end]);
        whole[6] &= !SEGMENTED;
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The notice that an envelope of `len` bytes follows as a message of its own, for a
/// receiver whose posted buffers are shorter.
pub fn long_notice(len: usize) -> Vec<u8> {
    let mut notice = Vec::with_capacity(NOTICE_BYTES);
    notice.extend_from_slice(&LONG_MAGIC);
    notice.extend_from_slice(&VERSION.to_le_bytes());
    notice.extend_from_slice(&[0, 0]);
    notice.extend_from_slice(&(len as u64).to_le_bytes());
    notice
}

/// The length a long-envelope notice announces; None if `bytes` is not one of this
/// version.
pub fn noticed_len(bytes: &[u8]) -> Option<u64> {
    let notice =
        bytes.len() == NOTICE_BYTES && bytes[0..4] == LONG_MAGIC && u16_at(bytes, 4) == VERSION;
    notice.then(|| u64::from(u32_at(bytes, 8)) | u64::from(u32_at(bytes, 12)) << 32)
}

/// The destination PE an envelope's header names, if it is long enough to have one
/// (a process running several PEs routes by it; `decode` checks the rest).
#[cfg(feature = "mpi")]
pub(crate) fn destination(bytes: &[u8]) -> Option<Pe> {
    (bytes.len() >= HEADER_BYTES).then(|| u32_at(bytes, 12))
}

/// Decode one envelope received by PE `me`; the payload stays in `buf`.
pub(crate) fn decode(buf: Arc<Vec<u8>>, me: Pe) -> Result<Envelope, WireError> {
    let bytes = &buf[..];
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
    let tag = bytes[7];
    let src = u32_at(bytes, 8);
    let dst = u32_at(bytes, 12);
    let prio = u32_at(bytes, 16) as i32;
    let seq = u32_at(bytes, 20);
    let body_len = u32_at(bytes, 24);
    let payload_len = u32_at(bytes, 28);
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
        .ok_or(WireError::UnknownKind(tag))?;
    if dst != me {
        return Err(WireError::WrongDestination { dst, me });
    }
    let body_end = HEADER_BYTES + body_len as usize;
    let body = &bytes[HEADER_BYTES..body_end];
    let kind = if tag == USER {
        crate::wire::user_body::read(body).map(|(dest, hops)| Kind::User {
            dest,
            payload: Payload::placeholder(),
            hops,
        })
    } else {
        body_options()
            .with_limit(u64::from(body_len))
            .deserialize(body)
            .map_err(|e| e.to_string())
    };
    let mut kind = kind.map_err(|reason| WireError::Body {
        kind: kind_name,
        reason,
    })?;
    if kind_tag(&kind) != tag {
        return Err(WireError::Body {
            kind: kind_name,
            reason: format!("it decodes as {}", KIND_NAMES[kind_tag(&kind) as usize]),
        });
    }
    let has_payload = flags & HAS_PAYLOAD != 0;
    let run = flags & RUN != 0;
    match (payload_mut(&mut kind), has_payload) {
        (Some(slot), true) => {
            *slot = Payload::from_wire(buf, body_end, run);
        }
        (None, false) if payload_len == 0 => {}
        _ => {
            return Err(WireError::Flags {
                kind: kind_name,
                has_payload,
            })
        }
    }
    Ok(Envelope {
        src,
        seq,
        prio,
        expedited: flags & EXPEDITED != 0,
        counted: flags & COUNTED != 0,
        kind,
    })
}

/// Decode `bytes` as an envelope for PE `me` and drop it: what a fuzzer drives.
pub fn check(bytes: &[u8], me: Pe) -> Result<(), WireError> {
    decode(Arc::new(bytes.to_vec()), me).map(drop)
}

impl Envelope {
    /// Bytes this envelope would take on a wire: the header, the address and the body.
    pub(crate) fn wire_bytes(&self) -> u64 {
        let dest_bytes = |d: &Dest| match d {
            Dest::Chare(_) => 12,
            Dest::Group(_) | Dest::Array(_) => 8,
            Dest::Element(_, addr) => 16 + addr.key.0.len() as u64,
            Dest::ElementAt(_, addr, _) => 20 + addr.key.0.len() as u64,
        };
        let body = match &self.kind {
            Kind::User { dest, payload, .. } | Kind::Bcast { dest, payload, .. } => {
                dest_bytes(dest) + payload.wire_len()
            }
            Kind::CreateChare { init, .. } | Kind::CreateGroup { init, .. } => 16 + init.wire_len(),
            Kind::CreateArray { init, shape, .. } => {
                24 + init.wire_len() + bincode::serialized_size(&**shape).unwrap_or(0)
            }
            Kind::Insert { addr, init, .. } => 16 + addr.key.0.len() as u64 + init.wire_len(),
            Kind::Migrate { addr, state, .. } => 36 + addr.key.0.len() as u64 + state.wire_len(),
            Kind::Moved { addr, .. } => 32 + addr.key.0.len() as u64,
            Kind::Contribute { body, .. } | Kind::HomeContribute { body, .. } => {
                24 + bincode::serialized_size(&body.0).unwrap_or(0)
                    + bincode::serialized_size(&body.1).unwrap_or(0)
            }
            Kind::QdReply { .. } => 24,
            Kind::PeFailed { callback, .. } => 4 + bincode::serialized_size(callback).unwrap_or(0),
            _ => 16,
        };
        HEADER_BYTES as u64 + body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::ChareId;
    use crate::msg::callback::Callback;
    use crate::msg::envelope::Dest;

    fn user(msg: Vec<u32>) -> Envelope {
        Envelope {
            src: 3,
            seq: 41,
            prio: -7,
            expedited: false,
            counted: true,
            kind: Kind::User {
                dest: Dest::Chare(ChareId {
                    pe: 1,
                    creator: 0,
                    seq: 9,
                }),
                payload: Payload::new(msg),
                hops: 0,
            },
        }
    }

    #[test]
    fn a_user_message_round_trips() {
        let mut out = Vec::new();
        encode(&user(vec![1, 2, 3]), 1, &mut out).expect("encodes");
        let env = decode(Arc::new(out), 1).expect("decodes");
        assert_eq!(
            (env.src, env.prio, env.expedited, env.counted),
            (3, -7, false, true)
        );
        let Kind::User { dest, payload, .. } = env.kind else {
            panic!("not a user message")
        };
        assert!(matches!(dest, Dest::Chare(c) if c.seq == 9));
        assert_eq!(payload.take::<Vec<u32>>().expect("payload"), vec![1, 2, 3]);
    }

    #[test]
    fn runs_and_kinds_without_payload_round_trip() {
        let mut env = user(vec![]);
        if let Kind::User { payload, .. } = &mut env.kind {
            *payload = Payload::new(5u64);
            payload.absorb(6u64).expect("same type");
            payload.absorb(7u64).expect("same type");
        }
        let mut out = Vec::new();
        encode(&env, 1, &mut out).expect("encodes");
        let back = decode(Arc::new(out.clone()), 1).expect("decodes");
        let Kind::User { payload, .. } = back.kind else {
            panic!("not a user message")
        };
        assert_eq!(payload.count(), 3);
        assert_eq!(payload.take_run::<u64>().expect("run"), vec![5, 6, 7]);

        let qd = Envelope {
            src: 0,
            seq: 1,
            prio: 0,
            expedited: true,
            counted: false,
            kind: Kind::QdRequest {
                callback: Callback::Exit,
            },
        };
        out.clear();
        encode(&qd, 2, &mut out).expect("encodes");
        let back = decode(Arc::new(out), 2).expect("decodes");
        assert!(matches!(
            back.kind,
            Kind::QdRequest {
                callback: Callback::Exit
            }
        ));
    }

    proptest::proptest! {
        /// Random bytes, and valid envelopes with random bytes overwritten or cut off,
        /// decode to an envelope or a `WireError`, never a panic.
        #[test]
        fn garbled_bytes_never_panic(
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            flips in proptest::collection::vec((0usize..200, proptest::prelude::any::<u8>()), 0..8),
            cut in 0usize..200,
        ) {
            let _ = check(&noise, 1);
            let mut good = Vec::new();
            encode(&user(vec![7; 5]), 1, &mut good).expect("encodes");
            for (at, b) in flips {
                let n = good.len();
                good[at % n] = b;
            }
            let _ = check(&good, 1);
            let _ = check(&good[..cut.min(good.len())], 1);
        }
    }

    #[test]
    fn bad_bytes_are_named_not_panicked_on() {
        let mut good = Vec::new();
        encode(&user(vec![4; 10]), 1, &mut good).expect("encodes");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..10].to_vec(), "shorter than"),
            ([b"XXXX", &good[4..]].concat(), "bad magic"),
            (
                {
                    let mut b = good.clone();
                    b[4] = 9;
                    b
                },
                "wire version 9",
            ),
            (good[..good.len() - 1].to_vec(), "arrived"),
            (
                {
                    let mut b = good.clone();
                    b[7] = 99;
                    b
                },
                "unknown message kind 99",
            ),
            (
                {
                    let mut b = good.clone();
                    b[HEADER_BYTES] = 0xff;
                    b[HEADER_BYTES + 1] = 0xff;
                    b
                },
                "does not decode",
            ),
        ];
        for (bytes, says) in cases {
            let err = decode(Arc::new(bytes), 1).expect_err("bad input");
            assert!(err.to_string().contains(says), "{says}: {err}");
        }
        let err = decode(Arc::new(good), 2).expect_err("wrong PE");
        assert!(err.to_string().contains("reached PE 2"), "{err}");
        let runtime = err.at(2, "rank 1");
        assert!(runtime.to_string().contains("rank 1"), "{runtime}");
    }

    /// A user message with two long `Bytes` around short fields.
    fn long(a: &Bytes, b: &Bytes) -> Envelope {
        let mut env = user(Vec::new());
        if let Kind::User { payload, .. } = &mut env.kind {
            *payload = Payload::new((7u8, a.clone(), vec![1u16, 2], b.clone(), 9u64));
        }
        env
    }

    /// Reassemble `main` and its segments as a receiver does.
    fn reassemble(main: &[u8], segments: &[Bytes]) -> Vec<u8> {
        let plan = segment_plan(main).expect("valid").expect("segmented");
        assert_eq!(plan.gaps.len(), segments.len());
        let mut whole = vec![0xAA; plan.total];
        plan.assemble(main, &mut whole);
        for (&(at, len), seg) in plan.gaps.iter().zip(segments) {
            whole[at..at + len].copy_from_slice(seg);
        }
        whole
    }

    #[test]
    fn long_bytes_travel_as_segments_and_reassemble_exactly() {
        let a = Bytes::from((0..SEGMENT_MIN + 5).map(|i| i as u8).collect::<Vec<u8>>());
        let b = Bytes::from(vec![3u8; 2 * SEGMENT_MIN]);
        let env = long(&a, &b);
        let mut plain = Vec::new();
        encode(&env, 1, &mut plain).expect("encodes");
        let mut main = Vec::new();
        let segments = encode_segmented(&env, 1, &mut main).expect("encodes");
        assert_eq!(segments.len(), 2);
        assert_eq!(segments[0].as_ptr(), a.as_ptr(), "sent from where it is");
        assert!(
            main.len() < 200,
            "the long bytes stay out of the main message"
        );
        assert_eq!(reassemble(&main, &segments), plain);
        let env = decode(Arc::new(plain), 1).expect("decodes");
        let Kind::User { payload, .. } = env.kind else {
            panic!("not a user message")
        };
        type Long = (u8, Bytes, Vec<u16>, Bytes, u64);
        let (x, ra, v, rb, y) = payload.take::<Long>().expect("payload");
        assert_eq!((x, v, y), (7, vec![1, 2], 9));
        assert!(ra == a && rb == b);
    }

    #[test]
    fn short_messages_are_not_segmented() {
        let env = user(vec![1, 2, 3]);
        let (mut plain, mut main) = (Vec::new(), Vec::new());
        encode(&env, 1, &mut plain).expect("encodes");
        assert!(encode_segmented(&env, 1, &mut main)
            .expect("encodes")
            .is_empty());
        assert_eq!(main, plain);
        assert_eq!(segment_plan(&main), Ok(None));
    }

    #[test]
    fn bad_segment_tables_and_unreceived_segments_are_errors() {
        let a = Bytes::from(vec![1u8; SEGMENT_MIN]);
        let b = Bytes::from(vec![2u8; SEGMENT_MIN]);
        let mut main = Vec::new();
        encode_segmented(&long(&a, &b), 1, &mut main).expect("encodes");
        let n = main.len();
        let garble = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut m = main.clone();
            edit(&mut m);
            m
        };
        let cases = [
            garble(&|m| m[n - 4..].copy_from_slice(&1000u32.to_le_bytes())),
            garble(&|m| m[n - 8..n - 4].copy_from_slice(&0u32.to_le_bytes())),
            garble(&|m| m[n - 12..n - 8].copy_from_slice(&0u32.to_le_bytes())),
            garble(&|m| m[n - 16..n - 12].copy_from_slice(&u32::MAX.to_le_bytes())),
            garble(&|m| m[28..32].copy_from_slice(&7u32.to_le_bytes())),
            garble(&|m| m.truncate(HEADER_BYTES + 2)),
        ];
        for (i, m) in cases.iter().enumerate() {
            let err = segment_plan(m).expect_err(&format!("case {i}"));
            assert!(matches!(err, WireError::Segments { .. }), "case {i}: {err}");
        }
        let err = decode(Arc::new(main), 1).expect_err("segments missing");
        assert!(
            err.to_string().contains("segments were not received"),
            "{err}"
        );
    }

    #[test]
    fn a_long_notice_names_its_length_and_never_decodes_as_an_envelope() {
        for len in [0, 16 << 10, u64::from(u32::MAX) + 7] {
            let notice = long_notice(len as usize);
            assert_eq!(noticed_len(&notice), Some(len));
            let err = decode(Arc::new(notice), 1).expect_err("a notice is no envelope");
            assert!(err.to_string().contains("long-envelope notice"), "{err}");
        }
        let mut envelope = Vec::new();
        encode(&user(vec![1, 2]), 1, &mut envelope).expect("encodes");
        assert_eq!(noticed_len(&envelope), None);
        let mut old = long_notice(5);
        old[4] ^= 1;
        assert_eq!(noticed_len(&old), None, "another version's notice");
        assert_eq!(noticed_len(&long_notice(5)[..15]), None, "a short one");
    }
}
