//! Encoding an envelope into its wire form, whole or with long byte strings left
//! out to travel as segments.

use super::{
    body_options, WireError, COUNTED, EXPEDITED, HAS_PAYLOAD, HEADER_BYTES, MAGIC, RUN, SEGMENTED,
    SEGMENT_MIN, VERSION,
};
use crate::base::bytes::Bytes;
use crate::base::ids::Pe;
use crate::msg::envelope::{Envelope, Kind};
use crate::msg::payload::Payload;
use bincode::Options;

/// About the bytes the wire form of `env` takes (exact for the payload, a guess for
/// the body), to size a buffer before `encode`.
#[cfg(feature = "mpi")]
pub(crate) fn size_hint(env: &Envelope) -> usize {
    HEADER_BYTES + 64 + env.kind.payload().map_or(0, |p| p.wire_len() as usize)
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
        kind: env.kind.name(),
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
pub(super) struct Diverting<'a> {
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
pub(super) fn encode_with(
    env: &Envelope,
    dst: Pe,
    out: &mut Vec<u8>,
    payload: impl FnOnce(&Payload, &mut Vec<u8>) -> Result<(bool, usize), String>,
) -> Result<(), WireError> {
    let tag = env.kind.tag();
    let kind_name = env.kind.name();
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
    if let Some(p) = env.kind.payload() {
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
