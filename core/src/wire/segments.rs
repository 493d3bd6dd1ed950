//! Segmented envelopes and long-envelope notices: how a receiver learns where the
//! parts of an envelope sent in several messages go.

use super::{
    u16_at, u32_at, WireError, HEADER_BYTES, LONG_MAGIC, MAGIC, NOTICE_BYTES, SEGMENTED, VERSION,
};

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
