//! The 32-byte record a PE's recorder buffers and spools, and its typed view.
//!
//! Layout (little-endian on disk, see [`Record::to_bytes`]):
//!
//! | bytes | field | meaning |
//! | --- | --- | --- |
//! | 0..8 | `ts` | timestamp in ns (for `PhaseArg`: the argument's value) |
//! | 8..16 | `a` | bytes (entry begin), msg id (send), duration (phase) |
//! | 16..24 | `b` | msg id or `u64::MAX` for none (entry begin), bytes (send) |
//! | 24..28 | `c` | name id (entry begin, user event, span begin, phase), key id (phase arg) |
//! | 28..32 | `kind_d` | kind in the top 8 bits; the low 24 bits hold a PE (source or destination) or a phase's argument count |
//!
//! Two records hold two events each, the pairs a PE records on every message it
//! handles after waiting for it, so a traced hop costs three records rather than five:
//! an idle spell's end and the entry begun at the same time (the entry's fields), and
//! an entry's end and the idle spell that follows it (`a` is the idle spell's start).
//! Readers see the two events in order ([`Record::events`]), exactly as if they had
//! been recorded one by one.
//!
//! Keeping the kind beside the 24-bit PE field (rather than in the timestamp) lets
//! timestamps use all 64 bits; 2^24 PEs is far above anything the runtime simulates.

use crate::names::NameId;

/// Size of one record in memory and on disk.
pub const RECORD_BYTES: usize = 32;

/// Largest PE number (and phase argument count) a record can hold.
pub const MAX_PE: u32 = (1 << 24) - 1;

const NO_MSG: u64 = u64::MAX;

/// One recorded runtime event, packed into 32 bytes (see the module docs for the layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    ts: u64,
    a: u64,
    b: u64,
    c: u32,
    kind_d: u32,
}

/// Which event a [`Record`] holds (the top byte of its last word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    EntryBegin = 1,
    EntryEnd = 2,
    Send = 3,
    IdleBegin = 4,
    IdleEnd = 5,
    User = 6,
    SpanBegin = 7,
    SpanEnd = 8,
    Phase = 9,
    PhaseArg = 10,
    /// `IdleEnd` at `ts`, then `EntryBegin` at `ts`.
    IdleEndEntryBegin = 11,
    /// `EntryEnd` at `ts`, then `IdleBegin` at `a`.
    EntryEndIdleBegin = 12,
}

impl Kind {
    fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::EntryBegin,
            2 => Kind::EntryEnd,
            3 => Kind::Send,
            4 => Kind::IdleBegin,
            5 => Kind::IdleEnd,
            6 => Kind::User,
            7 => Kind::SpanBegin,
            8 => Kind::SpanEnd,
            9 => Kind::Phase,
            10 => Kind::PhaseArg,
            11 => Kind::IdleEndEntryBegin,
            12 => Kind::EntryEndIdleBegin,
            _ => return None,
        })
    }
}

/// The typed meaning of a [`Record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An entry method starts executing a message.
    EntryBegin {
        /// Time in ns.
        ts: u64,
        /// Entry name, e.g. `Chare::entry`.
        name: NameId,
        /// PE the message came from.
        src_pe: u32,
        /// Message size.
        bytes: u64,
        /// Message id, if the runtime tracks one.
        msg_id: Option<u64>,
    },
    /// The running entry method returns.
    EntryEnd {
        /// Time in ns.
        ts: u64,
    },
    /// A message leaves this PE (only sends kept by flow sampling are recorded).
    Send {
        /// Time in ns.
        ts: u64,
        /// Message id.
        msg_id: u64,
        /// Destination PE.
        dst_pe: u32,
        /// Message size.
        bytes: u64,
    },
    /// The scheduler finds nothing to do.
    IdleBegin {
        /// Time in ns.
        ts: u64,
    },
    /// The scheduler has work again.
    IdleEnd {
        /// Time in ns.
        ts: u64,
    },
    /// A user instant event.
    User {
        /// Time in ns.
        ts: u64,
        /// Event name.
        name: NameId,
    },
    /// A user span opens.
    SpanBegin {
        /// Time in ns.
        ts: u64,
        /// Span name.
        name: NameId,
    },
    /// The innermost open user span closes.
    SpanEnd {
        /// Time in ns.
        ts: u64,
    },
    /// A phase with known start and duration; `nargs` [`Event::PhaseArg`] records follow.
    Phase {
        /// Start in ns.
        ts: u64,
        /// Duration in ns.
        dur: u64,
        /// Phase name.
        name: NameId,
        /// How many argument records follow.
        nargs: u32,
    },
    /// One `(key, value)` argument of the preceding phase.
    PhaseArg {
        /// Key id in the collector's argument-key table.
        key: u32,
        /// Value.
        value: u64,
    },
}

