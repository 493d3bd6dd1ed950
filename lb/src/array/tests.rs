//! The array strategies: every decision valid on any input, and each strategy's
//! quality on fixed seeds.

use super::workload::{loads_after, skewed, Topology};
use super::*;
use chorus_core::api::balance::{check_decision, max_over_avg, CommEdge, LoadStats, ObjLoad};
use chorus_core::ids::IndexKey;
use chorus_core::{ArrayStrategy, NetworkModel, Registry, SimPreset};
use proptest::prelude::*;

/// Small groups, so a few dozen PEs already make a tree of several levels.
fn small_tree() -> StrategyParams {
    StrategyParams {
        group_size: 4,
        branching: 2,
        ..StrategyParams::default()
    }
}

fn all(params: &StrategyParams) -> Vec<Box<dyn Planner>> {
    NAMES.iter().map(|n| build(n, params).unwrap()).collect()
}

fn arb_stats() -> impl Strategy<Value = LoadStats> {
    (0usize..24, 0usize..80).prop_flat_map(|(pes, n)| {
        let home = if pes == 0 { 0..1u32 } else { 0..pes as u32 };
        let obj = (home, prop_oneof![Just(0.0), 0.0f64..10.0, 0.0f64..1e-6]);
        let edge = (0..n.max(1) as u32, 0..n.max(1) as u32, 0u64..4, 0u64..5000);
        (
            Just(pes),
            proptest::collection::vec(obj, n),
            proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..5.0], pes),
            proptest::collection::vec(edge, 0..(2 * n + 1)),
        )
            .prop_map(move |(num_pes, objs, background, edges)| LoadStats {
                num_pes,
                objs: objs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (pe, load))| ObjLoad {
                        key: IndexKey::new(&(i as u32).to_be_bytes()),
                        pe,
                        load,
                    })
                    .collect(),
                background,
                comm: edges
                    .into_iter()
                    .filter(|e| (e.0 as usize) < n && (e.1 as usize) < n)
                    .map(|(from, to, messages, bytes)| CommEdge {
                        from,
                        to,
                        messages,
                        bytes,
                    })
                    .collect(),
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_decision_is_valid_and_keeps_every_element(stats in arb_stats()) {
        let total: f64 = stats.pe_loads().iter().sum();
        for params in [StrategyParams::default(), small_tree()] {
            for s in all(&params) {
                let moves = s.decide(&stats);
                let kept = check_decision(&stats, moves.clone());
                prop_assert!(kept.is_ok(), "{}: {:?}", s.name(), kept);
                // No move is dropped as a no-op: a strategy names only real moves.
                prop_assert_eq!(kept.unwrap().len(), moves.len(), "{}", s.name());
                let after: f64 = loads_after(&stats, &moves).iter().sum();
                prop_assert!((after - total).abs() <= 1e-9 * total.max(1.0), "{} lost load", s.name());
                // The strategies that only move load off PEs above the threshold to PEs
                // that stay under it never raise the maximum.
                if ["refine", "distributed"].contains(&s.name()) {
                    let before = stats.pe_loads().iter().copied().fold(0.0, f64::max);
                    let max = loads_after(&stats, &moves).iter().copied().fold(0.0, f64::max);
                    prop_assert!(max <= before + 1e-9, "{} raised the max {} -> {}", s.name(), before, max);
                }
            }
        }
    }
}

fn quality(name: &str, params: &StrategyParams, stats: &LoadStats) -> (f64, usize) {
    let s = build(name, params).unwrap();
    let moves = check_decision(stats, s.decide(stats)).unwrap();
    (max_over_avg(&loads_after(stats, &moves)), moves.len())
}

#[test]
fn each_strategy_balances_64_pes_of_64_elements_with_10_to_1_skew() {
    let stats = skewed(64, 64 * 64, 10.0, 7, Topology::Mesh);
    assert!(stats.max_over_avg() > 1.5, "the input is imbalanced");
    let limits = [
        ("greedy", 1.05),
        ("refine", 1.10),
        ("comm", 1.10),
        ("hierarchical", 1.10),
        ("distributed", 1.10),
    ];
    for params in [StrategyParams::default(), small_tree()] {
        for (name, limit) in limits {
            let (ratio, _) = quality(name, &params, &stats);
            assert!(
                ratio <= limit,
                "{name} with {params:?}: max/avg {ratio:.4} > {limit}"
            );
        }
    }
}

