//! Writes the spooled records as a Perfetto protobuf trace (ui.perfetto.dev opens it
//! directly; `trace_processor` reads it).
//!
//! The same layout as the Chrome writer ([`crate::capture::chrome`]), as packets of
//! one sequence: a `TrackDescriptor` per process (`"node group N"`) and per PE thread
//! (`"PE n"`; tid n + 1 and pid N + 1, `crate::ids`), then each PE's events in time
//! order as `TrackEvent`s on its thread track: `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs for entries, user spans,
//! phases, idle and send slices (categories as in the JSON; entry and phase
//! arguments as debug annotations), `TYPE_INSTANT` for user events. A message arrow
//! goes from the send's 1 ns holder slice (`flow_ids`) to the receive's
//! (`terminating_flow_ids`), with the message id as flow id. Names, categories and
//! annotation names are interned (`InternedData`, ids from 1) in the packet that
//! first uses them. Timestamps are the trace's integer ns.
//!
//! Unlike the JSON, holders are written inline in their track: Perfetto needs slice
//! begin and end events in order on each track, and binds a flow to the slice whose
//! event carries its id, whatever the file order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::capture::chrome::{name_of, slice_parts, track_order, Output, TrackOut};
use crate::capture::layout::TrackEvents;
use crate::capture::spool::SpoolView;
use crate::capture::stats::WriteStats;
use crate::error::TraceError;
use crate::ids::file_id;
use crate::names::Names;
use crate::proto::{annotation, event, interned, packet, track, TRACE_PACKET};
use crate::wire::{put_bytes, put_fixed64, put_message, put_uint};

/// Whether `path` names a Perfetto protobuf trace: it ends in `.perfetto-trace` or
/// `.pftrace`.
pub fn is_perfetto_path(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".perfetto-trace") || name.ends_with(".pftrace")
}

/// The one packet sequence of the file.
const SEQUENCE: u64 = 1;

/// Track uuid of process `pid`.
fn process_uuid(pid: u32) -> u64 {
    (1 << 40) | u64::from(pid)
}

/// Track uuid of PE `pe`'s thread.
fn thread_uuid(pe: u32) -> u64 {
    (2 << 40) | u64::from(pe)
}

/// Writes `view`'s spool as a Perfetto trace to `out` (see the module docs).
pub(crate) fn write(view: &SpoolView, names: &Names, out: &Path) -> Result<WriteStats, TraceError> {
    let (staged, file) = crate::capture::staged::StagedFile::create(out)?;
    let w = PerfettoOut {
        w: BufWriter::with_capacity(1 << 20, file),
        packets: 0,
        iids: [HashMap::new(), HashMap::new(), HashMap::new()],
        packet: Vec::new(),
        interned: Vec::new(),
    };
    crate::capture::chrome::write_as(view, names, staged, out, Box::new(w))
}

/// Which interning index a string goes to.
#[derive(Clone, Copy)]
enum Index {
    Category = 0,
    Name = 1,
    Annotation = 2,
}

impl Index {
    fn field(self) -> u32 {
        match self {
            Index::Category => interned::EVENT_CATEGORIES,
            Index::Name => interned::EVENT_NAMES,
            Index::Annotation => interned::DEBUG_ANNOTATION_NAMES,
        }
    }
}

/// One track event to write.
struct Ev<'a> {
    ts: u64,
    track: u64,
    kind: u64,
    cat: &'a str,
    name: &'a str,
    args: &'a [(&'a str, u64)],
    /// A flow id, and whether this event ends the flow.
    flow: Option<(u64, bool)>,
}

/// Packet writer with the sequence's interning state.
struct PerfettoOut {
    w: BufWriter<File>,
    packets: u64,
    /// Interned strings per [`Index`], with their iids.
    iids: [HashMap<String, u64>; 3],
    /// Scratch: the packet being built and its new interned entries.
    packet: Vec<u8>,
    interned: Vec<u8>,
}

impl PerfettoOut {
    /// Writes `self.packet` as one `Trace.packet` field.
    fn flush_packet(&mut self) -> std::io::Result<()> {
        let mut head = Vec::with_capacity(6);
        crate::wire::put_key(&mut head, TRACE_PACKET, crate::wire::LEN);
        crate::wire::put_varint(&mut head, self.packet.len() as u64);
        self.w.write_all(&head)?;
        self.w.write_all(&self.packet)?;
        self.packet.clear();
        self.packets += 1;
        Ok(())
    }

