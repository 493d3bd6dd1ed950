//! chorus-tune's output: tables for people, or one JSON object.

use super::Outcome;
use chorus_sections::tune::detect::{Latency, Violation};
use chorus_sections::tune::{Collective, Impl};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn violation_json(v: &Violation) -> Value {
    json!({
        "collective": v.collective.name(),
        "mock_up": v.mock_up.name(),
        "guideline": v.mock_up.guideline(),
        "pes": v.pes,
        "bytes": v.bytes,
        "default_us": v.default_us,
        "mock_up_us": v.mock_up_us,
    })
}

fn find(check: &[Latency], c: Collective, choice: Option<Impl>, bytes: u64) -> Option<f64> {
    check
        .iter()
        .find(|l| l.collective == c && l.choice == choice && l.bytes == bytes)
        .map(|l| l.median_us)
}

/// (collective, bytes, default µs, tuned µs, the profile's choice) of the re-measurement.
fn tuned_rows(o: &Outcome, pes: u32) -> Vec<(Collective, u64, f64, f64, Impl)> {
    let keys: BTreeSet<(Collective, u64)> =
        o.check.iter().map(|l| (l.collective, l.bytes)).collect();
    keys.into_iter()
        .filter_map(|(c, b)| {
            let d = find(&o.check, c, Some(Impl::Default), b)?;
            let t = find(&o.check, c, None, b)?;
            Some((c, b, d, t, o.profile.choose(c, pes, b)))
        })
        .collect()
}

/// The outcome as one JSON object.
pub fn to_json(o: &Outcome, pes: u32, layer: &str) -> Value {
    json!({
        "layer": layer,
        "pes": pes,
        "violations": o.violations.iter().map(violation_json).collect::<Vec<_>>(),
        "profile": o.profile_path.display().to_string(),
        "tuned": tuned_rows(o, pes).iter().map(|(c, b, d, t, choice)| json!({
            "collective": c.name(),
            "bytes": b,
            "default_us": d,
            "tuned_us": t,
            "choice": choice.name(),
        })).collect::<Vec<_>>(),
        "remaining_violations": o.remaining.iter().map(violation_json).collect::<Vec<_>>(),
        "repaired_after_remeasuring": o.repaired_later.iter().map(violation_json).collect::<Vec<_>>(),
        "passes": o.passes,
    })
}

fn violation_table(title: &str, vs: &[Violation], base: &str) {
    println!("{title}");
    if vs.is_empty() {
        println!("  none");
        return;
    }
    println!(
        "  {:<10} {:<24} {:>5} {:>6} {:>9} {:>12} {:>12} {:>8}",
        "collective", "mock-up", "GL", "pes", "bytes", base, "mock-up us", "speedup"
    );
    for v in vs {
        println!(
            "  {:<10} {:<24} {:>5} {:>6} {:>9} {:>12.2} {:>12.2} {:>7.2}x",
            v.collective.name(),
            v.mock_up.name(),
            v.mock_up.guideline().unwrap_or("-"),
            v.pes,
            v.bytes,
            v.default_us,
            v.mock_up_us,
            v.default_us / v.mock_up_us
        );
    }
}

/// The outcome as tables.
pub fn print_tables(o: &Outcome, pes: u32, layer: &str, tuned_now: bool) {
    println!("chorus-tune: {pes} PEs on {layer}; a violation is a mock-up at least 10% faster");
    if tuned_now {
        violation_table(
            "Guideline violations of the defaults:",
            &o.violations,
            "default us",
        );
        if !o.repaired_later.is_empty() {
            violation_table(
                "Violations of the tuned runtime found by re-measuring, repaired by another pass:",
                &o.repaired_later,
                "tuned us",
            );
        }
        println!(
            "Profile written to {} ({} tuning pass(es))",
            o.profile_path.display(),
            o.passes
        );
    } else {
        println!("Profile read from {}", o.profile_path.display());
    }
    println!("Tuned runtime vs defaults (re-measured side by side):");
    println!(
        "  {:<10} {:>9} {:>12} {:>12} {:>8}  choice",
        "collective", "bytes", "default us", "tuned us", "speedup"
    );
    for (c, b, d, t, choice) in tuned_rows(o, pes) {
        println!(
            "  {:<10} {:>9} {:>12.2} {:>12.2} {:>7.2}x  {}",
            c.name(),
            b,
            d,
            t,
            d / t,
            choice.name()
        );
    }
    violation_table(
        "Guidelines still violated by more than 10% (mock-up vs tuned):",
        &o.remaining,
        "tuned us",
    );
}
