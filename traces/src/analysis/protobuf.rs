//! Streams a Perfetto protobuf trace packet by packet, as the same [`Item`]s as the
//! JSON reader.
//!
//! Understands what [`crate::Collector::write`] writes for `.perfetto-trace` files and
//! the common subset of other track-event traces: thread and process track
//! descriptors, slice begin/end and instant events on tracks named by uuid, interned or
//! inline names and categories, integer and string debug annotations, and flow ids
//! (a `flow_ids` entry starts an arrow, a `terminating_flow_ids` entry ends it). Other
//! packets are skipped. Only one packet is held at a time, with the interning tables
//! and the open slices.
//!
//! A trace that breaks Perfetto's incremental-state and interning rules
//! (`protobuf_rules`) is refused, each rule named once with its count, since
//! Perfetto would drop or misname its packets.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

use crate::analysis::model::{bad, Args, FlowEnd, Item, OpenSlices};
use crate::analysis::protobuf_rules::{RuleTally, SeqRule, SeqState};
use crate::error::TraceError;
use crate::proto::{annotation, event, interned, packet, track, TRACE_PACKET};
use crate::wire::{Fields, Value as Wire, FIXED32, FIXED64, LEN, VARINT};

/// Largest packet accepted; bigger ones mean a corrupt file, not a big trace.
const MAX_PACKET: u64 = 256 << 20;

/// Interned strings of one packet sequence, per index, and whether they are valid.
#[derive(Default)]
struct Interned {
    state: SeqState,
    categories: HashMap<u64, String>,
    names: HashMap<u64, String>,
    annotations: HashMap<u64, String>,
}

struct Reader<'p, A> {
    path: &'p Path,
    /// Per sequence id (at most one per sequence id the file names, as the tracks).
    interned: HashMap<u64, Interned>,
    /// Packets breaking Perfetto's interning rules.
    rules: RuleTally,
    /// Track uuid to (pid, tid).
    tracks: HashMap<u64, (u32, u32)>,
    /// Slices begun, by track uuid.
    open: OpenSlices<u64, A>,
    seq: usize,
    /// Byte offset of the current packet, for errors.
    offset: u64,
}

/// Counts the bytes read, for error messages.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

/// Reads one varint from `r`; `Ok(None)` at a clean end of file.
fn read_varint(r: &mut impl Read, path: &Path) -> Result<Option<u64>, TraceError> {
    let mut v = 0u64;
    for (i, shift) in (0..70).step_by(7).enumerate() {
        let mut b = [0u8];
        if r.read(&mut b).map_err(|e| TraceError::io(path, e))? == 0 {
            if i == 0 {
                return Ok(None);
            }
            return Err(bad(path, "truncated Perfetto trace".to_owned()));
        }
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] < 0x80 {
            return Ok(Some(v));
        }
    }
    Err(bad(
        path,
        "not a Perfetto trace: a varint is too long".to_owned(),
    ))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The 32-bit id Chrome-style tracks use, from a protobuf integer.
fn id32(v: u64) -> u32 {
    v as u32
}