impl Record {
    fn pack(kind: Kind, ts: u64, a: u64, b: u64, c: u32, d: u32) -> Record {
        // A PE above 2^24 would corrupt the kind byte; saturate instead so the record
        // stays decodable (the trace then shows PE 16777215, which is visibly wrong).
        let d = d.min(MAX_PE);
        Record {
            ts,
            a,
            b,
            c,
            kind_d: (kind as u32) << 24 | d,
        }
    }

    fn kind(&self) -> Option<Kind> {
        Kind::from_u8((self.kind_d >> 24) as u8)
    }

    fn d(&self) -> u32 {
        self.kind_d & MAX_PE
    }

    /// Packs a typed event.
    pub fn from_event(e: Event) -> Record {
        match e {
            Event::EntryBegin {
                ts,
                name,
                src_pe,
                bytes,
                msg_id,
            } => Record::pack(
                Kind::EntryBegin,
                ts,
                bytes,
                msg_id.unwrap_or(NO_MSG),
                name,
                src_pe,
            ),
            Event::EntryEnd { ts } => Record::pack(Kind::EntryEnd, ts, 0, 0, 0, 0),
            Event::Send {
                ts,
                msg_id,
                dst_pe,
                bytes,
            } => Record::pack(Kind::Send, ts, msg_id, bytes, 0, dst_pe),
            Event::IdleBegin { ts } => Record::pack(Kind::IdleBegin, ts, 0, 0, 0, 0),
            Event::IdleEnd { ts } => Record::pack(Kind::IdleEnd, ts, 0, 0, 0, 0),
            Event::User { ts, name } => Record::pack(Kind::User, ts, 0, 0, name, 0),
            Event::SpanBegin { ts, name } => Record::pack(Kind::SpanBegin, ts, 0, 0, name, 0),
            Event::SpanEnd { ts } => Record::pack(Kind::SpanEnd, ts, 0, 0, 0, 0),
            Event::Phase {
                ts,
                dur,
                name,
                nargs,
            } => Record::pack(Kind::Phase, ts, dur, 0, name, nargs),
            Event::PhaseArg { key, value } => Record::pack(Kind::PhaseArg, value, 0, 0, key, 0),
        }
    }

    /// The typed events, one or (a merged record) two in the order they happened, or
    /// `None` if the kind byte is unknown (a corrupt spool).
    pub fn events(&self) -> Option<(Event, Option<Event>)> {
        let (ts, a) = (self.ts, self.a);
        Some(match self.kind()? {
            Kind::IdleEndEntryBegin => (Event::IdleEnd { ts }, Some(self.entry_begin())),
            Kind::EntryEndIdleBegin => (Event::EntryEnd { ts }, Some(Event::IdleBegin { ts: a })),
            kind => (self.single(kind), None),
        })
    }

    /// The entry begin whose fields this record holds.
    fn entry_begin(&self) -> Event {
        Event::EntryBegin {
            ts: self.ts,
            name: self.c,
            src_pe: self.d(),
            bytes: self.a,
            msg_id: (self.b != NO_MSG).then_some(self.b),
        }
    }

