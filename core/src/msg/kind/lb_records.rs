//! The compact wire form of a balancing step's load records (`SyncUp`'s), which
//! every step gathers up the PE tree to PE 0: each record says only what differs
//! from the one before it. A record is a flags byte, then its PE (a varint, when it
//! is not the previous record's), its load (8 bytes, when not the previous one's),
//! its key as the bytes it shares with the previous key's front and back and the
//! bytes between, and its receivers when it has any (each key coded against the
//! record's own, messages and bytes as varints). Neighbouring elements of a
//! home sync on one PE with keys that differ in a byte or two, and predicted loads
//! repeat, so a Jacobi2D block's record takes 5 to 13 bytes where its fields take
//! 44 (a quarter of the records of 1,024 PEs, four blocks each, in about 8 KB).

use crate::base::ids::{IndexKey, Pe};
use serde::de::Error;
use serde::{Deserialize, Serialize};
use serde::{Deserializer, Serializer};

/// One element's measured load in a step, as the gather carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ObjRecord {
    pub(crate) key: IndexKey,
    /// The PE it called `at_sync` on (and stays on until the plan moves it).
    pub(crate) pe: Pe,
    /// Seconds its handlers ran since the last step.
    pub(crate) load: f64,
    /// Its heaviest receivers in the array: (key, messages, bytes).
    pub(crate) comm: Vec<(IndexKey, u64, u64)>,
}

/// A PE's load outside the array's handlers in a step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PeRecord {
    pub(crate) pe: Pe,
    pub(crate) background: f64,
}

/// The record's PE differs from the previous record's and follows.
const NEW_PE: u8 = 1;
/// The record's load differs from the previous record's and follows.
const NEW_LOAD: u8 = 2;
/// The record's receivers follow.
const COMM: u8 = 4;

/// Where encoded bytes go: a buffer, or a count of them (`Body::body_bytes`).
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for u64 {
    fn put(&mut self, bytes: &[u8]) {
        *self += bytes.len() as u64;
    }
}

fn put_varint(out: &mut impl Sink, mut v: u64) {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            buf[n] = low;
            n += 1;
            break;
        }
        buf[n] = low | 0x80;
        n += 1;
    }
    out.put(&buf[..n]);
}

fn put_len(out: &mut impl Sink, n: usize) {
    put_varint(out, n as u64);
}

