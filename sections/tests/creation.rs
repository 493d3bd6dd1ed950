//! Section creation on the runtime: every algorithm the builder runs makes a valid
//! section on the threads and sim layers, from the world and from sections, one at a
//! time and many at once, with figures that replay exactly on sim.

use chorus_core::{Config, Layer, Pe};
use chorus_sections::host::batch::{self, Outcome, Planned, PlannedMerge, PlannedParent, Step};
use chorus_sections::host::{available, Colouring, Membership};
use chorus_sections::protocol::Algorithm;
use chorus_sections::section::{check, Placement, SectionId};
use std::collections::BTreeSet;

fn config(layer: Layer, pes: u32) -> Config {
    Config {
        layer,
        ..Config::with_pes(pes)
    }
}

fn plan(creator: Pe, parent: PlannedParent, algorithm: Algorithm, k: u32, m: Membership) -> Step {
    Step::Create(Planned {
        creator,
        parent,
        algorithm,
        k,
        membership: m,
    })
}

fn token_of(id: SectionId) -> u64 {
    (u64::from(id.creator) << 32) | u64::from(id.counter)
}

/// Check every step of `stages` against what `out` holds: members exactly the
/// parent's PEs that joined (or the two merged sections' members), and a valid
/// section over them.
fn verify(npes: u32, stages: &[Vec<Step>], out: &Outcome) {
    let flat: Vec<&Step> = stages.iter().flatten().collect();
    assert_eq!(out.reports.len(), flat.len());
    let mut members_of: Vec<BTreeSet<Pe>> = Vec::new();
    for (i, (step, r)) in flat.iter().zip(&out.reports).enumerate() {
        assert_eq!(r.tag, i as u64);
        // (section of the report, its members, k) to check
        let mut made: Vec<(usize, BTreeSet<Pe>, u32)> = Vec::new();
        match step {
            Step::Create(p) => {
                assert_eq!(r.algorithm, Some(p.algorithm));
                let parent: BTreeSet<Pe> = match p.parent {
                    PlannedParent::World => (0..npes).collect(),
                    PlannedParent::Earlier(j) => members_of[j].clone(),
                };
                assert_eq!(r.parent_pes, parent.len() as u64, "step {i}");
                let colours = p.membership.sections();
                assert_eq!(r.sections.len(), colours as usize);
                for c in 0..colours {
                    let joined = parent
                        .iter()
                        .copied()
                        .filter(|&pe| p.membership.colour(pe) == Some(c))
                        .collect();
                    made.push((c as usize, joined, p.k));
                }
            }
            Step::Merge(m) => {
                assert_eq!(r.algorithm, None);
                let (a, b) = (&members_of[m.a], &members_of[m.b]);
                let joined: BTreeSet<Pe> = a.union(b).copied().collect();
                assert_eq!(r.parent_pes, joined.len() as u64, "step {i}");
                // A's members keep their ranks; B's follow.
                let old_a = out.reports[m.a].id;
                for (pe, s) in out.sections.iter().filter(|(_, s)| s.id == r.id) {
                    let old = out.sections.iter().find(|(q, o)| q == pe && o.id == old_a);
                    match old {
                        Some((_, old)) => assert_eq!(s.rank, old.rank, "PE {pe} keeps its rank"),
                        None => assert!(s.rank >= a.len() as u32, "PE {pe} follows A"),
                    }
                }
                made.push((0, joined, m.k));
            }
        }
        let mut all = BTreeSet::new();
        assert_eq!(r.sections[0], r.id);
        for (c, joined, k) in made {
            let id = r.sections[c];
            assert_eq!(id.count, joined.len() as u32, "step {i} colour {c}");
            let member: Vec<bool> = (0..npes).map(|pe| joined.contains(&pe)).collect();
            let mut placed: Vec<Option<Placement>> = vec![None; npes as usize];
            for (pe, s) in out.sections.iter().filter(|(_, s)| s.id == id) {
                assert!(placed[*pe as usize].is_none(), "PE {pe} placed twice");
                placed[*pe as usize] = Some(Placement {
                    token: token_of(id),
                    rank: s.rank,
                    size: s.size,
                    k: s.k,
                    parent: s.parent,
                    children: s.children.clone(),
                });
            }
            check(&member, &placed, token_of(id), k)
                .unwrap_or_else(|e| panic!("step {i} colour {c}: {e}"));
            all.extend(joined);
        }
        assert_eq!(r.members, all.len() as u64, "step {i}");
        if r.members > 1 {
            assert!(r.messages > 0 && r.bytes > 0, "step {i}: {r:?}");
            assert!(r.max_pe_state_bytes > 0, "step {i}: {r:?}");
        }
        let single = r.sections.len() == 1;
        members_of.push(if single { all } else { BTreeSet::new() });
    }
}