    /// The event of a record of one event.
    fn single(&self, kind: Kind) -> Event {
        let (ts, a, b, c, d) = (self.ts, self.a, self.b, self.c, self.d());
        match kind {
            Kind::EntryBegin | Kind::IdleEndEntryBegin => self.entry_begin(),
            Kind::EntryEnd | Kind::EntryEndIdleBegin => Event::EntryEnd { ts },
            Kind::Send => Event::Send {
                ts,
                msg_id: a,
                dst_pe: d,
                bytes: b,
            },
            Kind::IdleBegin => Event::IdleBegin { ts },
            Kind::IdleEnd => Event::IdleEnd { ts },
            Kind::User => Event::User { ts, name: c },
            Kind::SpanBegin => Event::SpanBegin { ts, name: c },
            Kind::SpanEnd => Event::SpanEnd { ts },
            Kind::Phase => Event::Phase {
                ts,
                dur: a,
                name: c,
                nargs: d,
            },
            Kind::PhaseArg => Event::PhaseArg { key: c, value: ts },
        }
    }

    /// This record and the event `next` recorded right after it as one record, when
    /// they are a pair that merges (see the module docs).
    pub fn merged_with(&self, next: &Event) -> Option<Record> {
        match (self.kind()?, next) {
            (Kind::IdleEnd, Event::EntryBegin { ts, .. }) if *ts == self.ts => {
                let mut r = Record::from_event(*next);
                r.kind_d = (Kind::IdleEndEntryBegin as u32) << 24 | r.d();
                Some(r)
            }
            (Kind::EntryEnd, Event::IdleBegin { ts }) => Some(Record {
                a: *ts,
                kind_d: (Kind::EntryEndIdleBegin as u32) << 24,
                ..*self
            }),
            _ => None,
        }
    }

    /// This record with its name ids passed through `name` and its phase-argument key
    /// through `key` (merging another process's records, whose ids differ); records of
    /// an unknown kind come back unchanged.
    pub fn remap(
        &self,
        mut name: impl FnMut(NameId) -> NameId,
        mut key: impl FnMut(u32) -> u32,
    ) -> Record {
        let Some((first, second)) = self.events() else {
            return *self;
        };
        let mut map = |e: Event| match e {
            Event::EntryBegin {
                ts,
                name: n,
                src_pe,
                bytes,
                msg_id,
            } => Event::EntryBegin {
                ts,
                name: name(n),
                src_pe,
                bytes,
                msg_id,
            },
            Event::User { ts, name: n } => Event::User { ts, name: name(n) },
            Event::SpanBegin { ts, name: n } => Event::SpanBegin { ts, name: name(n) },
            Event::Phase {
                ts,
                dur,
                name: n,
                nargs,
            } => Event::Phase {
                ts,
                dur,
                name: name(n),
                nargs,
            },
            Event::PhaseArg { key: k, value } => Event::PhaseArg { key: key(k), value },
            other => other,
        };
        let r = Record::from_event(map(first));
        match second {
            Some(e) => r.merged_with(&map(e)).unwrap_or(r),
            None => r,
        }
    }

    /// The on-disk form: the five fields in order, little-endian.
    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        out[0..8].copy_from_slice(&self.ts.to_le_bytes());
        out[8..16].copy_from_slice(&self.a.to_le_bytes());
        out[16..24].copy_from_slice(&self.b.to_le_bytes());
        out[24..28].copy_from_slice(&self.c.to_le_bytes());
        out[28..32].copy_from_slice(&self.kind_d.to_le_bytes());
        out
    }

    /// Reads the on-disk form back (any bytes decode; [`Record::events`] validates the kind).
    pub fn from_bytes(b: &[u8; RECORD_BYTES]) -> Record {
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let u32_at = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[i..i + 4]);
            u32::from_le_bytes(w)
        };
        Record {
            ts: u64_at(0),
            a: u64_at(8),
            b: u64_at(16),
            c: u32_at(24),
            kind_d: u32_at(28),
        }
    }
}

