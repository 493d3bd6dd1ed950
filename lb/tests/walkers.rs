//! The MCMC kernel under every strategy on the sim layer: every item of every chain
//! runs exactly once and the PEs' work adds up to the chains' (the driver checks both
//! and fails the run otherwise), under random workloads and under seeded network
//! jitter that reorders merge requests; plus the paper's ordering of the strategies.

use chorus_core::{Config, ErrorPolicy, Layer, SimPreset, SimStats};
use chorus_lb::{run_spec, LbError, McmcParams, McmcReport, StrategySpec, Workload};
use std::time::Duration;

fn sim(pes: u32, seed: u64, jitter_us: Option<f64>) -> Config {
    let mut c = Config {
        layer: Layer::Sim,
        seed,
        on_error: ErrorPolicy::Abort,
        ..Config::with_pes(pes)
    };
    c.sim.preset = Some(SimPreset::Bgp);
    c.sim.jitter_us = jitter_us;
    c
}

fn params(group_size: u32, item_ms: u64, workload: Workload) -> McmcParams {
    McmcParams {
        group_size,
        item: Duration::from_millis(item_ms),
        workload,
    }
}

fn run_all(config: &Config, p: McmcParams) -> Vec<McmcReport> {
    StrategySpec::ALL
        .iter()
        .map(|&s| {
            run_spec(config, p, s).unwrap_or_else(|e| panic!("{} on {config:?}: {e}", s.name()))
        })
        .collect()
}

/// The slowest initial group's chain (items times T / its size): what `none` takes,
/// to within messaging.
fn longest_chain_s(config: &Config, p: McmcParams) -> f64 {
    let chains = p.workload.chains(config.pes, p.group_size);
    let t = p.item.as_secs_f64();
    (0u32..)
        .zip(chains)
        .map(|(c, s)| {
            let size = p.group_size.min(config.pes - c * p.group_size);
            s as f64 * t / f64::from(size)
        })
        .fold(0.0, f64::max)
}

fn check_bounds(config: &Config, p: McmcParams, reports: &[McmcReport]) {
    let longest = longest_chain_s(config, p);
    for r in reports {
        assert!(
            r.makespan_s >= r.ideal_s * (1.0 - 1e-9),
            "{}: makespan {} below the ideal {}",
            r.name,
            r.makespan_s,
            r.ideal_s
        );
        // Collective exchanges hold every group to the slowest one's step, so
        // only strategies without them are bounded by the longest chain.
        if r.name == "none" || r.name == "async" {
            assert!(
                r.makespan_s <= longest * 1.05 + 0.01,
                "{}: makespan {} beyond the longest chain {longest}",
                r.name,
                r.makespan_s
            );
        }
    }
    let none = &reports[0];
    assert_eq!(none.name, "none");
    assert!(none.makespan_s >= longest, "{none:?} vs {longest}");
    assert_eq!((none.regroups.min, none.regroups.max), (0, 0));
}

#[test]
fn every_strategy_walks_every_chain_once_on_the_cyclic_workload() {
    for pes in [4, 13, 32] {
        let c = sim(pes, 1, None);
        let p = params(4, 10, Workload::Cyclic);
        check_bounds(&c, p, &run_all(&c, p));
    }
}

#[test]
fn every_strategy_walks_every_chain_once_on_random_workloads() {
    for (pes, g, seed) in [(12, 3, 7), (20, 4, 11), (17, 2, 23), (9, 9, 5)] {
        let c = sim(pes, seed, None);
        let p = params(g, 5, Workload::Random { seed });
        check_bounds(&c, p, &run_all(&c, p));
    }
}

#[test]
fn async_merges_stay_correct_when_jitter_reorders_requests() {
    // Jitter far above an item's share makes requests overtake each other, reach
    // groups that already merged elsewhere, and arrive in bursts.
    for seed in 1..=12u64 {
        let c = sim(24, seed, Some(4_000.0));
        let p = params(2, 2, Workload::Random { seed });
        let r = run_spec(&c, p, StrategySpec::Async)
            .unwrap_or_else(|e| panic!("seed {seed}: async failed: {e}"));
        assert!(r.makespan_s >= r.ideal_s, "seed {seed}: {r:?}");
        assert!(r.regroups.max >= 1, "seed {seed}: nothing merged: {r:?}");
    }
}

/// Members of a group see its last step's result at different times; the group that
/// takes the finished group in may tell a slow member before that member has seen
/// its chain end. Larger groups and jitter make that happen.
#[test]
fn a_member_taken_in_before_it_sees_its_chain_end_joins_after_it() {
    for seed in 1..=12u64 {
        for group_size in [3, 4] {
            let c = sim(16, seed, Some(2_000.0));
            let p = params(group_size, 2, Workload::Random { seed });
            let r = run_spec(&c, p, StrategySpec::Async)
                .unwrap_or_else(|e| panic!("seed {seed}, groups of {group_size}: {e}"));
            assert!(
                r.makespan_s >= r.ideal_s * (1.0 - 1e-9),
                "seed {seed}: {r:?}"
            );
        }
    }
}

