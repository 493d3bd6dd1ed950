//! Mutated tuning profiles (the chorus-tune profile reader, `Profile::load`) never
//! panic: each is refused with an error naming the file and what is wrong, or read
//! into a profile that writes back to the same profile. Fixed-seed mutations: byte
//! flips, cuts at every k-th offset, lines' chunks doubled or removed, huge numbers,
//! values of the wrong type.

use std::panic::{catch_unwind, AssertUnwindSafe};

use chorus_sections::tune::{Collective, Impl, MockUp, Profile};

/// xorshift64*: fixed-seed, so every run makes the same mutants.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

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

/// Byte ranges of the runs of ASCII digits in `text`.
fn numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let start = i;
            while i < text.len() && text[i].is_ascii_digit() {
                i += 1;
            }
            out.push((start, i));
        }
        i += 1;
    }
    out
}

fn mutants(file: &[u8], per_kind: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng(0x005e_ed0f_7e11);
    let n = file.len();
    let mut out = Vec::new();
    for _ in 0..per_kind {
        let mut b = file.to_vec();
        b[rng.below(n)] ^= 1 << rng.below(8);
        out.push(("flip", b));
    }
    for at in (0..n).step_by((n / per_kind).max(1)) {
        out.push(("cut", file[..at].to_vec()));
    }
    for _ in 0..per_kind {
        let at = rng.below(n);
        let end = (at + 1 + rng.below(40)).min(n);
        let mut doubled = file[..end].to_vec();
        doubled.extend_from_slice(&file[at..]);
        out.push(("double", doubled));
        let mut removed = file[..at].to_vec();
        removed.extend_from_slice(&file[end..]);
        out.push(("remove", removed));
    }
    let spots = numbers(file);
    let huge: [&[u8]; 4] = [
        b"18446744073709551616",
        b"4294967296",
        b"18446744073709551615",
        b"99999999999999999999999999",
    ];
    let wrong: [&[u8]; 6] = [b"x", b"-1", b"1.5", b"", b"0x10", b"\xff"];
    for (kind, values) in [("huge", &huge[..]), ("wrong type", &wrong[..])] {
        for _ in 0..per_kind {
            let (start, end) = spots[rng.below(spots.len())];
            let mut b = file[..start].to_vec();
            b.extend_from_slice(values[rng.below(values.len())]);
            b.extend_from_slice(&file[end..]);
            out.push((kind, b));
        }
    }
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
    for (i, (kind, bytes)) in all.iter().enumerate() {
        std::fs::write(&path, bytes).unwrap();
        let case = format!("mutant {i} ({kind}): {:?}", String::from_utf8_lossy(bytes));
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