/// Whether the flow arrow of `msg_id` is kept when keeping 1 in `every`.
///
/// Sender and receiver decide independently and must agree, so this is a fixed hash
/// of the id (splitmix64's finaliser), never a counter or a random draw; hashing
/// rather than `msg_id % every` avoids keeping only one PE's messages when ids
/// encode the PE in their low bits.
pub fn flow_kept(msg_id: u64, every: u64) -> bool {
    if every <= 1 {
        return true;
    }
    let mut z = msg_id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z.is_multiple_of(every)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Record>(), RECORD_BYTES);
    }

    #[test]
    fn every_event_round_trips_through_bytes() {
        let events = [
            Event::EntryBegin {
                ts: u64::MAX - 1,
                name: 7,
                src_pe: MAX_PE,
                bytes: 1 << 40,
                msg_id: Some(u64::MAX - 2),
            },
            Event::EntryBegin {
                ts: 5,
                name: 0,
                src_pe: 0,
                bytes: 0,
                msg_id: None,
            },
            Event::EntryEnd { ts: 9 },
            Event::Send {
                ts: 1,
                msg_id: 42,
                dst_pe: 3,
                bytes: 64,
            },
            Event::IdleBegin { ts: 2 },
            Event::IdleEnd { ts: 3 },
            Event::User { ts: 4, name: 2 },
            Event::SpanBegin { ts: 5, name: 3 },
            Event::SpanEnd { ts: 6 },
            Event::Phase {
                ts: 7,
                dur: 8,
                name: 4,
                nargs: 2,
            },
            Event::PhaseArg { key: 1, value: 99 },
        ];
        for e in events {
            let r = Record::from_event(e);
            assert_eq!(Record::from_bytes(&r.to_bytes()).events(), Some((e, None)));
        }
    }

    #[test]
    fn merged_pairs_read_back_as_both_events_in_order() {
        let begin = Event::EntryBegin {
            ts: 40,
            name: 7,
            src_pe: 3,
            bytes: 96,
            msg_id: Some(12),
        };
        let idle_end = Record::from_event(Event::IdleEnd { ts: 40 });
        let merged = idle_end.merged_with(&begin).expect("same time: merges");
        let back = Record::from_bytes(&merged.to_bytes());
        assert_eq!(
            back.events(),
            Some((Event::IdleEnd { ts: 40 }, Some(begin)))
        );
        // Renamed as a merged record, still both events.
        let renamed = back.remap(|n| n + 100, |k| k);
        let Some((_, Some(Event::EntryBegin { name, .. }))) = renamed.events() else {
            panic!("{:?}", renamed.events());
        };
        assert_eq!(name, 107);

        let end = Record::from_event(Event::EntryEnd { ts: 50 });
        let merged = end.merged_with(&Event::IdleBegin { ts: 58 }).unwrap();
        assert_eq!(
            Record::from_bytes(&merged.to_bytes()).events(),
            Some((
                Event::EntryEnd { ts: 50 },
                Some(Event::IdleBegin { ts: 58 })
            ))
        );

        // Only those pairs merge, and an idle end only with an entry begun at its time.
        let later = Event::EntryBegin {
            ts: 41,
            name: 7,
            src_pe: 3,
            bytes: 96,
            msg_id: Some(12),
        };
        assert_eq!(idle_end.merged_with(&later), None);
        assert_eq!(end.merged_with(&begin), None);
        assert_eq!(merged.merged_with(&Event::IdleBegin { ts: 60 }), None);
        assert_eq!(
            Record::from_event(Event::SpanEnd { ts: 50 }).merged_with(&Event::IdleBegin { ts: 58 }),
            None
        );
    }

    #[test]
    fn unknown_kind_is_rejected() {
        let mut b = [0u8; RECORD_BYTES];
        b[31] = 200;
        assert_eq!(Record::from_bytes(&b).events(), None);
    }

    #[test]
    fn flow_sampling_keeps_about_one_in_n() {
        assert!((0..100).all(|i| flow_kept(i, 1)));
        let kept = (0..100_000u64).filter(|&i| flow_kept(i, 10)).count();
        assert!((9_000..11_000).contains(&kept), "kept {kept}");
        // Ids that differ only in high bits (PE-encoded ids) are still sampled evenly.
        let kept = (0..10_000u64).filter(|&i| flow_kept(i << 32, 4)).count();
        assert!((2_000..3_000).contains(&kept), "kept {kept}");
    }
}
