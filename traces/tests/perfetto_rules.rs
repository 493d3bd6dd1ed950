//! The Perfetto reader refuses packets that Perfetto itself would drop or misname:
//! interning and incremental state used on a sequence that never cleared it (or
//! lost packets since), interned ids never defined, and tracks with no descriptor.
//! Each case is a hand-made trace, one rule broken at a time.

mod common;

use std::path::Path;
use std::process::Command;

use chorus_traces::proto::{annotation, event, interned, packet, track, TRACE_PACKET};
use chorus_traces::read_chrome;
use chorus_traces::wire::{put_bytes, put_message, put_uint};
use common::scratch;

/// `TracePacket.incremental_state_cleared` (deprecated bool, still honoured).
const INCREMENTAL_STATE_CLEARED_OLD: u32 = 41;
/// `TracePacket.previous_packet_dropped`.
const PREVIOUS_PACKET_DROPPED: u32 = 42;

/// One packet under construction.
#[derive(Clone, Default)]
struct P {
    seq: Option<u64>,
    flags: Option<u64>,
    ts: u64,
    extra: Vec<(u32, u64)>,
    interned: Vec<(u32, u64, &'static str)>,
    descriptor: Option<(u64, u32)>,
    event: Option<Ev>,
}

#[derive(Clone, Default)]
struct Ev {
    kind: u64,
    track: u64,
    name_iid: Option<u64>,
    cat_iid: Option<u64>,
    arg_iid: Option<u64>,
    name: Option<&'static str>,
}

impl P {
    fn bytes(&self) -> Vec<u8> {
        let mut p = Vec::new();
        put_uint(&mut p, packet::TIMESTAMP, self.ts);
        if let Some(s) = self.seq {
            put_uint(&mut p, packet::SEQUENCE_ID, s);
        }
        if let Some(f) = self.flags {
            put_uint(&mut p, packet::SEQUENCE_FLAGS, f);
        }
        for &(field, v) in &self.extra {
            put_uint(&mut p, field, v);
        }
        if !self.interned.is_empty() {
            put_message(&mut p, packet::INTERNED_DATA, |d| {
                for &(field, iid, name) in &self.interned {
                    put_message(d, field, |e| {
                        put_uint(e, interned::IID, iid);
                        put_bytes(e, interned::NAME, name.as_bytes());
                    });
                }
            });
        }
        if let Some((uuid, tid)) = self.descriptor {
            put_message(&mut p, packet::TRACK_DESCRIPTOR, |d| {
                put_uint(d, track::UUID, uuid);
                put_message(d, track::THREAD, |t| {
                    put_uint(t, track::PID, 1);
                    put_uint(t, track::TID, u64::from(tid));
                    put_bytes(t, track::THREAD_NAME, format!("PE {tid}").as_bytes());
                });
            });
        }
        if let Some(e) = &self.event {
            put_message(&mut p, packet::TRACK_EVENT, |b| {
                put_uint(b, event::TYPE, e.kind);
                put_uint(b, event::TRACK_UUID, e.track);
                if let Some(i) = e.name_iid {
                    put_uint(b, event::NAME_IID, i);
                }
                if let Some(n) = e.name {
                    put_bytes(b, event::NAME, n.as_bytes());
                }
                if let Some(i) = e.cat_iid {
                    put_uint(b, event::CATEGORY_IIDS, i);
                }
                if let Some(i) = e.arg_iid {
                    put_message(b, event::DEBUG_ANNOTATIONS, |a| {
                        put_uint(a, annotation::NAME_IID, i);
                        put_uint(a, annotation::UINT_VALUE, 5);
                    });
                }
            });
        }
        p
    }
}

const CLEARED: u64 = packet::SEQ_INCREMENTAL_STATE_CLEARED;
const NEEDS: u64 = packet::SEQ_NEEDS_INCREMENTAL_STATE;

/// A well-formed trace on sequence 1: a descriptor that clears the state, a slice
/// begun with interned name, category and annotation name, and its end.
fn good() -> Vec<P> {
    let descriptor = P {
        seq: Some(1),
        flags: Some(CLEARED),
        descriptor: Some((10, 2)),
        ..P::default()
    };
    let begin = P {
        seq: Some(1),
        flags: Some(NEEDS),
        ts: 100,
        interned: vec![
            (interned::EVENT_NAMES, 1, "A::go"),
            (interned::EVENT_CATEGORIES, 1, "entry"),
            (interned::DEBUG_ANNOTATION_NAMES, 1, "bytes"),
        ],
        event: Some(Ev {
            kind: event::SLICE_BEGIN,
            track: 10,
            name_iid: Some(1),
            cat_iid: Some(1),
            arg_iid: Some(1),
            name: None,
        }),
        ..P::default()
    };
    let end = P {
        seq: Some(1),
        flags: Some(NEEDS),
        ts: 200,
        event: Some(Ev {
            kind: event::SLICE_END,
            track: 10,
            ..Ev::default()
        }),
        ..P::default()
    };
    vec![descriptor, begin, end]
}

fn write(dir: &Path, name: &str, packets: &[P]) -> std::path::PathBuf {
    let mut out = Vec::new();
    for p in packets {
        put_bytes(&mut out, TRACE_PACKET, &p.bytes());
    }
    let path = dir.join(format!("{name}.perfetto-trace"));
    std::fs::write(&path, out).unwrap();
    path
}

/// The error reading `packets` gives, or `None` if it reads.
fn refusal(dir: &Path, name: &str, packets: &[P]) -> Option<String> {
    read_chrome(write(dir, name, packets))
        .err()
        .map(|e| e.to_string())
}

#[test]
fn the_good_trace_and_its_valid_variants_read() {
    let dir = scratch("pf_rules_ok");
    let t = read_chrome(write(&dir, "good", &good())).unwrap();
    let s = &t.tracks[0].slices[0];
    assert_eq!((s.name.as_str(), s.cat.as_str()), ("A::go", "entry"));
    assert_eq!(s.args.get("bytes").and_then(|v| v.as_u64()), Some(5));
    // The deprecated bool clears the state as the flag does.
    let mut old = good();
    old[0].flags = None;
    old[0].extra = vec![(INCREMENTAL_STATE_CLEARED_OLD, 1)];
    assert_eq!(refusal(&dir, "old_flag", &old), None);
    // Inline names need no state, and packets that set no flag and use no iid are fine.
    let mut inline = good();
    inline[0].flags = None;
    inline[1].flags = None;
    inline[1].interned.clear();
    inline[1].event = Some(Ev {
        kind: event::SLICE_BEGIN,
        track: 10,
        name: Some("A::go"),
        ..Ev::default()
    });
    inline[2].flags = None;
    assert_eq!(refusal(&dir, "inline", &inline), None);
    // A loss followed by a clear and the names emitted again is whole again.
    let mut again = good();
    again[2].extra = vec![(PREVIOUS_PACKET_DROPPED, 1)];
    again[2].flags = Some(CLEARED | NEEDS);
    let mut end = again[2].clone();
    again[2].event = None;
    again.insert(3, again[1].clone());
    again[3].ts = 150;
    end.extra.clear();
    end.flags = Some(NEEDS);
    end.ts = 300;
    again.push(end.clone());
    again.push(end);
    let t = read_chrome(write(&dir, "again", &again)).unwrap();
    assert_eq!(t.tracks[0].slices.len(), 2);
}

#[test]
fn state_used_on_a_sequence_never_cleared_is_refused() {
    let dir = scratch("pf_rules_uncleared");
    let mut p = good();
    p[0].flags = None;
    let e = refusal(&dir, "uncleared", &p).expect("refused");
    // Perfetto skips interned data and SEQ_NEEDS_INCREMENTAL_STATE packets until the
    // sequence's state is cleared: the slice would vanish.
    assert!(e.contains("uncleared.perfetto-trace"), "{e}");
    assert!(e.contains("InternedDataBeforeClear: 1 packet;"), "{e}");
    assert!(e.contains("NeedsStateBeforeClear: 2 packets;"), "{e}");
    assert!(e.contains("sequence 1"), "{e}");
    // Iids used without the flag on a sequence never cleared: misnamed, not dropped.
    let mut p = good();
    p[0].flags = None;
    p[1].flags = None;
    p[2].flags = None;
    let e = refusal(&dir, "uncleared_noflag", &p).expect("refused");
    assert!(e.contains("InternedDataBeforeClear"), "{e}");
    assert!(e.contains("InternedIdBeforeClear: 1 packet;"), "{e}");
    // State cleared on another sequence does not count.
    let mut p = good();
    p[1].seq = Some(2);
    p[2].seq = Some(2);
    let e = refusal(&dir, "other_seq", &p).expect("refused");
    assert!(e.contains("NeedsStateBeforeClear: 2 packets;"), "{e}");
    assert!(e.contains("sequence 2"), "{e}");
}

#[test]
fn state_used_after_a_lost_packet_is_refused_until_cleared_again() {
    let dir = scratch("pf_rules_lost");
    let mut p = good();
    p[2].extra = vec![(PREVIOUS_PACKET_DROPPED, 1)];
    let e = refusal(&dir, "lost", &p).expect("refused");
    assert!(e.contains("NeedsStateBeforeClear: 1 packet;"), "{e}");
    assert!(e.contains("lost"), "{e}");
}

#[test]
fn an_interned_id_never_defined_is_refused_naming_the_table() {
    let dir = scratch("pf_rules_iid");
    for (field, table) in [
        ("name", "event name"),
        ("cat", "event category"),
        ("arg", "debug annotation name"),
    ] {
        let mut p = good();
        let ev = p[1].event.as_mut().unwrap();
        match field {
            "name" => ev.name_iid = Some(7),
            "cat" => ev.cat_iid = Some(7),
            _ => ev.arg_iid = Some(7),
        }
        let e = refusal(&dir, field, &p).expect("refused");
        assert!(e.contains("UnknownInternedId: 1 packet;"), "{e}");
        assert!(e.contains(&format!("{table} iid 7")), "{field}: {e}");
    }
    // A clear forgets what was interned before it.
    let mut p = good();
    p[2].flags = Some(CLEARED | NEEDS);
    p[2].event = None;
    let mut begin = p[1].clone();
    begin.interned.clear();
    begin.ts = 150;
    p.push(begin);
    let e = refusal(&dir, "forgotten", &p).expect("refused");
    assert!(e.contains("UnknownInternedId: 1 packet;"), "{e}");
}

#[test]
fn an_event_on_a_track_with_no_descriptor_is_refused() {
    let dir = scratch("pf_rules_track");
    let mut p = good();
    p[1].event.as_mut().unwrap().track = 11;
    p[2].event.as_mut().unwrap().track = 11;
    let e = refusal(&dir, "track", &p).expect("refused");
    assert!(e.contains("TrackWithoutDescriptor: 2 packets;"), "{e}");
    assert!(e.contains("track uuid 11"), "{e}");
}

#[test]
fn incremental_state_without_a_sequence_id_is_refused() {
    let dir = scratch("pf_rules_seq0");
    let mut p = good();
    for q in &mut p {
        q.seq = None;
    }
    let e = refusal(&dir, "seq0", &p).expect("refused");
    assert!(e.contains("NoSequenceId"), "{e}");
}

#[test]
fn each_rule_is_named_once_with_its_count_by_every_command() {
    let dir = scratch("pf_rules_cli");
    let mut p = good();
    let mut end = p.pop().unwrap();
    // Thirty slices whose names are iids never defined.
    for i in 0..30 {
        let mut begin = p[1].clone();
        begin.interned.clear();
        begin.ts = 1_000 + 10 * i;
        begin.event.as_mut().unwrap().name_iid = Some(100 + i);
        end.ts = begin.ts + 5;
        p.push(begin);
        p.push(end.clone());
    }
    p[1].event.as_mut().unwrap().kind = event::INSTANT;
    let path = write(&dir, "many", &p);
    for cmd in ["check", "summary"] {
        let o = Command::new(env!("CARGO_BIN_EXE_chorus-trace"))
            .args([cmd, path.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert_eq!(err.matches("UnknownInternedId").count(), 1, "{cmd}: {err}");
        assert!(
            err.contains("UnknownInternedId: 30 packets; first:"),
            "{err}"
        );
        assert!(err.contains("event name iid 100"), "{err}");
    }
}

#[test]
fn a_packet_claiming_more_bytes_than_the_file_has_is_refused_without_reserving_them() {
    let dir = scratch("pf_rules_claim");
    let mut bytes = Vec::new();
    for p in good() {
        put_bytes(&mut bytes, TRACE_PACKET, &p.bytes());
    }
    // A packet that says it has 200 MiB, in a file of a few hundred bytes.
    bytes.extend_from_slice(&[0x0a, 0x80, 0x80, 0x80, 0x64, 0x08, 0x01]);
    let path = dir.join("claim.perfetto-trace");
    std::fs::write(&path, &bytes).unwrap();
    // Under a 150 MB address-space limit, reserving the claimed size fails (the
    // process aborted: "memory allocation failed").
    let script = format!(
        "ulimit -v 150000; exec {} check {}",
        env!("CARGO_BIN_EXE_chorus-trace"),
        path.display()
    );
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("truncated Perfetto trace"), "{err}");
}
