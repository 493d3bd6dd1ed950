//! The radix sort app end to end: sorts (checked globally) on the threads and sim
//! layers for 1..17 PEs, sampled keys per PE from 0 to 10^4, every allgather algorithm
//! and port count, u32 and u64 keys, overlapped and blocking; sim runs repeat exactly
//! by seed; overlapping hides the allgather on sim when there is work to hide it behind.

use chorus_apps::radix::{self, Key, RadixParams, SortReport};
use chorus_core::{Config, Layer, SimPreset};
use chorus_sections::collectives::Allgather;

const ALGORITHMS: [Allgather; 8] = [
    Allgather::Bruck(1),
    Allgather::Bruck(2),
    Allgather::Bruck(3),
    Allgather::StandardExchange(1),
    Allgather::StandardExchange(2),
    Allgather::StandardExchange(3),
    Allgather::Ring,
    Allgather::Auto,
];

fn config(layer: Layer, pes: u32, seed: u64) -> Config {
    Config {
        pes,
        layer,
        seed,
        ..Config::default()
    }
}

fn params(keys_per_pe: usize, allgather: Allgather, blocking: bool) -> RadixParams {
    RadixParams {
        radix_bits: 8,
        keys_per_pe,
        chunk_keys: 256,
        key_ns: 0.0,
        allgather,
        blocking,
    }
}

fn sort<K: Key>(cfg: &Config, p: RadixParams) -> SortReport {
    let r = radix::run::<K>(cfg, p)
        .unwrap_or_else(|e| panic!("{} PEs, {p:?} on {:?}: {e}", cfg.pes, cfg.layer));
    assert!(
        r.sorted,
        "{} PEs, {p:?} on {:?}: not sorted",
        cfg.pes, cfg.layer
    );
    assert_eq!(r.pes, cfg.pes);
    assert_eq!(r.keys, u64::from(cfg.pes) * p.keys_per_pe as u64);
    r
}

/// p = 1..17 on both layers; per p one sampled size, algorithm, key type, digit
/// width, chunk size and mode, so that together they cover every choice.
#[test]
fn sorts_on_1_to_17_pes_on_threads_and_sim() {
    let sizes = [0usize, 1, 2, 17, 100, 1000, 3001, 10_000];
    let bits = [8u32, 3, 11, 1, 16, 5];
    let chunks = [1usize, 7, 256, 5000];
    for layer in [Layer::Threads, Layer::Sim] {
        for pes in 1..=17u32 {
            let i = pes as usize + usize::from(layer == Layer::Sim);
            let mut p = params(
                sizes[i % sizes.len()],
                ALGORITHMS[i % ALGORITHMS.len()],
                i.is_multiple_of(3),
            );
            p.radix_bits = bits[i % bits.len()];
            p.chunk_keys = chunks[i % chunks.len()];
            // Few keys and many rounds (1-bit u64 digits) stay quick.
            if p.radix_bits == 1 {
                p.keys_per_pe = p.keys_per_pe.min(100);
            }
            let cfg = config(layer, pes, 40 + u64::from(pes));
            if i.is_multiple_of(2) {
                sort::<u32>(&cfg, p);
            } else {
                sort::<u64>(&cfg, p);
            }
        }
    }
}

/// Every algorithm and port count, both key types, overlapped and blocking, on a
/// prime and a composite PE count.
#[test]
fn every_allgather_sorts_both_ways() {
    for (layer, pes) in [(Layer::Sim, 13), (Layer::Threads, 6)] {
        for (j, &a) in ALGORITHMS.iter().enumerate() {
            for blocking in [false, true] {
                let cfg = config(layer, pes, j as u64);
                let p = params(500 + 37 * j, a, blocking);
                sort::<u32>(&cfg, p);
                sort::<u64>(
                    &cfg,
                    RadixParams {
                        radix_bits: 13,
                        ..p
                    },
                );
            }
        }
    }
}

#[test]
fn ten_thousand_keys_per_pe_on_17_pes() {
    for layer in [Layer::Threads, Layer::Sim] {
        let cfg = config(layer, 17, 3);
        sort::<u64>(&cfg, params(10_000, Allgather::Bruck(2), false));
    }
}

