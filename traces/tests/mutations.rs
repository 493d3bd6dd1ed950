//! Mutated trace files (JSON and Perfetto protobuf) never panic a reader: each is
//! refused with an error naming the file, or read the same by every reader. The
//! mutations are fixed-seed: byte flips, cuts at every k-th offset, chunks doubled or
//! removed, numbers made huge, values of the wrong type.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::Command;

use chorus_traces::mutate::{replace_spans, structural, Kind, Mutant, Rng};
use chorus_traces::{read_chrome, summarize_file, CompactTrace, SummaryOptions, TraceConfig};
use common::{record, scenario, scratch};

/// Byte offsets of the numbers of a JSON text (runs of digits after `:`), and of
/// its values' starts, for the number and type mutations.
fn json_numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] == b':' {
            let start = i + 1;
            let mut end = start;
            while end < text.len() && (text[end].is_ascii_digit() || b".-eE".contains(&text[end])) {
                end += 1;
            }
            if end > start {
                out.push((start, end));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Offsets of varints following a key byte of wire type 0 (candidates for huge values)
/// and of every byte (any may be a key whose wire type is changed).
fn proto_varints(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..bytes.len().saturating_sub(1) {
        // Keys of the fields the reader reads as varints: timestamp (8), sequence id
        // (10), flags (13), track uuid (11), iid (1), type (9).
        if [0x40, 0x50, 0x68, 0x58, 0x08, 0x48].contains(&bytes[i]) {
            let mut end = i + 1;
            while end < bytes.len() && bytes[end] & 0x80 != 0 {
                end += 1;
            }
            if end < bytes.len() {
                out.push((i + 1, end + 1));
            }
        }
    }
    out
}

/// The fixed-seed mutants of `file`: about `per_kind` of each kind.
fn mutants(file: &[u8], json: bool, per_kind: usize, seed: u64) -> Vec<Mutant> {
    let mut rng = Rng::new(seed);
    let mut out = structural(file, per_kind, 64, &mut rng);
    let spots = if json {
        json_numbers(file)
    } else {
        proto_varints(file)
    };
    let huge: &[&[u8]] = if json {
        &[
            b"1e300",
            b"18446744073709551616",
            b"-1",
            b"1e-300",
            b"99999999999999999999999",
        ]
    } else {
        &[
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
            &[
                0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ],
        ]
    };
    out.extend(replace_spans(
        file,
        &spots,
        huge,
        (Kind::Huge, per_kind),
        &mut rng,
    ));
    if json {
        let wrong: &[&[u8]] = &[b"\"x\"", b"null", b"[]", b"{}", b"true"];
        out.extend(replace_spans(
            file,
            &spots,
            wrong,
            (Kind::WrongType, per_kind),
            &mut rng,
        ));
        return out;
    }
    // The key before a value gets another wire type (1, 2, 3, 5, 6 or 7).
    for _ in 0..per_kind {
        let (start, _) = spots[rng.below(spots.len())];
        let mut bytes = file.to_vec();
        let t = [1u8, 2, 3, 5, 6, 7][rng.below(6)];
        bytes[start - 1] = (bytes[start - 1] & !7) | t;
        out.push(Mutant {
            kind: Kind::WrongType,
            at: start - 1,
            bytes,
        });
    }
    out
}

/// What reading one mutant gave.
#[derive(Default, Debug)]
struct Tally {
    refused: usize,
    accepted: usize,
    same: usize,
}

/// Reads `m` with every reader: a panic, an error not naming the file, or readers
/// that disagree is a failure (returned as text).
fn read_one(path: &Path, m: &Mutant, tally: &mut Tally) -> Result<(), String> {
    std::fs::write(path, &m.bytes).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    let case = format!("{:?} at byte {}", m.kind, m.at);
    let read = catch_unwind(AssertUnwindSafe(|| read_chrome(path)))
        .map_err(|_| format!("{case}: read_chrome panicked"))?;
    let compact = catch_unwind(AssertUnwindSafe(|| CompactTrace::read(path)))
        .map_err(|_| format!("{case}: CompactTrace::read panicked"))?;
    let summary = catch_unwind(AssertUnwindSafe(|| {
        summarize_file(path, &SummaryOptions::bins(4))
    }))
    .map_err(|_| format!("{case}: summarize_file panicked"))?;
    match (read, compact, summary) {
        (Err(a), Err(b), Err(c)) => {
            for e in [a.to_string(), b.to_string(), c.to_string()] {
                if !e.contains(name) || e.len() <= name.len() + 2 {
                    return Err(format!("{case}: an error that does not name the file and the problem: {e}"));
                }
            }
            tally.refused += 1;
        }
        (Ok(t), Ok(c), Ok(s)) => {
            let slices: usize = t.tracks.iter().map(|t| t.slices.len()).sum();
            let compact_slices: usize = c.tracks.iter().map(|t| t.slice_count()).sum();
            if t.tracks.len() != c.tracks.len() || slices != compact_slices || t.flows.len() != c.flows.len() {
                return Err(format!("{case}: read_chrome and CompactTrace::read disagree"));
            }
            if s.pes.len() > t.tracks.len() {
                return Err(format!("{case}: the summary has more PEs than the trace has tracks"));
            }
            tally.accepted += 1;
        }
        (a, b, c) => {
            return Err(format!(
                "{case}: the readers disagree: read_chrome {:?}, CompactTrace::read {:?}, summarize_file {:?}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string()),
                c.err().map(|e| e.to_string())
            ))
        }
    }
    Ok(())
}

/// Runs every mutant of `file` through the readers and a sample through the binary.
fn mutate_file(dir: &Path, file: &Path, json: bool, seed: u64) -> Tally {
    let bytes = std::fs::read(file).unwrap();
    let ext = if json { "json" } else { "perfetto-trace" };
    let path = dir.join(format!("mutant.{ext}"));
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let all = mutants(&bytes, json, 150, seed);
    for (i, m) in all.iter().enumerate() {
        if m.bytes == bytes {
            tally.same += 1;
            continue;
        }
        let before = tally.refused;
        if let Err(f) = read_one(&path, m, &mut tally) {
            failures.push(f);
            continue;
        }
        // A cut that drops anything but trailing white space leaves no whole JSON text.
        let cut_json =
            json && m.kind == Kind::Cut && bytes[m.at..].iter().any(|b| !b.is_ascii_whitespace());
        if cut_json && tally.refused == before {
            failures.push(format!("a cut at byte {} was accepted", m.at));
        }
        if i % 40 == 0 {
            if let Err(f) = run_binary(&path) {
                failures.push(format!("{:?} at byte {}: {f}", m.kind, m.at));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} mutants failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    assert!(
        tally.refused > all.len() / 2,
        "{tally:?}: most mutants must be refused"
    );
    tally
}

/// `chorus-trace check` on a mutant exits 0 or 1, naming the file when it fails.
fn run_binary(path: &Path) -> Result<(), String> {
    let o = Command::new(env!("CARGO_BIN_EXE_chorus-trace"))
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        Some(0) => Ok(()),
        Some(1) if err.contains("chorus-trace: error:") && err.contains("mutant.") => Ok(()),
        code => Err(format!("chorus-trace check exited {code:?}: {err}")),
    }
}

#[test]
fn mutated_traces_are_refused_naming_the_file_or_read_alike_by_every_reader() {
    let dir = scratch("mutations");
    let s = scenario(4, 60, 5);
    let json = dir.join("t.json");
    record(&s, TraceConfig::new(&json))
        .write(&s.names, &json)
        .unwrap();
    let pf = dir.join("t.perfetto-trace");
    record(&s, TraceConfig::new(&pf))
        .write(&s.names, &pf)
        .unwrap();
    let j = mutate_file(&dir, &json, true, 17);
    let p = mutate_file(&dir, &pf, false, 23);
    // The case counts the README's Reliability table quotes.
    eprintln!("json {j:?}, protobuf {p:?}");
}
