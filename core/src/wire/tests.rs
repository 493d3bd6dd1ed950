//! Round trips and refusals of the wire form.

use super::*;
use crate::base::bytes::Bytes;
use crate::base::ids::ChareId;
use crate::msg::callback::Callback;
use crate::msg::envelope::Dest;
use crate::msg::kind::balance::{BalanceMsg, ObjRecord, PeRecord, SyncUp};
use crate::msg::kind::flow::Credit;
use crate::msg::kind::quiescence::{QdMsg, QdRequest};
use crate::msg::payload::Payload;
use std::sync::Arc;

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

/// A user message whose payload is a run of `values`.
fn run_of(values: &[u64]) -> Envelope {
    let mut env = user(vec![]);
    if let Kind::User { payload, .. } = &mut env.kind {
        *payload = Payload::new(values[0]);
        for &v in &values[1..] {
            payload.absorb(v).expect("same type");
        }
    }
    env
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
    let env = run_of(&[5, 6, 7]);
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
        kind: QdRequest {
            callback: Callback::Exit,
        }
        .into(),
    };
    out.clear();
    encode(&qd, 2, &mut out).expect("encodes");
    let back = decode(Arc::new(out), 2).expect("decodes");
    assert!(matches!(
        back.kind,
        Kind::Qd(QdMsg::QdRequest(QdRequest {
            callback: Callback::Exit
        }))
    ));
}

/// A gather's message of three load records from two PEs, one with receivers.
fn sync_up() -> Envelope {
    let obj = |k: u8, pe, load| ObjRecord {
        key: crate::base::ids::IndexKey::from(vec![k, 0, 0, 0, 7, 0, 0, 0]),
        pe,
        load,
        comm: Vec::new(),
    };
    let mut with_comm = obj(3, 1, 0.5);
    with_comm.comm = vec![(crate::base::ids::IndexKey::from(vec![4]), 2, 96)];
    let up = SyncUp {
        coll: crate::base::ids::CollectionId { creator: 0, seq: 2 },
        round: 4,
        objs: vec![obj(1, 1, 0.5), obj(2, 1, 0.5), with_comm, obj(9, 2, 1e-4)],
        pes: vec![PeRecord {
            pe: 1,
            background: 2e-6,
        }],
    };
    Envelope {
        src: 1,
        seq: 5,
        prio: 0,
        expedited: false,
        counted: true,
        kind: up.into(),
    }
}

#[test]
fn a_gathers_load_records_round_trip_in_the_bytes_they_are_counted_at() {
    let env = sync_up();
    let mut out = Vec::new();
    encode(&env, 1, &mut out).expect("encodes");
    // The sim charges `wire_bytes`: the bytes a wire carries.
    assert_eq!(env.wire_bytes(), out.len() as u64);
    let back = decode(Arc::new(out), 1).expect("decodes");
    let (Kind::Balance(BalanceMsg::SyncUp(a)), Kind::Balance(BalanceMsg::SyncUp(b))) =
        (&env.kind, &back.kind)
    else {
        panic!("not a gather's message")
    };
    assert_eq!((a.coll, a.round), (b.coll, b.round));
    assert_eq!((&a.objs, &a.pes), (&b.objs, &b.pes));
}

#[test]
fn nodegroup_kinds_and_callbacks_round_trip() {
    use crate::base::ids::CollectionId;
    use crate::msg::kind::bcast::{BcastMsg, NodeBcast};
    let coll = CollectionId { creator: 2, seq: 5 };
    let bcast = Envelope {
        kind: NodeBcast {
            coll,
            root: 3,
            payload: Payload::new(vec![9u32, 8]),
        }
        .into(),
        ..user(Vec::new())
    };
    let mut out = Vec::new();
    encode(&bcast, 1, &mut out).expect("encodes");
    let back = decode(Arc::new(std::mem::take(&mut out)), 1).expect("decodes");
    let Kind::Bcast(BcastMsg::NodeBcast(b)) = back.kind else {
        panic!("not a nodegroup broadcast: {:?}", back.kind)
    };
    assert_eq!((b.coll, b.root), (coll, 3));
    assert_eq!(b.payload.take::<Vec<u32>>().expect("payload"), vec![9, 8]);
    for callback in [
        Callback::NodeGroupAll { coll, entry: 4 },
        Callback::NodeGroupMember {
            coll,
            node: 2,
            entry: 4,
        },
    ] {
        let qd = Envelope {
            kind: QdRequest {
                callback: callback.clone(),
            }
            .into(),
            ..user(Vec::new())
        };
        encode(&qd, 1, &mut out).expect("encodes");
        let back = decode(Arc::new(std::mem::take(&mut out)), 1).expect("decodes");
        let Kind::Qd(QdMsg::QdRequest(r)) = back.kind else {
            panic!("not a request")
        };
        assert_eq!(r.callback, callback);
    }
}

