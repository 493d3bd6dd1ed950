//! The versioned wire form of an envelope, for layers whose PEs live in different
//! processes.
//!
//! ```text
//! offset size field
//!      0    4 magic "CHRS"
//!      4    2 version (4)
//!      6    1 flags: 1 expedited, 2 counted, 4 payload is a run, 8 has a payload,
//!             16 segmented (long byte strings follow as their own messages)
//!      7    1 kind: which message this is (see KIND_NAMES; each family of runtime
//!             messages declares its tags in `msg/kind/`)
//!      8    4 source PE
//!     12    4 destination PE
//!     16    4 priority (i32)
//!     20    4 the sender's sequence number of this message
//!     24    4 length of the kind's body
//!     28    4 length of the payload
//!     32      body: a user message's destination and hops (see `user_body.rs`); any
//!             other kind, its tag (u32) and its fields, bincode (fixed-width integers)
//!             with payload fields empty
//!             payload: the message's own bincode encoding, raw
//! ```
//!
//! An envelope longer than a receiver's posted buffers (the mpi layer's) is preceded
//! by a 16-byte notice, magic "CHRL", the version, two zero bytes and its length
//! (u64), and follows as a message of its own (see [`long_notice`]).
//!
//! Decoding checks every length against the bytes received before it allocates, so
//! truncated, oversized or garbled input yields a `WireError` naming what was wrong.

mod decode;
mod encode;
mod segments;
#[cfg(test)]
mod tests;
pub(crate) mod user_body;

pub use decode::check;
pub(crate) use decode::counted_weight;
pub(crate) use decode::decode;
#[cfg(feature = "mpi")]
pub(crate) use decode::decode_from;
#[cfg(feature = "mpi")]
pub(crate) use decode::destination;
#[cfg(feature = "mpi")]
pub(crate) use encode::size_hint;
pub use encode::{encode, encode_segmented};
pub use segments::{long_notice, noticed_len, segment_plan, SegmentPlan};

use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::{Envelope, Kind};
use crate::msg::kind::{kind_names, KIND_COUNT, USER_TAG};
use bincode::Options;
use thiserror::Error;

/// The first four bytes of every envelope.
pub const MAGIC: [u8; 4] = *b"CHRS";
/// The wire version this build writes and reads.
pub const VERSION: u16 = 13;
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

/// Names of the kinds, by their number on the wire (each family's table in
/// `msg/kind/`).
pub const KIND_NAMES: [&str; KIND_COUNT] = kind_names();

/// What was wrong with bytes that should have been an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// Fewer bytes than a header.
    #[error("{len} bytes is shorter than the {HEADER_BYTES}-byte envelope header")]
    Truncated {
        /// How many bytes arrived.
        len: usize,
    },
    /// The magic number is wrong: not a chorus envelope.
    #[error("bad magic {found:02x?} (expected {MAGIC:02x?}): not a chorus envelope")]
    BadMagic {
        /// The first four bytes as received.
        found: [u8; 4],
    },
    /// Written by another wire version.
    #[error("wire version {found}, but this build speaks version {VERSION}: run the same chorus build on every rank")]
    Version {
        /// The wire version the header gives.
        found: u16,
    },
    /// The header's lengths disagree with the bytes received.
    #[error("header says {header} bytes (body {body} + payload {payload}) but {actual} arrived")]
    Length {
        /// The total length the header implies, header included.
        header: u64,
        /// The body length the header gives.
        body: u32,
        /// The payload length the header gives.
        payload: u32,
        /// How many bytes arrived.
        actual: usize,
    },
    /// The header names a kind this build does not know.
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    /// Addressed to another PE than the one that received it.
    #[error("addressed to PE {dst}, but it reached PE {me}")]
    WrongDestination {
        /// The destination PE the header gives.
        dst: Pe,
        /// The PE that received it.
        me: Pe,
    },
    /// The body did not decode as the kind the header names.
    #[error("the {kind} body does not decode: {reason}")]
    Body {
        /// The name of the kind the header gives.
        kind: &'static str,
        /// Why the body does not decode as that kind.
        reason: String,
    },
    /// The header's flags disagree with the body.
    #[error("the {kind} header says payload={has_payload}, which that kind never has")]
    Flags {
        /// The name of the kind the header gives.
        kind: &'static str,
        /// Whether the header's flags say a payload follows.
        has_payload: bool,
    },
    /// A segmented envelope's table is inconsistent, or its segments were not received.
    #[error("bad segmented envelope: {reason}")]
    Segments {
        /// What was inconsistent or missing.
        reason: String,
    },
    /// A run's count of messages is missing or outside what a run can hold.
    #[error("a run of messages claims {claimed:?} messages; a run holds 1..={max}")]
    Run {
        /// The count the payload's first 8 bytes give, if it has them.
        claimed: Option<u64>,
        /// The most a run holds.
        max: u64,
    },
    /// A message could not be encoded for sending.
    #[error("could not encode a {kind} envelope: {reason}")]
    Encode {
        /// The name of the envelope's kind.
        kind: &'static str,
        /// Why it could not be encoded.
        reason: String,
    },
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
const USER: u8 = USER_TAG;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Envelope {
    /// Bytes this envelope would take on a wire: the header, the address and the body.
    pub(crate) fn wire_bytes(&self) -> u64 {
        let body = match &self.kind {
            Kind::User { dest, payload, .. } => dest.wire_bytes() + payload.wire_len(),
            kind => kind.family().map_or(0, |f| f.body().body_bytes()),
        };
        HEADER_BYTES as u64 + body
    }
}
