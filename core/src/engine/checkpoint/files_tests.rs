//! Mutated checkpoints never panic the restart's reader: each is refused with an
//! error naming the manifest or the PE file, or read whole, every saved element
//! placed on a PE. Fixed-seed mutations of the manifest and of a PE file (its size
//! and checksum put right in the manifest, so the decoder is reached): byte flips,
//! cuts at every k-th offset, chunks doubled or removed, huge numbers, values of the
//! wrong type.

use super::*;
use chorus_traces::mutate::{digit_runs, replace, replace_spans, structural, Kind, Mutant, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// Saved PEs of the sample checkpoint.
const PES: usize = 3;

/// PE `pe`'s state: a group member, its part of a 12-element block array (element
/// 0 deleted) and a singleton.
fn pe_state(pe: Pe) -> PeState {
    let key = |i: u64| IndexKey::encode(&(i as usize));
    let elements = (1..12u64)
        .filter(|i| (i * PES as u64 / 12) as Pe == pe)
        .map(|i| SavedElement {
            key: key(i),
            order: i,
            contributed: i,
            syncs: 1,
            state: vec![i as u8; 5].into(),
        })
        .collect();
    let id = |seq| CollectionId { creator: 0, seq };
    let deleted = (pe == 0)
        .then(|| SavedDeleted {
            key: key(0),
            order: 0,
            contributed: 2,
        })
        .into_iter()
        .collect();
    let singleton = SavedSingleton {
        id: ChareId {
            pe,
            creator: 0,
            seq: 1,
        },
        ty: 2,
        state: vec![pe as u8; 6].into(),
    };
    PeState {
        pe,
        next_coll_seq: 2,
        next_chare_seq: vec![(pe, 4)],
        next_section_seq: 3,
        singletons: vec![singleton],
        collections: vec![
            SavedCollection {
                id: id(0),
                ty: 0,
                kind: SavedKind::Group {
                    state: vec![pe as u8; 8].into(),
                    contributed: 3,
                },
            },
            SavedCollection {
                id: id(1),
                ty: 1,
                kind: SavedKind::Array {
                    shape: Shape::Dense1(12),
                    map: ArrayMap::Block,
                    seq_floor: 7,
                    elements,
                    deleted,
                },
            },
        ],
    }
}

/// Writes `state` as PE `state.pe`'s file of checkpoint `epoch` in `dir`.
fn write_state(dir: &Path, epoch: u64, state: &PeState) -> Result<(u64, u64), CheckpointError> {
    write_pe_file(dir, epoch, state.pe, |to, what| {
        bincode::serialize_into(to, state).map_err(|e| CheckpointError::io(what, e))
    })
}

/// Writes the sample checkpoint into `dir`; returns its manifest.
fn write_sample(dir: &Path, reg: &Registry) -> Manifest {
    let files = (0..PES as Pe)
        .map(|pe| {
            let (bytes, checksum) = write_state(dir, 1, &pe_state(pe)).unwrap();
            FileEntry {
                pe,
                name: file_name(pe, 1),
                bytes,
                checksum,
            }
        })
        .collect();
    let m = Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        wire_version: 6,
        registry_digest: reg.digest(),
        pes: PES,
        epoch: 1,
        files,
        resume: None,
    };
    commit(dir, &m).unwrap();
    m
}

/// The mutants of `file`; `json` picks text or binary replacements for numbers.
fn mutants(file: &[u8], json: bool, per_kind: usize, seed: u64) -> Vec<Mutant> {
    let mut rng = Rng::new(seed);
    let mut out = structural(file, per_kind, 24, &mut rng);
    if json {
        // Every number of the manifest, made each huge value in turn.
        let huge: [&[u8]; 4] = [
            b"4294967296",
            b"18446744073709551615",
            b"18446744073709551616",
            b"1e300",
        ];
        for &span in &digit_runs(file) {
            for v in huge {
                out.push(Mutant {
                    kind: Kind::Huge,
                    at: span.0,
                    bytes: replace(file, span, v),
                });
            }
        }
        let wrong: [&[u8]; 6] = [b"\"x\"", b"null", b"[]", b"{}", b"-1", b"1.5"];
        out.extend(replace_spans(
            file,
            &digit_runs(file),
            &wrong,
            (Kind::WrongType, per_kind),
            &mut rng,
        ));
        return out;
    }
    // Any 8 bytes may be a length, a count or a variant tag.
    let spans: Vec<(usize, usize)> = (0..file.len().saturating_sub(8))
        .map(|i| (i, i + 8))
        .collect();
    let huge: [&[u8]; 3] = [
        &[0xff; 8],
        &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0, 0, 0x80],
    ];
    let wrong: [&[u8]; 3] = [
        &[2, 0, 0, 0, 0, 0, 0, 0],
        &[7, 0, 0, 0, 0, 0, 0, 0],
        &[0; 8],
    ];
    out.extend(replace_spans(
        file,
        &spans,
        &huge,
        (Kind::Huge, per_kind),
        &mut rng,
    ));
    out.extend(replace_spans(
        file,
        &spans,
        &wrong,
        (Kind::WrongType, per_kind),
        &mut rng,
    ));
    out
}

/// Elements, deleted elements and singletons the PE files named by `m` hold,
/// decoded directly (None if one does not).
fn saved_elements(dir: &Path, m: &Manifest) -> Option<usize> {
    let mut n = 0;
    for f in &m.files {
        let state: PeState = bincode::deserialize(&std::fs::read(dir.join(&f.name)).ok()?).ok()?;
        n += state.singletons.len();
        for c in state.collections {
            if let SavedKind::Array {
                elements, deleted, ..
            } = c.kind
            {
                n += elements.len() + deleted.len();
            }
        }
    }
    Some(n)
}