#[test]
fn tags_no_kind_uses_are_unknown_kinds() {
    let mut good = Vec::new();
    encode(&user(vec![1]), 1, &mut good).expect("encodes");
    let unused = (0..=u8::MAX).filter(|&t| KIND_NAMES.get(t as usize).is_none_or(|n| n.is_empty()));
    for tag in unused {
        let mut b = good.clone();
        b[7] = tag;
        let err = decode(Arc::new(b), 1).expect_err("no such kind");
        assert!(
            err.to_string()
                .contains(&format!("unknown message kind {tag}")),
            "{err}"
        );
    }
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
                b[4] = 99;
                b
            },
            "wire version 99",
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
fn an_envelope_after_a_landing_pad_decodes_with_its_bytes_in_place() {
    let a = Bytes::from(vec![5u8; SEGMENT_MIN + 3]);
    let b = Bytes::from(vec![6u8; SEGMENT_MIN]);
    let mut plain = Vec::new();
    encode(&long(&a, &b), 1, &mut plain).expect("encodes");
    for pad in [0, 1, 37, 63] {
        let mut buf = vec![0xEE; pad];
        buf.extend_from_slice(&plain);
        let buf = Arc::new(buf);
        let env = decode::decode_from(Arc::clone(&buf), pad, 1).expect("decodes");
        let Kind::User { payload, .. } = env.kind else {
            panic!("not a user message")
        };
        type Long = (u8, Bytes, Vec<u16>, Bytes, u64);
        let (x, ra, v, rb, y) = payload.take::<Long>().expect("payload");
        assert_eq!((x, v, y), (7, vec![1, 2], 9));
        assert!(ra == a && rb == b, "pad {pad}");
        let inside = buf.as_ptr_range();
        assert!(
            inside.contains(&ra.as_ptr()),
            "pad {pad}: a view, not a copy"
        );
    }
    // The pad is not part of the envelope: a header that starts elsewhere is refused.
    let mut buf = vec![0u8; 3];
    buf.extend_from_slice(&plain);
    let err = decode::decode_from(Arc::new(buf), 2, 1).expect_err("misplaced");
    assert!(matches!(err, WireError::BadMagic { .. }), "{err}");
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

#[test]
fn a_damaged_envelope_still_tells_the_weight_its_sender_counted() {
    let env = run_of(&[5, 6, 7]);
    let mut run = Vec::new();
    encode(&env, 1, &mut run).expect("encodes");
    run.push(0xEE);
    assert!(decode(Arc::new(run.clone()), 1).is_err(), "damaged");
    assert_eq!(counted_weight(&run), Some(3), "a run of three");

    let mut one = Vec::new();
    encode(&user(vec![1]), 1, &mut one).expect("encodes");
    assert_eq!(counted_weight(&one), Some(1));
    let mut uncounted = user(vec![1]);
    uncounted.counted = false;
    let mut out = Vec::new();
    encode(&uncounted, 1, &mut out).expect("encodes");
    assert_eq!(counted_weight(&out), Some(0));

    assert_eq!(counted_weight(&one[..HEADER_BYTES - 1]), None, "too short");
    let mut garbled = one.clone();
    garbled[0] ^= 0xFF;
    assert_eq!(counted_weight(&garbled), None, "no magic");
    let body_end = HEADER_BYTES + u32_at(&run, 24) as usize;
    assert_eq!(
        counted_weight(&run[..body_end + 4]),
        None,
        "run count cut off"
    );
}

#[test]
fn a_run_claiming_more_messages_than_a_run_holds_is_refused() {
    let env = run_of(&[5, 6]);
    let mut out = Vec::new();
    encode(&env, 1, &mut out).expect("encodes");
    // The run's count is the first 8 bytes of the payload, which ends the envelope
    // after its two 8-byte messages.
    let at = out.len() - 16 - 8;
    assert_eq!(out[at..at + 8], 2u64.to_le_bytes());
    for claimed in [0, u64::MAX, crate::msg::payload::MAX_RUN_MESSAGES + 1] {
        out[at..at + 8].copy_from_slice(&claimed.to_le_bytes());
        // Accepted, the count reached `Envelope::weight` and quiescence counting.
        let err = decode(Arc::new(out.clone()), 1).err();
        assert!(
            matches!(err, Some(WireError::Run { claimed: Some(c), .. }) if c == claimed),
            "{claimed}: {err:?}"
        );
    }
}

/// Where the fuzz target's seed corpus lives (`fuzz/corpus/wire_decode`).
fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/wire_decode")
}

