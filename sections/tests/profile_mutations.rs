//! Mutated tuning profiles (the chorus-tune profile reader, `Profile::load`) never
//! panic: each is refused with an error naming the file and what is wrong, or read
//! into a profile that writes back to the same profile. Fixed-seed mutations: byte
//! flips, cuts at every k-th offset, lines' chunks doubled or removed, huge numbers,
//! values of the wrong type.

use std::panic::{catch_unwind, AssertUnwindSafe};

use chorus_sections::tune::{Collective, Impl, MockUp, Profile};
use chorus_traces::mutate::{digit_runs, replace_spans, structural, Kind, Mutant, Rng};

fn base() -> Profile {
    let mut p = Profile::new();
    for (c, size) in [
        (Collective::Allgather, 8),
        (Collective::Allgather, 1024),
        (Collective::Scan, 16),
    ] {
        let m = match c {
            Collective::Scan => Impl::MockUp(MockUp::ExscanReduceLocal),
            _ => Impl::parse(c, "bruck/1").expect("an allgather mock-up"),
        };
        p.set(c, size, &[(8, m), (512, Impl::Default), (65_536, m)]);
    }
    p.set(
        Collective::Reduce,
        8,
        &[(8, Impl::MockUp(MockUp::ReduceAsAllreduce))],
    );
    p
}

fn mutants(file: &[u8], per_kind: usize) -> Vec<Mutant> {
    let mut rng = Rng::new(0x005e_ed0f_7e11);
    let mut out = structural(file, per_kind, 40, &mut rng);
    let spots = digit_runs(file);
    let huge: [&[u8]; 4] = [
        b"18446744073709551616",
        b"4294967296",
        b"18446744073709551615",
        b"99999999999999999999999999",
    ];
    let wrong: [&[u8]; 6] = [b"x", b"-1", b"1.5", b"", b"0x10", b"\xff"];
    out.extend(replace_spans(
        file,
        &spots,
        &huge,
        (Kind::Huge, per_kind),
        &mut rng,
    ));
    out.extend(replace_spans(
        file,
        &spots,
        &wrong,
        (Kind::WrongType, per_kind),
        &mut rng,
    ));
    out
}

#[test]
fn mutated_profiles_are_refused_naming_the_file_or_read_back_whole() {
    let dir = std::env::temp_dir().join(format!("chorus-profile-mut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tuned.profile");
    let text = base().to_text();
    let all = mutants(text.as_bytes(), 150);
    let (mut refused, mut accepted) = (0, 0);
    let mut failures = Vec::new();
    for (i, m) in all.iter().enumerate() {
        std::fs::write(&path, &m.bytes).unwrap();
        let case = format!(
            "mutant {i} ({:?} at {}): {:?}",
            m.kind,
            m.at,
            String::from_utf8_lossy(&m.bytes)
        );
        match catch_unwind(AssertUnwindSafe(|| Profile::load(&path))) {
            Err(_) => failures.push(format!("{case}: panicked")),
            Ok(Err(e)) => {
                let e = e.to_string();
                if !e.contains("tuned.profile") || !e.contains(": ") {
                    failures.push(format!("{case}: the error does not name the file: {e}"));
                }
                refused += 1;
            }
            Ok(Ok(p)) => {
                // Accepted: it must be a profile in its own right, written back alike.
                if Profile::parse(&p.to_text()).ok().as_ref() != Some(&p) {
                    failures.push(format!("{case}: read, but does not write back alike"));
                }
                accepted += 1;
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    assert!(refused > accepted, "{refused} refused, {accepted} accepted");
    eprintln!(
        "{} profile mutants: {refused} refused, {accepted} accepted",
        all.len()
    );
}
