//! Protocol Buffers wire encoding: varints, zigzag, tags and length-delimited fields.
//!
//! Shared by the Perfetto writer and reader and by the analysis side's packed slice
//! logs, which use the same varints to keep a slice in a dozen bytes.

/// Wire type of varint fields (integers, enums, bools).
pub const VARINT: u8 = 0;
/// Wire type of 64-bit fixed fields.
pub const FIXED64: u8 = 1;
/// Wire type of length-delimited fields (strings, bytes, nested messages).
pub const LEN: u8 = 2;
/// Wire type of 32-bit fixed fields.
pub const FIXED32: u8 = 5;

/// Appends `v` as a base-128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Maps signed to unsigned so that small magnitudes stay small (protobuf's sint64).
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends a field key: field number and wire type.
pub fn put_key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// Appends a varint field.
pub fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_key(out, field, VARINT);
    put_varint(out, v);
}

/// Appends a 64-bit fixed field (protobuf's `fixed64`).
pub fn put_fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    put_key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-delimited field holding `bytes`.
pub fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a nested message written by `f` as a length-delimited field.
pub fn put_message(out: &mut Vec<u8>, field: u32, f: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    f(&mut inner);
    put_bytes(out, field, &inner);
}

/// Reads a varint at `*pos`, advancing it; `None` if truncated or longer than 10 bytes.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// One field of a message, as read by [`Fields`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// A varint (wire type 0).
    Varint(u64),
    /// A 64-bit fixed value (wire type 1).
    Fixed64(u64),
    /// A length-delimited payload (wire type 2).
    Bytes(&'a [u8]),
    /// A 32-bit fixed value (wire type 5).
    Fixed32(u32),
}

impl Value<'_> {
    /// The value as an integer, for varint and fixed fields.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(u64::from(v)),
            Value::Bytes(_) => None,
        }
    }
}

/// Iterates over the fields of one encoded message; yields `Err(offset)` once, at
/// the first malformed field, and then stops.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    /// The fields of the message `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Fields {
            buf,
            pos: 0,
            failed: false,
        }
    }

    fn field(&mut self) -> Option<(u32, Value<'a>)> {
        let key = get_varint(self.buf, &mut self.pos)?;
        let field = u32::try_from(key >> 3).ok()?;
        let v = match (key & 7) as u8 {
            VARINT => Value::Varint(get_varint(self.buf, &mut self.pos)?),
            FIXED64 => {
                let b = self.buf.get(self.pos..self.pos + 8)?;
                self.pos += 8;
                Value::Fixed64(u64::from_le_bytes(b.try_into().ok()?))
            }
            LEN => {
                let n = usize::try_from(get_varint(self.buf, &mut self.pos)?).ok()?;
                let b = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
                self.pos += n;
                Value::Bytes(b)
            }
            FIXED32 => {
                let b = self.buf.get(self.pos..self.pos + 4)?;
                self.pos += 4;
                Value::Fixed32(u32::from_le_bytes(b.try_into().ok()?))
            }
            _ => return None,
        };
        Some((field, v))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), usize>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let at = self.pos;
        match self.field() {
            Some(f) => Some(Ok(f)),
            None => {
                self.failed = true;
                Some(Err(at))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_protobuf_examples() {
        // The examples of the protobuf encoding guide: 1, 150 and 300.
        let mut b = Vec::new();
        put_varint(&mut b, 1);
        put_varint(&mut b, 150);
        put_varint(&mut b, 300);
        assert_eq!(b, [0x01, 0x96, 0x01, 0xac, 0x02]);
        let mut pos = 0;
        let back: Vec<u64> = (0..3).map(|_| get_varint(&b, &mut pos).unwrap()).collect();
        assert_eq!(back, [1, 150, 300]);
        let mut max = Vec::new();
        put_varint(&mut max, u64::MAX);
        assert_eq!(max.len(), 10);
        assert_eq!(get_varint(&max, &mut 0), Some(u64::MAX));
        assert_eq!(get_varint(&[0x80, 0x80], &mut 0), None);
    }

    #[test]
    fn zigzag_round_trips() {
        for (v, z) in [(0i64, 0u64), (-1, 1), (1, 2), (-2, 3), (i64::MIN, u64::MAX)] {
            assert_eq!(zigzag(v), z);
            assert_eq!(unzigzag(z), v);
        }
    }

    #[test]
    fn fields_encode_and_decode() {
        // Field 1 = 150 is the guide's `08 96 01`; a string field 2 = "testing" is
        // `12 07 74 65 73 74 69 6e 67`.
        let mut b = Vec::new();
        put_uint(&mut b, 1, 150);
        put_bytes(&mut b, 2, b"testing");
        assert_eq!(
            b,
            [0x08, 0x96, 0x01, 0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']
        );
        // Field 47 as fixed64: key (47 << 3 | 1) = 377 = `f9 02`, then 8 bytes LE.
        let mut f = Vec::new();
        put_fixed64(&mut f, 47, 0x0102);
        assert_eq!(f, [0xf9, 0x02, 0x02, 0x01, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            Fields::new(&f).next(),
            Some(Ok((47, Value::Fixed64(0x0102))))
        );
        let f: Vec<_> = Fields::new(&b).collect();
        assert_eq!(
            f,
            [
                Ok((1, Value::Varint(150))),
                Ok((2, Value::Bytes(b"testing")))
            ]
        );
        let cut = &b[..b.len() - 1];
        assert_eq!(Fields::new(cut).last(), Some(Err(3)));
    }
}