    /// The iid of `s` in `index`, adding an entry to `self.interned` on first use.
    fn iid(&mut self, index: Index, s: &str) -> u64 {
        let map = &mut self.iids[index as usize];
        if let Some(&iid) = map.get(s) {
            return iid;
        }
        let iid = map.len() as u64 + 1;
        map.insert(s.to_owned(), iid);
        put_message(&mut self.interned, index.field(), |e| {
            put_uint(e, interned::IID, iid);
            put_bytes(e, interned::NAME, s.as_bytes());
        });
        iid
    }

    fn descriptor(&mut self, f: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        put_uint(&mut self.packet, packet::SEQUENCE_ID, SEQUENCE);
        if self.packets == 0 {
            let cleared = packet::SEQ_INCREMENTAL_STATE_CLEARED;
            put_uint(&mut self.packet, packet::SEQUENCE_FLAGS, cleared);
        }
        put_message(&mut self.packet, packet::TRACK_DESCRIPTOR, f);
        self.flush_packet()
    }

    fn event(&mut self, e: &Ev<'_>) -> std::io::Result<()> {
        let mut body = Vec::with_capacity(32);
        put_uint(&mut body, event::TYPE, e.kind);
        put_uint(&mut body, event::TRACK_UUID, e.track);
        if e.kind != event::SLICE_END {
            let cat = self.iid(Index::Category, e.cat);
            let name = self.iid(Index::Name, e.name);
            put_uint(&mut body, event::CATEGORY_IIDS, cat);
            put_uint(&mut body, event::NAME_IID, name);
            for &(key, value) in e.args {
                let key = self.iid(Index::Annotation, key);
                put_message(&mut body, event::DEBUG_ANNOTATIONS, |a| {
                    put_uint(a, annotation::NAME_IID, key);
                    put_uint(a, annotation::UINT_VALUE, value);
                });
            }
            if let Some((id, ends)) = e.flow {
                let field = if ends {
                    event::TERMINATING_FLOW_IDS
                } else {
                    event::FLOW_IDS
                };
                put_fixed64(&mut body, field, id);
            }
        }
        put_uint(&mut self.packet, packet::TIMESTAMP, e.ts);
        put_uint(&mut self.packet, packet::SEQUENCE_ID, SEQUENCE);
        let needs = packet::SEQ_NEEDS_INCREMENTAL_STATE;
        put_uint(&mut self.packet, packet::SEQUENCE_FLAGS, needs);
        if !self.interned.is_empty() {
            let entries = std::mem::take(&mut self.interned);
            put_bytes(&mut self.packet, packet::INTERNED_DATA, &entries);
        }
        put_bytes(&mut self.packet, packet::TRACK_EVENT, &body);
        self.flush_packet()
    }

    /// Ends every open slice that ends by `t`, innermost first.
    fn close_until(&mut self, open: &mut Vec<u64>, track: u64, t: u64) -> std::io::Result<()> {
        while let Some(&end) = open.last().filter(|&&end| end <= t) {
            open.pop();
            self.event(&Ev {
                ts: end,
                track,
                kind: event::SLICE_END,
                cat: "",
                name: "",
                args: &[],
                flow: None,
            })?;
        }
        Ok(())
    }
}