impl<A: Args> Reader<'_, A> {
    fn malformed(&self, what: &str) -> TraceError {
        bad(
            self.path,
            format!("malformed {what} in the packet at byte {}", self.offset),
        )
    }

    /// The fields of `buf`, or an error naming `what` at the first malformed one.
    fn fields<'b>(&self, buf: &'b [u8], what: &str) -> Result<Vec<(u32, Wire<'b>)>, TraceError> {
        Fields::new(buf)
            .collect::<Result<Vec<_>, usize>>()
            .map_err(|_| self.malformed(what))
    }

    fn packet(
        &mut self,
        buf: &[u8],
        each: &mut impl FnMut(Item<A>) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let (mut ts, mut sequence, mut flags) = (0, 0, 0);
        let (mut cleared, mut dropped) = (false, false);
        let (mut ev, mut data, mut desc) = (None, None, None);
        for (field, v) in self.fields(buf, "TracePacket")? {
            match (field, v) {
                (packet::TIMESTAMP, Wire::Varint(t)) => ts = t,
                (packet::SEQUENCE_ID, Wire::Varint(s)) => sequence = s,
                (packet::SEQUENCE_FLAGS, Wire::Varint(f)) => flags = f,
                (packet::INCREMENTAL_STATE_CLEARED_OLD, Wire::Varint(c)) => cleared |= c != 0,
                (packet::PREVIOUS_PACKET_DROPPED, Wire::Varint(d)) => dropped = d != 0,
                (packet::TRACK_EVENT, Wire::Bytes(b)) => ev = Some(b),
                (packet::INTERNED_DATA, Wire::Bytes(b)) => data = Some(b),
                (packet::TRACK_DESCRIPTOR, Wire::Bytes(b)) => desc = Some(b),
                _ => {}
            }
        }
        cleared |= flags & packet::SEQ_INCREMENTAL_STATE_CLEARED != 0;
        let needs = flags & packet::SEQ_NEEDS_INCREMENTAL_STATE != 0;
        if !self.sequence_state(sequence, [cleared, dropped, needs], data)? {
            return Ok(());
        }
        if let Some(b) = desc {
            self.descriptor(b, each)?;
        }
        if let Some(b) = ev {
            self.track_event(sequence, ts, b, each)?;
        }
        Ok(())
    }

    /// Applies a packet's clear, loss, interned data and need of state to its sequence;
    /// false when Perfetto would skip the rest of the packet (a rule is broken).
    fn sequence_state(
        &mut self,
        sequence: u64,
        [cleared, dropped, needs]: [bool; 3],
        data: Option<&[u8]>,
    ) -> Result<bool, TraceError> {
        let at = self.offset;
        if sequence == 0 && (cleared || needs || data.is_some()) {
            self.rules.add(SeqRule::NoSequenceId, || {
                format!("the packet at byte {at} clears, interns or needs incremental state but has no trusted_packet_sequence_id")
            });
            return Ok(false);
        }
        let table = self.interned.entry(sequence).or_default();
        if cleared {
            *table = Interned {
                state: SeqState::Valid,
                ..Interned::default()
            };
        } else if dropped {
            table.state = SeqState::Lost;
        }
        let state = table.state;
        if let Some(b) = data {
            if state == SeqState::Valid {
                self.interned_data(sequence, b)?;
            } else {
                self.rules.add(SeqRule::InternedDataBeforeClear, || {
                    format!(
                        "the packet at byte {at} interns names, but {}",
                        state.why(sequence)
                    )
                });
            }
        }
        if needs && state != SeqState::Valid {
            self.rules.add(SeqRule::NeedsStateBeforeClear, || {
                format!(
                    "the packet at byte {at} is flagged SEQ_NEEDS_INCREMENTAL_STATE, but {}",
                    state.why(sequence)
                )
            });
            return Ok(false);
        }
        Ok(true)
    }

    fn interned_data(&mut self, sequence: u64, buf: &[u8]) -> Result<(), TraceError> {
        let fields = self.fields(buf, "InternedData")?;
        for (field, v) in fields {
            let Wire::Bytes(entry) = v else { continue };
            let (mut iid, mut name) = (0, String::new());
            for (f, v) in self.fields(entry, "interned entry")? {
                match (f, v) {
                    (interned::IID, Wire::Varint(i)) => iid = i,
                    (interned::NAME, Wire::Bytes(b)) => name = text(b),
                    _ => {}
                }
            }
            let table = self.interned.entry(sequence).or_default();
            let index = match field {
                interned::EVENT_CATEGORIES => &mut table.categories,
                interned::EVENT_NAMES => &mut table.names,
                interned::DEBUG_ANNOTATION_NAMES => &mut table.annotations,
                _ => continue,
            };
            index.insert(iid, name);
        }
        Ok(())
    }

    fn descriptor(
        &mut self,
        buf: &[u8],
        each: &mut impl FnMut(Item<A>) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let (mut uuid, mut name, mut parent) = (0, None, None);
        let (mut process, mut thread) = (None, None);
        for (field, v) in self.fields(buf, "TrackDescriptor")? {
            match (field, v) {
                (track::UUID, Wire::Varint(u)) => uuid = u,
                (track::NAME, Wire::Bytes(b)) => name = Some(text(b)),
                (track::PARENT_UUID, Wire::Varint(u)) => parent = Some(u),
                (track::PROCESS, Wire::Bytes(b)) => process = Some(b),
                (track::THREAD, Wire::Bytes(b)) => thread = Some(b),
                _ => {}
            }
        }
        if let Some(b) = thread {
            let (mut pid, mut tid, mut thread_name) = (0, 0, None);
            for (field, v) in self.fields(b, "ThreadDescriptor")? {
                match (field, v) {
                    (track::PID, Wire::Varint(p)) => pid = id32(p),
                    (track::TID, Wire::Varint(t)) => tid = id32(t),
                    (track::THREAD_NAME, Wire::Bytes(n)) => thread_name = Some(text(n)),
                    _ => {}
                }
            }
            self.tracks.insert(uuid, (pid, tid));
            let name = thread_name.or(name);
            return each(Item::ThreadName { pid, tid, name });
        }
        if let Some(b) = process {
            let (mut pid, mut process_name) = (0, None);
            for (field, v) in self.fields(b, "ProcessDescriptor")? {
                match (field, v) {
                    (track::PID, Wire::Varint(p)) => pid = id32(p),
                    (track::PROCESS_NAME, Wire::Bytes(n)) => process_name = Some(text(n)),
                    _ => {}
                }
            }
            self.tracks.insert(uuid, (pid, pid));
            return match process_name.or(name) {
                Some(name) => each(Item::ProcessName { pid, name }),
                None => Ok(()),
            };
        }
        // A plain track: its own thread in its parent's process.
        let pid = parent
            .and_then(|p| self.tracks.get(&p))
            .map_or(0, |&(pid, _)| pid);
        let tid = id32(uuid);
        self.tracks.insert(uuid, (pid, tid));
        each(Item::ThreadName { pid, tid, name })
    }

    fn track_event(
        &mut self,
        sequence: u64,
        ts_ns: u64,
        buf: &[u8],
        each: &mut impl FnMut(Item<A>) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let seq = self.seq;
        self.seq += 1;
        let ev = self.event_fields(sequence, buf)?;
        let Some(&(pid, tid)) = self.event_track(sequence, &ev) else {
            return Ok(());
        };
        let Some(uuid) = ev.uuid else {
            return Ok(());
        };
        let cat = ev.cats.join(",");
        for (id, ends) in ev.flows {
            each(Item::Flow {
                start: !ends,
                at: FlowEnd {
                    pid,
                    tid,
                    ts_ns,
                    seq,
                },
                cat: cat.clone(),
                name: cat.clone(),
                id: format!("{id:#x}"),
            })?;
        }
        match ev.kind {
            event::SLICE_BEGIN => self.open.begin(uuid, ev.name, cat, ts_ns, ev.args, seq),
            event::SLICE_END => {
                each(self.open.end(&uuid, pid, tid, ts_ns, self.path)?)?;
            }
            event::INSTANT => each(Item::Instant {
                pid,
                tid,
                name: ev.name,
                cat,
                ts_ns,
            })?,
            _ => {}
        }
        Ok(())
    }

    /// The track of an event, or `None` when it is not drawn: on a default track (no
    /// uuid), or breaking a rule (counted), or after a rule was broken (the slices
    /// around it cannot be trusted).
    fn event_track(&mut self, sequence: u64, ev: &EventFields<A>) -> Option<&(u32, u32)> {
        let at = self.offset;
        let state = self
            .interned
            .get(&sequence)
            .map_or_else(SeqState::default, |t| t.state);
        if ev.uses_iids && state != SeqState::Valid {
            self.rules.add(SeqRule::InternedIdBeforeClear, || {
                format!(
                    "the event at byte {at} names interned ids, but {}",
                    state.why(sequence)
                )
            });
        } else if let Some((table, iid)) = ev.missing {
            self.rules.add(SeqRule::UnknownInternedId, || {
                format!("the event at byte {at} names {table} iid {iid}, which sequence {sequence} has not defined since its last clear")
            });
        } else if let Some(uuid) = ev.uuid.filter(|u| !self.tracks.contains_key(u)) {
            self.rules.add(SeqRule::TrackWithoutDescriptor, || {
                format!("the event at byte {at} is on track uuid {uuid}, which no track descriptor before it defines")
            });
        }
        if self.rules.any() {
            return None;
        }
        self.tracks.get(&ev.uuid?)
    }

    /// The fields of one `TrackEvent` the readers use, names looked up in `sequence`'s
    /// interning tables.
    fn event_fields(&self, sequence: u64, buf: &[u8]) -> Result<EventFields<A>, TraceError> {
        let mut ev = EventFields {
            kind: 0,
            uuid: None,
            name: String::new(),
            cats: Vec::new(),
            args: A::default(),
            flows: Vec::new(),
            uses_iids: false,
            missing: None,
        };
        let empty = Interned::default();
        let table = self.interned.get(&sequence).unwrap_or(&empty);
        for (field, v) in self.fields(buf, "TrackEvent")? {
            match (field, v) {
                (event::TYPE, Wire::Varint(k)) => ev.kind = k,
                (event::TRACK_UUID, Wire::Varint(u)) => ev.uuid = Some(u),
                (event::NAME_IID, Wire::Varint(i)) => {
                    ev.name = ev.lookup(&table.names, "event name", i)
                }
                (event::NAME, Wire::Bytes(b)) => ev.name = text(b),
                (event::CATEGORIES, Wire::Bytes(b)) => ev.cats.push(text(b)),
                (event::CATEGORY_IIDS, Wire::Varint(i)) => {
                    let cat = ev.lookup(&table.categories, "event category", i);
                    ev.cats.push(cat)
                }
                (event::DEBUG_ANNOTATIONS, Wire::Bytes(b)) => {
                    let (key, value) = self.annotation(b)?;
                    let key = match key {
                        Key::Inline(k) => k,
                        Key::Iid(i) => ev.lookup(&table.annotations, "debug annotation name", i),
                    };
                    if let Some(value) = value {
                        ev.args.set(&key, value);
                    }
                }
                (event::FLOW_IDS | event::FLOW_IDS_OLD, v) => {
                    ev.flows.extend(v.as_u64().map(|id| (id, false)))
                }
                (event::TERMINATING_FLOW_IDS | event::TERMINATING_FLOW_IDS_OLD, v) => {
                    ev.flows.extend(v.as_u64().map(|id| (id, true)))
                }
                _ => {}
            }
        }
        Ok(ev)
    }

    /// One debug annotation: its name, and its value if of a kind the readers keep.
    fn annotation(&self, buf: &[u8]) -> Result<(Key, Option<serde_json::Value>), TraceError> {
        let (mut key, mut value) = (Key::Inline(String::new()), None);
        for (f, v) in self.fields(buf, "DebugAnnotation")? {
            match (f, v) {
                (annotation::NAME_IID, Wire::Varint(i)) => key = Key::Iid(i),
                (annotation::NAME, Wire::Bytes(n)) => key = Key::Inline(text(n)),
                (annotation::UINT_VALUE, Wire::Varint(u)) => value = Some(u.into()),
                (annotation::INT_VALUE, Wire::Varint(i)) => value = Some((i as i64).into()),
                (annotation::BOOL_VALUE, Wire::Varint(b)) => value = Some((b != 0).into()),
                (annotation::STRING_VALUE, Wire::Bytes(s)) => value = Some(text(s).into()),
                _ => {}
            }
        }
        Ok((key, value))
    }
}