/// Key `key` as the bytes it shares with `prev` at its front and back (never
/// overlapping in either) and the bytes between.
fn put_key(out: &mut impl Sink, prev: &[u8], key: &[u8]) {
    let front = prev.iter().zip(key).take_while(|(a, b)| a == b).count();
    let back = prev[front..]
        .iter()
        .rev()
        .zip(key[front..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    put_len(out, front);
    put_len(out, back);
    let middle = &key[front..key.len() - back];
    put_len(out, middle.len());
    out.put(middle);
}

fn put_objs(out: &mut impl Sink, objs: &[ObjRecord]) {
    put_len(out, objs.len());
    let mut prev: Option<&ObjRecord> = None;
    for o in objs {
        let new_pe = prev.is_none_or(|p| p.pe != o.pe);
        let new_load = prev.is_none_or(|p| p.load.to_bits() != o.load.to_bits());
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let flags =
            flag(new_pe, NEW_PE) | flag(new_load, NEW_LOAD) | flag(!o.comm.is_empty(), COMM);
        out.put(&[flags]);
        if new_pe {
            put_varint(out, u64::from(o.pe));
        }
        if new_load {
            out.put(&o.load.to_le_bytes());
        }
        put_key(
            out,
            prev.map_or(&[], |p| p.key.as_bytes()),
            o.key.as_bytes(),
        );
        if !o.comm.is_empty() {
            put_len(out, o.comm.len());
            for (to, msgs, bytes) in &o.comm {
                // A receiver is most often a neighbour, whose key is near the sender's.
                put_key(out, o.key.as_bytes(), to.as_bytes());
                put_varint(out, *msgs);
                put_varint(out, *bytes);
            }
        }
        prev = Some(o);
    }
}

fn put_pes(out: &mut impl Sink, pes: &[PeRecord]) {
    put_len(out, pes.len());
    for p in pes {
        put_varint(out, u64::from(p.pe));
        out.put(&p.background.to_le_bytes());
    }
}

/// The bytes `objs` and `pes` take on the wire, each list with its length prefix.
pub(crate) fn wire_len(objs: &[ObjRecord], pes: &[PeRecord]) -> u64 {
    let mut n = 0u64;
    put_objs(&mut n, objs);
    put_pes(&mut n, pes);
    // bincode's u64 length before each list's bytes.
    n + 16
}

/// Why a record list's bytes do not decode.
#[derive(Debug, thiserror::Error)]
enum RecordsError {
    #[error("the load records end inside a field")]
    Short,
    #[error("a load record's varint runs past 64 bits")]
    LongVarint,
    #[error("load record {0} names no PE or load and no earlier record gives one")]
    NoPrevious(usize),
    #[error("load record {0} has unknown flags {1:#x}")]
    Flags(usize, u8),
    #[error("load record {0}'s key shares {1} bytes with a previous key of {2}")]
    Shares(usize, usize, usize),
    #[error("a load record names PE {0}, past the PE numbers")]
    Pe(u64),
    #[error("{0} bytes follow the load records")]
    Trailing(usize),
}

/// A cursor over received bytes; every read checks the length.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordsError> {
        if n > self.bytes.len() {
            return Err(RecordsError::Short);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, RecordsError> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, RecordsError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(RecordsError::LongVarint);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordsError::LongVarint)
    }

    /// A length, which can be no more than the bytes left (each item takes one).
    fn len(&mut self) -> Result<usize, RecordsError> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or(RecordsError::Short)
    }

    fn pe(&mut self) -> Result<Pe, RecordsError> {
        let v = self.varint()?;
        Pe::try_from(v).map_err(|_| RecordsError::Pe(v))
    }

    fn f64(&mut self) -> Result<f64, RecordsError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    fn key(&mut self, i: usize, prev: &[u8]) -> Result<IndexKey, RecordsError> {
        // Bytes shared with `prev`, not bytes to come: bounded by `prev` alone.
        let (front, back) = (self.varint()?, self.varint()?);
        let shared = front.saturating_add(back);
        if shared > prev.len() as u64 {
            let shared = usize::try_from(shared).unwrap_or(usize::MAX);
            return Err(RecordsError::Shares(i, shared, prev.len()));
        }
        let (front, back) = (front as usize, back as usize);
        let middle = self.len()?;
        let middle = self.take(middle)?;
        let mut key = Vec::with_capacity(front + middle.len() + back);
        key.extend_from_slice(&prev[..front]);
        key.extend_from_slice(middle);
        key.extend_from_slice(&prev[prev.len() - back..]);
        Ok(IndexKey::from(key))
    }

    fn comm(
        &mut self,
        i: usize,
        from: &IndexKey,
    ) -> Result<Vec<(IndexKey, u64, u64)>, RecordsError> {
        let n = self.len()?;
        let mut comm = Vec::with_capacity(n);
        for _ in 0..n {
            let key = self.key(i, from.as_bytes())?;
            comm.push((key, self.varint()?, self.varint()?));
        }
        Ok(comm)
    }

    fn obj(&mut self, i: usize, prev: Option<&ObjRecord>) -> Result<ObjRecord, RecordsError> {
        let flags = self.byte()?;
        if flags & !(NEW_PE | NEW_LOAD | COMM) != 0 {
            return Err(RecordsError::Flags(i, flags));
        }
        let pe = match (flags & NEW_PE != 0, prev) {
            (true, _) => self.pe()?,
            (false, Some(p)) => p.pe,
            (false, None) => return Err(RecordsError::NoPrevious(i)),
        };
        let load = match (flags & NEW_LOAD != 0, prev) {
            (true, _) => self.f64()?,
            (false, Some(p)) => p.load,
            (false, None) => return Err(RecordsError::NoPrevious(i)),
        };
        let key = self.key(i, prev.map_or(&[], |p| p.key.as_bytes()))?;
        let comm = if flags & COMM != 0 {
            self.comm(i, &key)?
        } else {
            Vec::new()
        };
        Ok(ObjRecord {
            key,
            pe,
            load,
            comm,
        })
    }

    fn objs(&mut self) -> Result<Vec<ObjRecord>, RecordsError> {
        let n = self.len()?;
        let mut objs: Vec<ObjRecord> = Vec::with_capacity(n);
        for i in 0..n {
            let o = self.obj(i, objs.last())?;
            objs.push(o);
        }
        Ok(objs)
    }

    fn pes(&mut self) -> Result<Vec<PeRecord>, RecordsError> {
        let n = self.len()?;
        let mut pes = Vec::with_capacity(n);
        for _ in 0..n {
            let pe = self.pe()?;
            pes.push(PeRecord {
                pe,
                background: self.f64()?,
            });
        }
        Ok(pes)
    }

    fn end(&self) -> Result<(), RecordsError> {
        match self.bytes.len() {
            0 => Ok(()),
            n => Err(RecordsError::Trailing(n)),
        }
    }
}

/// Decode the bytes of one list with `read`, which must use every byte.
fn decode<'a, T>(
    bytes: &'a [u8],
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, RecordsError>,
) -> Result<T, RecordsError> {
    let mut r = Reader { bytes };
    let out = read(&mut r)?;
    r.end()?;
    Ok(out)
}