#[test]
fn sim_runs_repeat_exactly_by_seed() {
    let p = RadixParams {
        key_ns: 5.0,
        ..params(2000, Allgather::Bruck(2), false)
    };
    let a = sort::<u32>(&config(Layer::Sim, 11, 9), p);
    let b = sort::<u32>(&config(Layer::Sim, 11, 9), p);
    // Everything but the simulator's wall-clock rate repeats.
    let repeatable = |r: &SortReport| {
        let sim = r.sim.as_ref().map(|s| (s.makespan_us, s.digest, s.events));
        (
            SortReport {
                sim: None,
                ..r.clone()
            },
            sim,
        )
    };
    assert!(a.sim.is_some());
    assert_eq!(
        repeatable(&a),
        repeatable(&b),
        "same seed, same virtual times"
    );
    let c = sort::<u32>(&config(Layer::Sim, 11, 10), p);
    assert_ne!(a.time_s, c.time_s, "another seed, other keys, other times");
}

/// With local work longer than the allgather (Blue Gene/P-like network, 200 ns per
/// key), overlapping hides most of the allgather, and the overlapped sort beats the
/// baseline in virtual time; the times it is computed from are consistent.
#[test]
fn overlap_hides_the_allgather_on_sim() {
    let mut cfg = config(Layer::Sim, 16, 1);
    cfg.sim.preset = Some(SimPreset::Bgp);
    for a in [Allgather::Bruck(1), Allgather::StandardExchange(1)] {
        let p = RadixParams {
            key_ns: 200.0,
            ..params(4000, a, false)
        };
        let c = radix::compare::<u32>(&cfg, p).expect("both runs");
        assert!(c.sorted());
        let (b, o) = (&c.blocking.times, &c.overlapped.times);
        assert!(
            b.comp_s > b.comm_s,
            "{a:?}: the work is longer than the allgather"
        );
        let overlap = c.overlap.expect("the allgather takes time");
        assert!(
            overlap > 0.5,
            "{a:?}: overlap {overlap} (times {b:?} / {o:?})"
        );
        assert!(
            c.overlapped.time_s < c.blocking.time_s,
            "{a:?}: overlapped {} s, blocking {} s",
            c.overlapped.time_s,
            c.blocking.time_s
        );
        // In the baseline the phases follow each other.
        assert!((b.overlapped_s - (b.comm_s + b.comp_s)).abs() < 1e-6);
    }
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let cfg = config(Layer::Sim, 2, 1);
    for p in [
        RadixParams {
            radix_bits: 0,
            ..params(10, Allgather::Ring, false)
        },
        RadixParams {
            radix_bits: 17,
            ..params(10, Allgather::Ring, false)
        },
        RadixParams {
            chunk_keys: 0,
            ..params(10, Allgather::Ring, false)
        },
        RadixParams {
            key_ns: -1.0,
            ..params(10, Allgather::Ring, false)
        },
        params(10, Allgather::Bruck(0), false),
    ] {
        let e = radix::run::<u32>(&cfg, p).expect_err("invalid");
        assert!(!e.to_string().is_empty());
    }
}

/// The binary prints one JSON object with the figures the issue asks for, per
/// algorithm when several run, and fails clearly on bad input.
#[test]
fn the_binary_reports_one_json_object() {
    let bin = env!("CARGO_BIN_EXE_radix");
    let out = std::process::Command::new(bin)
        .args(["--layer", "sim", "--pes", "5", "--keys-per-pe", "300"])
        .args([
            "--allgather",
            "all",
            "--ports",
            "2",
            "--key",
            "u64",
            "--json",
        ])
        .output()
        .expect("run radix");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(v["sorted"], true);
    assert_eq!(v["pes"], 5);
    assert_eq!(v["keys"], 1500);
    assert_eq!(v["rounds"], 8);
    for field in [
        "time_s",
        "blocking_time_s",
        "overlap",
        "t_comm_s",
        "t_comp_s",
    ] {
        assert!(v[field].is_number(), "{field} in {v}");
    }
    let names: Vec<&str> = v["algorithms"]
        .as_array()
        .expect("per-algorithm figures")
        .iter()
        .map(|a| a["allgather"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["bruck/2", "standard-exchange/2", "ring"]);

    let only = std::process::Command::new(bin)
        .args(["--layer", "sim", "--pes", "3", "--blocking", "--json"])
        .output()
        .expect("run radix");
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&only.stdout).trim()).expect("JSON");
    assert_eq!(
        (v["sorted"].clone(), v["blocking"].clone()),
        (true.into(), true.into())
    );
    assert!(v.get("overlap").is_none(), "one run gives no overlap: {v}");

    let bad = std::process::Command::new(bin)
        .args(["--layer", "sim", "--allgather", "nope"])
        .output()
        .expect("run radix");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--allgather"));
}