/// What one `TrackEvent` says, as read.
struct EventFields<A> {
    kind: u64,
    uuid: Option<u64>,
    name: String,
    cats: Vec<String>,
    args: A,
    /// Flow ids, each with whether the event ends the flow.
    flows: Vec<(u64, bool)>,
    /// Whether it names anything by iid.
    uses_iids: bool,
    /// The first iid it names that its sequence has not defined: table and iid.
    missing: Option<(&'static str, u64)>,
}

impl<A> EventFields<A> {
    /// The interned string `iid` of `table` (named `what`), noting an unknown one.
    fn lookup(&mut self, table: &HashMap<u64, String>, what: &'static str, iid: u64) -> String {
        self.uses_iids = true;
        match table.get(&iid) {
            Some(s) => s.clone(),
            None => {
                self.missing.get_or_insert((what, iid));
                String::new()
            }
        }
    }
}

/// A debug annotation's name: inline, or an iid to look up.
enum Key {
    Inline(String),
    Iid(u64),
}

/// Reads a Perfetto protobuf trace from `reader`, calling `each` with every [`Item`]
/// in file order. `path` only labels errors.
pub fn read_perfetto<A: Args>(
    reader: impl BufRead,
    path: &Path,
    mut each: impl FnMut(Item<A>) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let mut r = Reader::<A> {
        path,
        interned: HashMap::new(),
        rules: RuleTally::default(),
        tracks: HashMap::new(),
        open: OpenSlices::default(),
        seq: 0,
        offset: 0,
    };
    let mut buf = Vec::new();
    let mut reader = Counted {
        inner: reader,
        n: 0,
    };
    loop {
        let offset = reader.n;
        let Some(key) = read_varint(&mut reader, path)? else {
            break;
        };
        r.offset = offset;
        let (field, wire_type) = (key >> 3, (key & 7) as u8);
        let len = match wire_type {
            LEN => read_varint(&mut reader, path)?
                .ok_or_else(|| bad(path, "truncated Perfetto trace".to_owned()))?,
            VARINT => {
                read_varint(&mut reader, path)?;
                continue;
            }
            FIXED64 => 8,
            FIXED32 => 4,
            _ => {
                return Err(bad(
                    path,
                    format!("not a Perfetto trace: wire type {wire_type} at byte {offset}"),
                ))
            }
        };
        if len > MAX_PACKET {
            return Err(bad(
                path,
                format!("not a Perfetto trace: a {len}-byte field at byte {offset}"),
            ));
        }
        // Read what is there rather than reserving what the length claims: a corrupt
        // length must not cost its size in memory before the end of file shows it.
        buf.clear();
        let got = (&mut reader)
            .take(len)
            .read_to_end(&mut buf)
            .map_err(|e| TraceError::io(path, e))?;
        if got as u64 != len {
            return Err(bad(path, "truncated Perfetto trace".to_owned()));
        }
        if field == u64::from(TRACE_PACKET) && wire_type == LEN {
            r.packet(&buf, &mut each)?;
        }
    }
    r.rules.check(path)?;
    r.open.finish(path)
}