/// Serde for `SyncUp::objs`: the compact records as one byte string.
pub(crate) mod objs {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(objs: &[ObjRecord], s: S) -> Result<S::Ok, S::Error> {
        let mut buf = Vec::new();
        put_objs(&mut buf, objs);
        s.serialize_bytes(&buf)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ObjRecord>, D::Error> {
        let bytes = crate::base::packed::deserialize_bytes(d)?;
        decode(&bytes, Reader::objs).map_err(D::Error::custom)
    }
}

/// Serde for `SyncUp::pes`: each PE and its background load, as one byte string.
pub(crate) mod pes {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(pes: &[PeRecord], s: S) -> Result<S::Ok, S::Error> {
        let mut buf = Vec::new();
        put_pes(&mut buf, pes);
        s.serialize_bytes(&buf)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PeRecord>, D::Error> {
        let bytes = crate::base::packed::deserialize_bytes(d)?;
        decode(&bytes, Reader::pes).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64, j: u64) -> IndexKey {
        let mut k = i.to_le_bytes().to_vec();
        k.extend_from_slice(&j.to_le_bytes());
        IndexKey::from(k)
    }

    fn obj(i: u64, j: u64, pe: Pe, load: f64) -> ObjRecord {
        ObjRecord {
            key: key(i, j),
            pe,
            load,
            comm: Vec::new(),
        }
    }

    fn round_trip(objs: &[ObjRecord], pes: &[PeRecord]) -> (Vec<ObjRecord>, Vec<PeRecord>) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        put_objs(&mut a, objs);
        put_pes(&mut b, pes);
        assert_eq!(wire_len(objs, pes), a.len() as u64 + b.len() as u64 + 16);
        let objs = decode(&a, Reader::objs).expect("records decode");
        let pes = decode(&b, Reader::pes).expect("PE records decode");
        (objs, pes)
    }

    #[test]
    fn records_come_back_as_they_went() {
        let mut objs = vec![
            obj(3, 4, 7, 0.5),
            obj(3, 5, 7, 0.5),
            obj(3, 5, 9, 0.25),
            obj(300, 1, 9, 0.25),
            obj(0, 0, 1_000_000, f64::MAX),
            ObjRecord {
                key: IndexKey::from(vec![1]),
                pe: 2,
                load: 0.0,
                comm: vec![(key(1, 2), 3, 400), (IndexKey::default(), 0, u64::MAX)],
            },
            ObjRecord {
                key: IndexKey::default(),
                pe: 2,
                load: -0.0,
                comm: Vec::new(),
            },
        ];
        objs.push(obj(3, 5, 2, -0.0));
        let pes = vec![
            PeRecord {
                pe: 0,
                background: 1e-9,
            },
            PeRecord {
                pe: u32::MAX,
                background: 0.0,
            },
        ];
        let (o, p) = round_trip(&objs, &pes);
        assert_eq!(o, objs);
        assert_eq!(p, pes);
        // -0.0 after 0.0 is a new load: loads are compared by their bits.
        assert_eq!(o[6].load.to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn a_homes_neighbouring_blocks_take_a_few_bytes_each() {
        // Four blocks of a row on one PE with one predicted load, as Jacobi2D's.
        let objs: Vec<_> = (0..4).map(|j| obj(12, 40 + j, 3, 1e-4)).collect();
        let mut buf = Vec::new();
        put_objs(&mut buf, &objs);
        // Count, then 1 + 1 + 8 + 3 + 16 for the first and 1 + 3 + 1 for each other.
        assert_eq!(buf.len(), 1 + 29 + 3 * 5);
        assert_eq!(decode(&buf, Reader::objs).expect("decodes"), objs);
    }

    #[test]
    fn bad_bytes_are_errors() {
        let objs = vec![obj(1, 2, 3, 0.5), obj(1, 3, 3, 0.5)];
        let mut buf = Vec::new();
        put_objs(&mut buf, &objs);
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut], Reader::objs).is_err(), "cut at {cut}");
        }
        let mut long = buf.clone();
        long.push(0);
        assert!(matches!(
            decode(&long, Reader::objs),
            Err(RecordsError::Trailing(1))
        ));
        // A first record that leans on a previous one.
        assert!(matches!(
            decode(&[1, 0, 0, 0, 0], Reader::objs),
            Err(RecordsError::NoPrevious(0))
        ));
        assert!(matches!(
            decode(&[1, 0x80], Reader::objs),
            Err(RecordsError::Flags(0, 0x80))
        ));
        // A key sharing more than the previous key has.
        assert!(matches!(
            decode(
                &[1, NEW_PE | NEW_LOAD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
                Reader::objs
            ),
            Err(RecordsError::Shares(0, 1, 0))
        ));
        assert!(matches!(
            decode(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0], Reader::pes),
            Err(RecordsError::Pe(_))
        ));
        let eleven = [0xffu8; 11];
        assert!(matches!(
            decode(&eleven, Reader::pes),
            Err(RecordsError::LongVarint)
        ));
    }
}