fn memberships() -> Vec<Membership> {
    vec![
        Membership::All,
        Membership::Random {
            fraction: 0.3,
            seed: 11,
        },
        Membership::Pes(vec![5]),
        Membership::Pes(vec![0, 2, 3, 7, 12]),
        Membership::Pes(vec![]),
    ]
}

#[test]
fn every_algorithm_makes_a_valid_section_on_threads_and_sim() {
    let npes = 13;
    for layer in [Layer::Threads, Layer::Sim] {
        for alg in available() {
            for k in [2, 3] {
                let stages: Vec<Vec<Step>> = memberships()
                    .into_iter()
                    .map(|m| vec![plan(1, PlannedParent::World, alg, k, m)])
                    .collect();
                let out = batch::run(config(layer, npes), stages.clone(), true)
                    .unwrap_or_else(|e| panic!("{layer:?} {alg:?} k={k}: {e}"));
                verify(npes, &stages, &out);
            }
        }
    }
}

#[test]
fn concurrent_creations_from_different_creators_and_parents() {
    let npes = 16;
    let algs = available();
    let alg = |i: usize| algs[i % algs.len()];
    let stage1 = vec![
        plan(0, PlannedParent::World, alg(0), 2, Membership::All),
        plan(
            3,
            PlannedParent::World,
            alg(1),
            3,
            Membership::Pes(vec![1, 3, 4, 9, 10, 15]),
        ),
        plan(
            3,
            PlannedParent::World,
            alg(2),
            4,
            Membership::Random {
                fraction: 0.5,
                seed: 3,
            },
        ),
        plan(
            9,
            PlannedParent::World,
            alg(3),
            2,
            Membership::Pes((0..16).step_by(2).collect()),
        ),
    ];
    // Nested and concurrent: from two different sections of stage 1 at once, created
    // by members of those sections.
    let stage2 = vec![
        plan(
            4,
            PlannedParent::Earlier(1),
            alg(4),
            2,
            Membership::Pes(vec![3, 4, 15]),
        ),
        plan(15, PlannedParent::Earlier(1), alg(5), 3, Membership::All),
        plan(
            6,
            PlannedParent::Earlier(3),
            alg(0),
            2,
            Membership::Random {
                fraction: 0.6,
                seed: 9,
            },
        ),
        plan(
            0,
            PlannedParent::Earlier(0),
            alg(1),
            3,
            Membership::Pes(vec![2, 5, 11]),
        ),
    ];
    let stages = vec![stage1, stage2];
    for layer in [Layer::Threads, Layer::Sim] {
        let out = batch::run(config(layer, npes), stages.clone(), true).unwrap();
        verify(npes, &stages, &out);
        let ids: BTreeSet<_> = out
            .reports
            .iter()
            .map(|r| (r.id.creator, r.id.counter))
            .collect();
        assert_eq!(ids.len(), out.reports.len(), "ids are unique: {ids:?}");
    }
}