impl Output for PerfettoOut {
    fn metadata(&mut self, view: &SpoolView) -> std::io::Result<()> {
        let mut pids: Vec<u32> = view.tracks.values().copied().collect();
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            let name = format!("{} {pid}", view.process_label);
            self.descriptor(|d| {
                put_uint(d, track::UUID, process_uuid(pid));
                put_message(d, track::PROCESS, |p| {
                    put_uint(p, track::PID, u64::from(file_id(pid)));
                    put_bytes(p, track::PROCESS_NAME, name.as_bytes());
                });
            })?;
        }
        for (&pe, &pid) in &view.tracks {
            let name = format!("PE {pe}");
            self.descriptor(|d| {
                put_uint(d, track::UUID, thread_uuid(pe));
                put_uint(d, track::PARENT_UUID, process_uuid(pid));
                put_message(d, track::THREAD, |t| {
                    put_uint(t, track::PID, u64::from(file_id(pid)));
                    put_uint(t, track::TID, u64::from(file_id(pe)));
                    put_bytes(t, track::THREAD_NAME, name.as_bytes());
                });
            })?;
        }
        Ok(())
    }

    fn track(
        &mut self,
        o: &TrackOut<'_>,
        t: &TrackEvents,
        stats: &mut WriteStats,
    ) -> std::io::Result<()> {
        let track = thread_uuid(o.pe);
        let mut open: Vec<u64> = Vec::new();
        let mut fallback = String::new();
        let mut args: Vec<(&str, u64)> = Vec::new();
        for (start, class, _, i) in track_order(t) {
            self.close_until(&mut open, track, start)?;
            let mut ev = Ev {
                ts: start,
                track,
                kind: event::SLICE_BEGIN,
                cat: "",
                name: "",
                args: &[],
                flow: None,
            };
            args.clear();
            match class {
                0 => {
                    let s = &t.slices[i];
                    (ev.cat, ev.name, _) = slice_parts(s, t, o, &mut fallback, &mut args);
                    ev.args = &args;
                    self.event(&ev)?;
                    open.push(s.end);
                    stats.slices += 1;
                }
                1 => {
                    let h = &t.holders[i];
                    ev.cat = "msg";
                    ev.name = if h.send { "send" } else { "recv" };
                    if !o.backwards.contains(&h.msg_id) {
                        ev.flow = Some((h.msg_id, !h.send));
                        stats.flows += u64::from(!h.send);
                    }
                    self.event(&ev)?;
                    open.push(h.t + 1);
                    stats.slices += 1;
                    stats.flow_slices += 1;
                }
                _ => {
                    let p = &t.instants[i];
                    ev.kind = event::INSTANT;
                    ev.cat = "user";
                    ev.name = name_of(o.names, p.name, &mut fallback);
                    self.event(&ev)?;
                    stats.instants += 1;
                }
            }
        }
        self.close_until(&mut open, track, u64::MAX)
    }

    fn holders(&mut self, _stats: &mut WriteStats) -> std::io::Result<()> {
        // Written inline with their tracks.
        Ok(())
    }

    fn finish(self: Box<Self>) -> std::io::Result<u64> {
        let file = self.w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(self.packets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_packet_has_the_hand_computed_bytes() {
        let path = std::env::temp_dir().join(format!("chorus-pf-{}.bin", std::process::id()));
        let mut w = PerfettoOut {
            w: BufWriter::new(File::create(&path).unwrap()),
            packets: 1,
            iids: [HashMap::new(), HashMap::new(), HashMap::new()],
            packet: Vec::new(),
            interned: Vec::new(),
        };
        w.event(&Ev {
            ts: 1000,
            track: thread_uuid(3),
            kind: event::SLICE_BEGIN,
            cat: "entry",
            name: "A",
            args: &[("bytes", 64)],
            flow: Some((7, false)),
        })
        .unwrap();
        assert_eq!(Box::new(w).finish().unwrap(), 2);
        let got = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        #[rustfmt::skip]
        let want: Vec<u8> = [
            &[0x0a, 69][..],                        // Trace.packet, 69 bytes
            &[0x40, 0xe8, 0x07],                    // timestamp 1000
            &[0x50, 0x01],                          // trusted_packet_sequence_id 1
            &[0x68, 0x02],                          // sequence_flags NEEDS_INCREMENTAL_STATE
            &[0x62, 29],                            // interned_data
            &[0x0a, 9, 0x08, 0x01, 0x12, 5], b"entry", // event_categories {iid 1}
            &[0x12, 5, 0x08, 0x01, 0x12, 1], b"A",     // event_names {iid 1}
            &[0x1a, 9, 0x08, 0x01, 0x12, 5], b"bytes", // debug_annotation_names {iid 1}
            &[0x5a, 29],                            // track_event
            &[0x48, 0x01],                          // type SLICE_BEGIN
            &[0x58, 0x83, 0x80, 0x80, 0x80, 0x80, 0x40], // track_uuid 2^41 + 3
            &[0x18, 0x01],                          // category_iids 1
            &[0x50, 0x01],                          // name_iid 1
            &[0x22, 4, 0x08, 0x01, 0x18, 64],       // debug_annotations {name_iid 1, uint 64}
            &[0xf9, 0x02, 7, 0, 0, 0, 0, 0, 0, 0],  // flow_ids [7] (fixed64)
        ]
        .concat();
        assert_eq!(got, want);
    }

    #[test]
    fn perfetto_paths_are_recognised() {
        for (p, yes) in [
            ("run.perfetto-trace", true),
            ("dir/run.pftrace", true),
            ("run.json", false),
            ("pftrace", false),
        ] {
            assert_eq!(is_perfetto_path(Path::new(p)), yes, "{p}");
        }
    }
}