#[test]
fn refine_migrates_at_most_a_quarter_of_what_greedy_does_on_mild_imbalance() {
    let stats = skewed(64, 64 * 64, 1.5, 11, Topology::None);
    let (_, greedy) = quality("greedy", &StrategyParams::default(), &stats);
    let (ratio, refine) = quality("refine", &StrategyParams::default(), &stats);
    assert!(ratio <= 1.10, "refine's max/avg {ratio}");
    assert!(refine > 0, "the input needs some moves");
    assert!(4 * refine <= greedy, "refine {refine} vs greedy {greedy}");
}

#[test]
fn comm_cuts_less_traffic_than_greedy_at_the_same_balance() {
    for topology in [Topology::Ring, Topology::Mesh] {
        let stats = skewed(16, 16 * 32, 10.0, 3, topology);
        let params = StrategyParams::default();
        let greedy = build("greedy", &params).unwrap().decide(&stats);
        let comm = build("comm", &params).unwrap().decide(&stats);
        let (g_cut, c_cut) = (edge_cut(&stats, &greedy), edge_cut(&stats, &comm));
        let c_ratio = max_over_avg(&loads_after(&stats, &comm));
        assert!(
            c_ratio <= 1.0 + params.tolerance + 1e-9,
            "{topology:?}: comm max/avg {c_ratio}"
        );
        assert!(
            2.0 * c_cut < g_cut,
            "{topology:?}: comm cut {c_cut} vs greedy {g_cut}"
        );
    }
}

#[test]
fn the_tree_and_the_gossip_decide_faster_than_one_pe_on_the_critical_path() {
    let stats = skewed(1024, 8 * 1024, 10.0, 5, Topology::None);
    let params = StrategyParams {
        group_size: 16,
        branching: 8,
        ..StrategyParams::default()
    };
    let greedy = build("greedy", &params).unwrap().plan(&stats).cost;
    for name in ["hierarchical", "distributed"] {
        let cost = build(name, &params).unwrap().plan(&stats).cost;
        assert!(
            cost.critical_ops * 10 < greedy.critical_ops,
            "{name}: {cost:?} vs {greedy:?}"
        );
        assert!(
            cost.critical_ops < cost.total_ops,
            "{name}: work is spread over PEs"
        );
        assert!(cost.rounds > 1, "{name}: {cost:?}");
    }
}

#[test]
fn distributed_repeats_for_a_seed_and_differs_for_another() {
    let stats = skewed(256, 2048, 10.0, 9, Topology::None);
    let d = Distributed::default();
    assert_eq!(d.plan(&stats), d.plan(&stats));
    let other = Distributed { seed: 1, ..d };
    assert_ne!(d.decide(&stats), other.decide(&stats));
}

#[test]
fn register_all_names_five_strategies_and_build_refuses_others() {
    let mut reg = Registry::new();
    register_all(&mut reg);
    assert_eq!(reg.balancer_names(), NAMES.map(String::from).to_vec());
    let e = build("diffusion", &StrategyParams::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("\"diffusion\""), "{e}");
    assert!(build("comm", &StrategyParams::default())
        .unwrap()
        .needs_comm());
    assert!(!build("refine", &StrategyParams::default())
        .unwrap()
        .needs_comm());
}

#[test]
fn a_small_scale_report_has_a_row_per_strategy() {
    let input = ScaleInput {
        pes: 256,
        objs: 2048,
        skew: 10.0,
        seed: 1,
        topology: Topology::Mesh,
    };
    let net = NetworkModel::preset(SimPreset::Bgp);
    let report = scale_report(&input, &NAMES, &small_tree(), &net).unwrap();
    assert_eq!(report.rows.len(), 5);
    assert!(report.before_max_over_avg > 1.5);
    for r in &report.rows {
        assert!(r.max_over_avg < report.before_max_over_avg, "{r:?}");
        assert!(r.modelled_s > 0.0 && r.cost.critical_hops > 0, "{r:?}");
    }
    let comm = report.row("comm").unwrap();
    assert!(comm.edge_cut < report.row("greedy").unwrap().edge_cut);
    assert!(report.to_string().lines().count() == 7);
}