#[test]
fn sim_figures_replay_exactly_for_a_seed() {
    let npes = 200;
    let stages: Vec<Vec<Step>> = available()
        .into_iter()
        .map(|alg| {
            vec![plan(
                0,
                PlannedParent::World,
                alg,
                3,
                Membership::Random {
                    fraction: 0.4,
                    seed: 5,
                },
            )]
        })
        .collect();
    let a = batch::run(config(Layer::Sim, npes), stages.clone(), false).unwrap();
    let b = batch::run(config(Layer::Sim, npes), stages.clone(), false).unwrap();
    assert_eq!(a.reports, b.reports);
    assert_eq!(
        a.run.sim.as_ref().map(|s| s.digest),
        b.run.sim.as_ref().map(|s| s.digest)
    );
    for r in &a.reports {
        // The start reaches PEs at different times, all before the last finish.
        assert!(
            r.join_spread_us > 0.0 && r.join_spread_us < r.time_us,
            "{r:?}"
        );
    }
}

#[test]
fn a_creator_outside_the_parent_section_is_an_error() {
    let stages = vec![
        vec![plan(
            0,
            PlannedParent::World,
            available()[0],
            2,
            Membership::Pes(vec![1, 2]),
        )],
        vec![plan(
            3,
            PlannedParent::Earlier(0),
            available()[0],
            2,
            Membership::All,
        )],
    ];
    let err = batch::run(config(Layer::Sim, 6), stages, false).unwrap_err();
    assert!(err.to_string().contains("not known"), "{err}");
}

#[test]
fn a_split_makes_one_valid_section_per_colour_in_one_pass() {
    let npes = 40;
    let random = Membership::Colours(Colouring::Random {
        colours: 4,
        none: 0.2,
        seed: 21,
    });
    let mut of: Vec<Option<u32>> = (0..npes).map(|pe| Some(pe % 3)).collect();
    of[7] = None;
    of[0] = None;
    let listed = Membership::Colours(Colouring::Listed { colours: 5, of });
    for layer in [Layer::Threads, Layer::Sim] {
        for alg in available() {
            let stages = vec![
                vec![plan(2, PlannedParent::World, alg, 3, random.clone())],
                vec![plan(5, PlannedParent::World, alg, 2, listed.clone())],
            ];
            let out = batch::run(config(layer, npes), stages.clone(), true)
                .unwrap_or_else(|e| panic!("{layer:?} {alg:?}: {e}"));
            verify(npes, &stages, &out);
            // Colour 4 of the listed split is empty.
            assert_eq!(out.reports[1].sections[4].count, 0);
        }
    }
    // One pass: the split sends fewer messages than its colours made one at a time.
    let alg = available()[0];
    let split = batch::run(
        config(Layer::Sim, npes),
        vec![vec![plan(0, PlannedParent::World, alg, 3, random.clone())]],
        false,
    )
    .unwrap();
    let singles: Vec<Vec<Step>> = (0..4)
        .map(|c| {
            let pes = (0..npes).filter(|&pe| random.colour(pe) == Some(c));
            let m = Membership::Pes(pes.collect());
            vec![plan(0, PlannedParent::World, alg, 3, m)]
        })
        .collect();
    let one_by_one = batch::run(config(Layer::Sim, npes), singles, false).unwrap();
    let each: u64 = one_by_one.reports.iter().map(|r| r.messages).sum();
    eprintln!(
        "split: {} messages; one at a time: {each}",
        split.reports[0].messages
    );
    assert!(
        split.reports[0].messages < each,
        "split {} messages, one at a time {each}",
        split.reports[0].messages
    );
}