/// One valid input of every shape the readers take: single and run payloads,
/// runtime kinds, a segmented main message, a long-envelope notice.
fn corpus_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut seeds = Vec::new();
    let mut out = Vec::new();
    encode(&user(vec![1, 2, 3]), 1, &mut out).expect("encodes");
    seeds.push(("user-one", std::mem::take(&mut out)));
    encode(&run_of(&[5, 6]), 1, &mut out).expect("encodes");
    seeds.push(("user-run", std::mem::take(&mut out)));
    let qd = Envelope {
        src: 0,
        seq: 1,
        prio: 0,
        expedited: true,
        counted: false,
        kind: QdRequest {
            callback: Callback::Exit,
        }
        .into(),
    };
    encode(&qd, 1, &mut out).expect("encodes");
    seeds.push(("qd-request", std::mem::take(&mut out)));
    let credit = Envelope {
        kind: Credit { n: 1024 }.into(),
        ..qd
    };
    encode(&credit, 1, &mut out).expect("encodes");
    seeds.push(("credit", std::mem::take(&mut out)));
    let a = Bytes::from(vec![1u8; SEGMENT_MIN]);
    encode_segmented(&long(&a, &a), 1, &mut out).expect("encodes");
    seeds.push(("segmented-main", std::mem::take(&mut out)));
    seeds.push(("long-notice", long_notice(20 << 10)));
    encode(&sync_up(), 1, &mut out).expect("encodes");
    seeds.push(("lb-sync-up", std::mem::take(&mut out)));
    seeds
}

#[test]
fn the_fuzz_corpus_holds_every_seed_and_each_is_read_cleanly() {
    // CHORUS_WRITE_CORPUS=1 writes the seeds after a change of the wire format.
    let write = std::env::var_os("CHORUS_WRITE_CORPUS").is_some();
    for (name, bytes) in corpus_seeds() {
        let path = corpus_dir().join(name);
        if write {
            std::fs::create_dir_all(corpus_dir()).expect("corpus directory");
            std::fs::write(&path, &bytes).expect("write a seed");
        }
        let stored = std::fs::read(&path).unwrap_or_default();
        assert!(
            stored == bytes,
            "{} is missing or stale: run CHORUS_WRITE_CORPUS=1 cargo test -p chorus-core the_fuzz_corpus",
            path.display()
        );
        let segmented = name == "segmented-main" || name == "long-notice";
        assert_eq!(check(&bytes, 1).is_ok(), !segmented, "{name}");
    }
}

/// One mutation of a corpus seed, through every reader of received bytes.
fn mutate_and_check(
    pick: usize,
    flips: Vec<(usize, u8)>,
    insert: Option<(usize, Vec<u8>)>,
    cut: usize,
) {
    static SEEDS: std::sync::OnceLock<Vec<(&'static str, Vec<u8>)>> = std::sync::OnceLock::new();
    let seeds = SEEDS.get_or_init(corpus_seeds);
    let mut bytes = seeds[pick % seeds.len()].1.clone();
    for (at, b) in flips {
        let n = bytes.len();
        bytes[at % n] = b;
    }
    if let Some((at, extra)) = insert {
        let at = at % (bytes.len() + 1);
        bytes.splice(at..at, extra);
    }
    bytes.truncate(cut.max(1));
    let _ = check(&bytes, 1);
}

proptest::proptest! {
    /// The fuzz target's work on stable Rust, in CI: every corpus seed with random
    /// bytes overwritten, inserted or cut off goes through every reader of received
    /// bytes without a panic.
    #[test]
    fn mutated_corpus_seeds_never_panic_any_reader(
        pick in 0usize..5,
        flips in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..8),
        insert in proptest::option::of((0usize..4096, proptest::collection::vec(proptest::prelude::any::<u8>(), 1..16))),
        cut in 0usize..4096,
    ) {
        mutate_and_check(pick, flips, insert, cut);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 1_000_000,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]
    /// The same, 10^6 times over every seed:
    /// `cargo test --release -p chorus-core --lib a_million -- --ignored`.
    #[test]
    #[ignore = "10^6 cases: about 1 s in release, far longer in a debug build"]
    fn a_million_mutated_corpus_seeds_never_panic_any_reader(
        pick in 0usize..64,
        flips in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..8),
        insert in proptest::option::of((0usize..4096, proptest::collection::vec(proptest::prelude::any::<u8>(), 1..16))),
        cut in 0usize..4096,
    ) {
        mutate_and_check(pick, flips, insert, cut);
    }
}