#[test]
fn runs_replay_exactly_for_a_seed() {
    let c = sim(16, 3, Some(500.0));
    let p = params(4, 5, Workload::Random { seed: 3 });
    // The simulator's wall-clock figures differ between runs; the rest must not.
    let virtual_only = |r: McmcReport| McmcReport {
        sim: r.sim.map(|s| SimStats {
            events_per_s: 0.0,
            events_s: 0.0,
            wall_s: 0.0,
            ..s
        }),
        ..r
    };
    let a = virtual_only(run_spec(&c, p, StrategySpec::Async).expect("runs"));
    let b = virtual_only(run_spec(&c, p, StrategySpec::Async).expect("runs"));
    assert!(a.sim.as_ref().is_some_and(|s| s.events > 0), "{a:?}");
    assert_eq!(a, b);
}

#[test]
fn async_beats_none_and_every_collective_as_in_the_paper() {
    // The paper's setting (bgp, G = 4, T = 100 ms, cyclic) at 32 PEs.
    let c = sim(32, 1, None);
    let p = params(4, 100, Workload::Cyclic);
    let r = run_all(&c, p);
    let none = r[0].makespan_s;
    let best_collective = r[1..4]
        .iter()
        .map(|x| x.makespan_s)
        .fold(f64::INFINITY, f64::min);
    let async_ = &r[4];
    assert_eq!(async_.name, "async");
    assert!((none - 7.0).abs() < 0.05, "none {none} s, the paper's 7 s");
    assert!(
        (async_.ideal_s - 3.5).abs() < 1e-9,
        "ideal {}",
        async_.ideal_s
    );
    assert!(async_.makespan_s <= 0.6 * none, "{async_:?} vs none {none}");
    assert!(
        async_.makespan_s <= 0.7 * best_collective,
        "{async_:?} vs best collective {best_collective}"
    );
    assert!(
        async_.makespan_s <= 1.05 * async_.ideal_s,
        "{async_:?}: more than 5% above the ideal"
    );
}

#[test]
fn bad_parameters_are_named() {
    let c = sim(8, 1, None);
    let e =
        run_spec(&c, params(0, 1, Workload::Cyclic), StrategySpec::None).expect_err("group size 0");
    assert!(matches!(e, LbError::Params(_)), "{e}");
    assert!(e.to_string().contains("--group-size"), "{e}");
    let e = run_spec(&c, params(9, 1, Workload::Cyclic), StrategySpec::Async)
        .expect_err("group larger than the machine");
    assert!(e.to_string().contains("larger than --pes 8"), "{e}");
}

/// The kill matrix of the MCMC demo on 64 sim PEs (`--on-error drop`): 1 PE and 10%
/// of the PEs (6, among them a whole initial group) killed at various virtual times,
/// under async merge and collective regrouping: every chain ends once, each of its
/// items committed exactly once (the driver checks each end's count, index sum and
/// step ledger, or the run is an error), and the job exits.
#[test]
fn every_chain_finishes_with_each_item_once_when_pes_are_killed_on_sim() {
    use chorus_core::KillSpec;
    let p = McmcParams {
        group_size: 4,
        item: Duration::from_millis(10),
        workload: Workload::Cyclic,
    };
    let ms = |pe, at: f64| KillSpec {
        pe,
        at_ns: (at * 1e6) as u64,
    };
    let one = vec![ms(13, 52.0)];
    // PEs 20..=23 are one initial group: its chain's holders all die at once.
    let tenth = vec![
        ms(5, 7.3),
        ms(20, 31.0),
        ms(21, 31.0),
        ms(22, 31.0),
        ms(23, 31.0),
        ms(47, 120.5),
    ];
    let chains = 16;
    let items: u64 = Workload::Cyclic.chains(64, 4).iter().sum();
    for kills in [one, tenth] {
        for spec in [StrategySpec::Async, StrategySpec::Collective(1)] {
            let mut config = sim(64, 1, None);
            config.on_error = ErrorPolicy::Drop;
            config.sim.kill = kills.clone();
            let r = run_spec(&config, p, spec)
                .unwrap_or_else(|e| panic!("{} with {} kills: {e}", spec.name(), kills.len()));
            let l = r.ledger;
            assert_eq!(l.chains, chains);
            assert_eq!(l.finished, chains, "{}", spec.name());
            assert_eq!(l.items, items, "{}", spec.name());
            assert_eq!(l.pes_failed, kills.len() as u64);
            assert!(l.recoveries >= 1, "{l:?}");
            eprintln!(
                "{} {} kills: {l:?}, makespan {:.3} s",
                spec.name(),
                kills.len(),
                r.makespan_s
            );
        }
    }
}