#[test]
fn a_merge_involves_only_the_two_sections() {
    let npes = 30;
    let alg = available()[0];
    let a_pes: Vec<Pe> = (0..npes).filter(|p| p % 3 == 1).collect();
    let b_pes: Vec<Pe> = (0..npes).filter(|p| p % 5 == 2 && p % 3 != 1).collect();
    let made = vec![
        plan(
            0,
            PlannedParent::World,
            alg,
            3,
            Membership::Pes(a_pes.clone()),
        ),
        plan(
            0,
            PlannedParent::World,
            alg,
            2,
            Membership::Pes(b_pes.clone()),
        ),
    ];
    let merge = |k| -> Step {
        PlannedMerge {
            via: a_pes[3],
            a: 0,
            b: 1,
            b_contact: b_pes[2],
            k,
        }
        .into()
    };
    for layer in [Layer::Threads, Layer::Sim] {
        for k in [2, 4] {
            let stages = vec![made.clone(), vec![merge(k)]];
            let out = batch::run(config(layer, npes), stages.clone(), true)
                .unwrap_or_else(|e| panic!("{layer:?} k={k}: {e}"));
            verify(npes, &stages, &out);
        }
    }
    // On sim, PEs outside both sections process exactly what they did without the
    // merge: the rest of the machine never hears of it (PE 0 excepted: it drives
    // the plan and receives the report).
    let without = batch::run(config(Layer::Sim, npes), vec![made.clone()], false).unwrap();
    let with = batch::run(config(Layer::Sim, npes), vec![made, vec![merge(3)]], false).unwrap();
    let mut outside = 0;
    for pe in 0..npes {
        if pe == 0 || a_pes.contains(&pe) || b_pes.contains(&pe) {
            continue;
        }
        outside += 1;
        let (x, y) = (
            &without.run.per_pe[pe as usize],
            &with.run.per_pe[pe as usize],
        );
        assert_eq!(x.processed, y.processed, "PE {pe} took part in the merge");
    }
    assert!(outside > 10);
    let r = &with.reports[2];
    assert_eq!(r.members, (a_pes.len() + b_pes.len()) as u64);
    assert!(r.messages > 0);
}

#[test]
fn survivors_rebuild_a_section_without_a_killed_pe_on_sim() {
    use chorus_core::KillSpec;
    let npes = 40;
    let alg = available()[0];
    let m = Membership::Random {
        fraction: 0.6,
        seed: 4,
    };
    let stages = vec![vec![plan(0, PlannedParent::World, alg, 2, m.clone())]];
    let before = batch::run(config(Layer::Sim, npes), stages.clone(), true).unwrap();
    let made = before.reports[0].id;
    let ranks: Vec<(Pe, u32)> = before
        .sections
        .iter()
        .filter(|(_, s)| s.id == made)
        .map(|(pe, s)| (*pe, s.rank))
        .collect();
    let pe_of = |rank: u32| ranks.iter().find(|x| x.1 == rank).unwrap().0;
    let size = ranks.len() as u32;
    assert!(size > 15);
    // The root, an inner rank, a leaf.
    for dead_rank in [0, 2, size - 1] {
        let dead = pe_of(dead_rank);
        let mut cfg = config(Layer::Sim, npes);
        cfg.sim.kill = vec![KillSpec {
            pe: dead,
            at_ns: 1_000_000,
        }];
        let out = batch::run_with_failures(cfg, stages.clone(), true, 1)
            .unwrap_or_else(|e| panic!("dead rank {dead_rank}: {e}"));
        assert_eq!(out.reports[0].id, made, "the first creation is the same");
        let r = &out.rebuilt[0];
        assert_eq!(r.tag, 0);
        assert_eq!(r.members, u64::from(size - 1));
        assert_eq!(r.parent_pes, u64::from(size - 1));
        assert!(r.messages > 0 && r.max_pe_state_bytes > 0, "{r:?}");
        let member: Vec<bool> = (0..npes)
            .map(|pe| pe != dead && ranks.iter().any(|x| x.0 == pe))
            .collect();
        let mut placed: Vec<Option<Placement>> = vec![None; npes as usize];
        for (pe, s) in out.sections.iter().filter(|(_, s)| s.id == r.id) {
            let old = ranks.iter().find(|x| x.0 == *pe).unwrap().1;
            assert_eq!(s.rank, old - u32::from(old > dead_rank), "PE {pe}");
            placed[*pe as usize] = Some(Placement {
                token: token_of(r.id),
                rank: s.rank,
                size: s.size,
                k: s.k,
                parent: s.parent,
                children: s.children.clone(),
            });
        }
        check(&member, &placed, token_of(r.id), 2)
            .unwrap_or_else(|e| panic!("dead rank {dead_rank}: {e}"));
    }
}