/// Loads the checkpoint in `dir`: a panic, an error naming neither the manifest nor
/// a PE file, or an accepted checkpoint whose elements (deleted ones and
/// singletons too) are not all placed fails.
fn load_one(dir: &Path, reg: &Registry, case: &str, tally: &mut [usize; 2]) -> Result<(), String> {
    let loaded = catch_unwind(AssertUnwindSafe(|| Restart::load(dir, reg, PES)))
        .map_err(|_| format!("{case}: Restart::load panicked"))?;
    match loaded {
        Err(e) => {
            let e = e.to_string();
            if !e.contains(MANIFEST) && !e.contains(".ckpt") {
                return Err(format!("{case}: the error names no file: {e}"));
            }
            tally[0] += 1;
        }
        Ok(r) => {
            let m = read_manifest(dir).map_err(|e| format!("{case}: accepted, then {e}"))?;
            let placed: usize = (0..PES as Pe)
                .map(|pe| {
                    let p = r.for_pe(pe).placed;
                    p.elements.len() + p.deleted.len() + p.singletons.len()
                })
                .sum();
            if r.info.saved_pes != r.states.len() || Some(placed) != saved_elements(dir, &m) {
                return Err(format!("{case}: accepted, but {placed} elements placed"));
            }
            tally[1] += 1;
        }
    }
    Ok(())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-ckpt-mut-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn mutated_manifests_are_refused_naming_the_file_or_read_whole() {
    let dir = scratch("manifest");
    let reg = Registry::new();
    write_sample(&dir, &reg);
    let text = std::fs::read(dir.join(MANIFEST)).unwrap();
    let (mut tally, mut failures) = ([0, 0], Vec::new());
    let all = mutants(&text, true, 120, 0x00c0_ffee);
    for (i, m) in all.iter().enumerate() {
        std::fs::write(dir.join(MANIFEST), &m.bytes).unwrap();
        let text = String::from_utf8_lossy(&m.bytes);
        let case = format!("manifest mutant {i} ({:?} at {}): {text}", m.kind, m.at);
        if let Err(f) = load_one(&dir, &reg, &case, &mut tally) {
            failures.push(f);
        }
    }
    finish(&dir, all.len(), &failures, tally);
}

#[test]
fn mutated_pe_files_are_refused_naming_the_file_or_read_whole() {
    let dir = scratch("pe");
    let reg = Registry::new();
    let m = write_sample(&dir, &reg);
    let entry = m.files[1].clone();
    let bytes = std::fs::read(dir.join(&entry.name)).unwrap();
    let (mut tally, mut failures) = ([0, 0], Vec::new());
    let all = mutants(&bytes, false, 150, 0x0bad_5eed);
    for (i, mutant) in all.iter().enumerate() {
        let b = &mutant.bytes;
        std::fs::write(dir.join(&entry.name), b).unwrap();
        // Most mutants with the manifest's size and checksum put right (the decoder
        // and the placement see them); every fifth as written (the checks see it).
        let mut m2 = write_sample_manifest(&m);
        if i % 5 != 0 {
            m2.files[1].bytes = b.len() as u64;
            m2.files[1].checksum = checksum(b);
        } else {
            m2.files[1] = entry.clone();
        }
        std::fs::write(dir.join(MANIFEST), serde_json::to_vec(&m2).unwrap()).unwrap();
        let case = format!("PE file mutant {i} ({:?} at {})", mutant.kind, mutant.at);
        if let Err(f) = load_one(&dir, &reg, &case, &mut tally) {
            failures.push(f);
        }
    }
    finish(&dir, all.len(), &failures, tally);
}

/// Removes `dir`; fails if any of the `cases` mutants failed or most were accepted.
fn finish(dir: &Path, cases: usize, failures: &[String], tally: [usize; 2]) {
    std::fs::remove_dir_all(dir).unwrap();
    let n = failures.len();
    assert!(n == 0, "{n} of {cases} failed:\n{}", failures.join("\n\n"));
    assert!(tally[0] > tally[1], "refused, accepted: {tally:?}");
    eprintln!("{cases} mutants: refused, accepted {tally:?}");
}

/// A copy of `m` (the manifest is rewritten for each PE-file mutant).
fn write_sample_manifest(m: &Manifest) -> Manifest {
    serde_json::from_slice(&serde_json::to_vec(m).unwrap()).unwrap()
}

#[test]
fn a_streamed_pe_file_is_its_state_encoded_whole_with_that_checksum() {
    let dir = scratch("stream");
    let state = pe_state(1);
    let (bytes, sum) = write_state(&dir, 3, &state).unwrap();
    let written = std::fs::read(dir.join(file_name(1, 3))).unwrap();
    assert_eq!(written, bincode::serialize(&state).unwrap());
    assert_eq!((bytes, sum), (written.len() as u64, checksum(&written)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn of_several_bad_pe_files_the_restart_names_the_first() {
    let dir = scratch("first-bad");
    let reg = Registry::new();
    let m = write_sample(&dir, &reg);
    for f in &m.files[1..] {
        std::fs::write(dir.join(&f.name), b"damaged").unwrap();
    }
    for _ in 0..4 {
        match Restart::load(&dir, &reg, PES) {
            Err(CheckpointError::Truncated { file, found: 7, .. }) => {
                assert_eq!(file, dir.join(&m.files[1].name));
            }
            other => panic!("{:?}", other.err()),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