/// The scale case, measured once in a release build:
/// `cargo test -p chorus-lb --release -- --ignored --nocapture at_131072_pes`.
#[test]
#[ignore = "a release-build measurement at 131,072 PEs; run by hand"]
fn at_131072_pes_and_a_million_elements() {
    let input = ScaleInput {
        pes: 131_072,
        objs: 1_000_000,
        skew: 10.0,
        seed: 2026,
        topology: Topology::Mesh,
    };
    let net = NetworkModel::preset(SimPreset::Bgp);
    let report = scale_report(&input, &NAMES, &StrategyParams::default(), &net).unwrap();
    println!("{report}");
    let greedy = report.row("greedy").unwrap();
    for name in ["hierarchical", "distributed"] {
        let r = report.row(name).unwrap();
        println!(
            "{name}: modelled decision {:.4}x greedy's, wall {:.3}x, max/avg {:.3}x",
            r.modelled_s / greedy.modelled_s,
            r.wall_s / greedy.wall_s,
            r.max_over_avg / greedy.max_over_avg
        );
        assert!(
            r.cost.critical_ops * 10 <= greedy.cost.critical_ops,
            "{r:?}"
        );
    }
}

/// Jacobi2D's shape in small: four heavy elements on one PE and four light ones on
/// each other PE, so no PE has room for a heavy element until light ones leave it.
/// Refinement alone stopped at max/avg 1.45; GreedyRefine from there reaches greedy's.
#[test]
fn refine_makes_room_for_coarse_elements() {
    let objs = (0..32u32)
        .map(|i| ObjLoad {
            key: IndexKey::new(&i.to_be_bytes()),
            pe: i / 4,
            load: if i < 4 { 4.0 } else { 1.0 },
        })
        .collect();
    let stats = LoadStats {
        num_pes: 8,
        objs,
        background: vec![0.0; 8],
        comm: Vec::new(),
    };
    let after = |moves: &[chorus_core::Move]| max_over_avg(&loads_after(&stats, moves));
    let greedy = after(&Greedy.decide(&stats));
    let refine = after(&Refine::default().decide(&stats));
    assert!(refine <= greedy * 1.05, "refine {refine}, greedy {greedy}");
}

/// Jacobi2D's hot spot before the first balancing step, in small: four PEs hold
/// four heavy elements each (4 units), every other PE four light ones (1 unit), so
/// a heavy element fits under the bar on no PE until light ones leave it. Gossip
/// and transfer alone stopped at max/avg 1.68 (two heavy elements on a PE); swaps
/// and the lowering phases reach greedy's 5 units against an average of 4.75.
#[test]
fn distributed_makes_room_for_coarse_elements() {
    let (pes, per_pe) = (64u32, 4u32);
    let objs = (0..pes * per_pe)
        .map(|i| ObjLoad {
            key: IndexKey::new(&i.to_be_bytes()),
            pe: i / per_pe,
            load: if i < 4 * per_pe { 4.0 } else { 1.0 },
        })
        .collect();
    let stats = LoadStats {
        num_pes: pes as usize,
        objs,
        background: vec![0.0; pes as usize],
        comm: Vec::new(),
    };
    let greedy = quality("greedy", &StrategyParams::default(), &stats).0;
    for params in [StrategyParams::default(), small_tree()] {
        let (ratio, _) = quality("distributed", &params, &stats);
        assert!(
            ratio <= greedy * 1.05,
            "distributed with {params:?}: max/avg {ratio:.4}, greedy {greedy:.4}"
        );
    }
}

/// The scale case's shape at 16,384 PEs (7.6 elements a PE, 10:1 skew): the first
/// gossip's views went stale as their PEs filled, leaving donors at max/avg 1.152
/// (1.133x greedy's) while thousands of PEs still had room; fresh gossips before
/// the next phases bring it within a tenth of greedy's.
#[test]
fn distributed_stays_within_a_tenth_of_greedy_as_views_go_stale() {
    let input = ScaleInput {
        pes: 16_384,
        objs: 125_000,
        skew: 10.0,
        seed: 2026,
        topology: Topology::Mesh,
    };
    let stats = super::scale::input_stats(&input);
    let after = |name: &str| {
        let s = super::catalog::build(name, &StrategyParams::default()).unwrap();
        max_over_avg(&loads_after(&stats, &s.decide(&stats)))
    };
    let (greedy, distributed) = (after("greedy"), after("distributed"));
    assert!(
        distributed <= greedy * 1.10,
        "distributed {distributed}, greedy {greedy}"
    );
}