#[test]
fn a_creation_from_a_section_stays_inside_it() {
    let npes = 36;
    let parent: Vec<Pe> = (0..npes).filter(|p| p % 4 != 3 && *p != 0).collect();
    let split = Membership::Colours(Colouring::Random {
        colours: 3,
        none: 0.2,
        seed: 2,
    });
    for alg in available() {
        let first = vec![plan(
            1,
            PlannedParent::World,
            alg,
            3,
            Membership::Pes(parent.clone()),
        )];
        let inner = vec![
            plan(
                5,
                PlannedParent::Earlier(0),
                alg,
                2,
                Membership::Random {
                    fraction: 0.5,
                    seed: 8,
                },
            ),
            plan(9, PlannedParent::Earlier(0), alg, 3, split.clone()),
        ];
        let stages = vec![first.clone(), inner];
        let with = batch::run(config(Layer::Sim, npes), stages.clone(), true).unwrap();
        verify(npes, &stages, &with);
        let without = batch::run(config(Layer::Sim, npes), vec![first], true).unwrap();
        // PE 0 drives the plan; every other PE outside the parent hears nothing.
        for pe in (1..npes).filter(|p| !parent.contains(p)) {
            let (x, y) = (
                &without.run.per_pe[pe as usize],
                &with.run.per_pe[pe as usize],
            );
            assert_eq!(x.processed, y.processed, "{alg:?}: PE {pe} took part");
        }
    }
}

#[test]
fn many_creations_at_once_on_threads() {
    let npes = 32;
    let algs = available();
    let stage: Vec<Step> = (0..12u32)
        .map(|i| {
            let alg = algs[i as usize % algs.len()];
            let m = if i % 4 == 3 {
                Membership::Colours(Colouring::Random {
                    colours: 1 + i % 5,
                    none: 0.1,
                    seed: u64::from(i),
                })
            } else {
                Membership::Random {
                    fraction: 0.2 + 0.07 * f64::from(i),
                    seed: u64::from(i),
                }
            };
            plan(i % npes, PlannedParent::World, alg, 2 + i % 4, m)
        })
        .collect();
    let stages = vec![stage];
    let out = batch::run(config(Layer::Threads, npes), stages.clone(), true).unwrap();
    verify(npes, &stages, &out);
}

#[test]
fn every_algorithm_makes_an_equivalent_section_of_the_same_members() {
    use chorus_sections::protocol::Filler;
    assert_eq!(available(), Algorithm::ALL.to_vec());
    assert!(!available().contains(&Algorithm::ShrinkAndBalance(Filler::None)));
    let npes = 37;
    for layer in [Layer::Threads, Layer::Sim] {
        for m in memberships() {
            let stages: Vec<Vec<Step>> = available()
                .into_iter()
                .map(|alg| vec![plan(4, PlannedParent::World, alg, 3, m.clone())])
                .collect();
            let out = batch::run(config(layer, npes), stages.clone(), true)
                .unwrap_or_else(|e| panic!("{layer:?} {m:?}: {e}"));
            verify(npes, &stages, &out);
            // PE → rank in each algorithm's section, in the order of `available()`.
            let ranks: Vec<Vec<(Pe, u32)>> = out
                .reports
                .iter()
                .map(|r| {
                    let mut v: Vec<(Pe, u32)> = out
                        .sections
                        .iter()
                        .filter(|(_, s)| s.id == r.id)
                        .map(|(pe, s)| (*pe, s.rank))
                        .collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let pes = |v: &Vec<(Pe, u32)>| v.iter().map(|x| x.0).collect::<Vec<_>>();
            for v in &ranks {
                assert_eq!(pes(v), pes(&ranks[0]), "{layer:?} {m:?}: same members");
            }
            // The centralized gather and Shrink-and-Hash without a filler both rank
            // members in the preorder of the parent's tree.
            let at = |a: Algorithm| available().iter().position(|&x| x == a).unwrap();
            assert_eq!(
                ranks[at(Algorithm::Centralized)],
                ranks[at(Algorithm::ShrinkAndHash(Filler::None))],
                "{layer:?} {m:?}"
            );
        }
    }
}
