//! Split by colour and key (`MPI_Comm_split`) from inside a chare, on threads and sim,
//! by every algorithm: members ranked by (key, PE), a valid tree over those ranks,
//! and an allreduce over each section.

use chorus_core::{mix64, Callback, Chare, Config, Ctx, Entry, GroupProxy, Layer, Pe, Reducer};
use chorus_core::{Registry, RunReport, Runtime};
use chorus_sections::host::{available, HostError, Parent};
use chorus_sections::protocol::Algorithm;
use chorus_sections::section::{check, Placement, SectionId};
use chorus_sections::{Section, Sections, Split};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the workers split: `colours`, a seed for colours and keys (keys repeat, so ties
/// are broken by PE), and then a second split of each section made.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Plan {
    colours: u32,
    seed: u64,
    algorithm: Option<Algorithm>,
    nested: bool,
    /// Odd PEs call only once the job is quiet without them (the split's start
    /// has reached them and waits for their call), then PE 0 ends the job at the
    /// next quiescence.
    late: bool,
    /// A split by any colour: the colours are `colours` values spread over the whole
    /// `u64` range instead of 0..colours.
    any: bool,
}

impl Plan {
    /// PE `pe`'s colour (one PE in 7 names none) and key.
    fn of(&self, pe: Pe) -> (Option<u64>, i64) {
        let x = mix64(self.seed ^ u64::from(pe));
        let dense = (!x.is_multiple_of(7)).then_some(u64::from((x >> 8) as u32 % self.colours));
        let colour = dense.map(|c| if self.any { mix64(c ^ self.seed) } else { c });
        (colour, ((x >> 32) % 5) as i64 - 2)
    }

    /// A plan with `colours` colours and `seed`, the default algorithm, one split.
    fn simple(colours: u32, seed: u64, any: bool) -> Self {
        Plan {
            colours,
            seed,
            algorithm: None,
            nested: false,
            late: false,
            any,
        }
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    sections: Sections,
    plan: Plan,
    joined: Entry<Worker, Section>,
    sum: Entry<Worker, u64>,
    late: Entry<Worker, ()>,
}

struct Worker {
    init: Init,
    /// Sections this member joined so far (the first is the world's split's).
    joined: u32,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Go,
    Late(()),
    Joined(Section),
    Sum(u64),
}

impl Chare for Worker {
    type Init = Init;
    type Msg = Msg;
    fn create(init: Init, _: &mut Ctx) -> Self {
        Worker { init, joined: 0 }
    }
    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        let me: GroupProxy<Worker> = ctx.this_group().expect("a group member");
        let pe = ctx.my_pe();
        let plan = self.init.plan;
        let sections = self.init.sections;
        let joined = Callback::group_all(&me, self.init.joined);
        match msg {
            Msg::Go | Msg::Late(()) => {
                let late = matches!(msg, Msg::Late(()));
                if late && pe == 0 {
                    ctx.exit_on_quiescence();
                }
                // Late odd PEs call at `Late`, everyone else at `Go`.
                let my_turn = if plan.late && pe % 2 == 1 {
                    late
                } else {
                    !late
                };
                if !my_turn {
                    return;
                }
                let (colour, key) = plan.of(pe);
                let mut split = if plan.any {
                    Split::any()
                } else {
                    Split::new(plan.colours)
                }
                .key(key);
                split = match colour {
                    Some(c) => split.colour(c),
                    None => split.no_colour(),
                };
                if let Some(a) = plan.algorithm {
                    split = split.algorithm(a);
                }
                sections.split(ctx, split, joined).expect("a valid split");
            }
            Msg::Joined(section) => {
                self.joined += 1;
                let level = if self.joined == 1 { "first" } else { "second" };
                ctx.publish(level, &section);
                let cb = Callback::group_all(&me, self.init.sum);
                sections
                    .allreduce(ctx, &section, u64::from(pe), Reducer::Sum, cb)
                    .expect("starts");
                if plan.nested && self.joined == 1 {
                    // Split the section again, halves by PE, in reverse PE order.
                    let split = Split::new(2)
                        .parent(Parent::Section(section.id))
                        .colour(pe % 2)
                        .key(-i64::from(pe));
                    sections.split(ctx, split, joined).expect("a valid split");
                }
            }
            Msg::Sum(s) => ctx.publish("sum", &(pe, s)),
        }
    }
}

fn run(layer: Layer, pes: u32, plan: Plan) -> RunReport {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    reg.chare::<Worker>("Worker");
    let joined = reg.entry::<Worker, Section>("Worker::joined", Msg::Joined);
    let sum = reg.entry::<Worker, u64>("Worker::sum", Msg::Sum);
    let late = reg.entry::<Worker, ()>("Worker::late", Msg::Late);
    let cfg = Config {
        layer,
        ..Config::with_pes(pes)
    };
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let sections = sections.setup(ctx);
            let init = Init {
                sections,
                plan,
                joined,
                sum,
                late,
            };
            let workers = ctx.create_group::<Worker>(init);
            workers.broadcast(ctx, Msg::Go);
            if plan.late {
                ctx.start_quiescence(Callback::group_all(&workers, late));
            } else {
                ctx.exit_on_quiescence();
            }
        })
        .unwrap_or_else(|e| panic!("{layer:?} {plan:?}: {e}"))
}

/// Check each section in `got` has exactly `want`'s members (PE -> key), ranked by
/// (key, PE), over a valid k-ary tree.
fn check_sections(pes: u32, got: &[(Pe, Section)], want: &BTreeMap<SectionId, Vec<(i64, Pe)>>) {
    let mut by_id: BTreeMap<SectionId, Vec<(Pe, Section)>> = BTreeMap::new();
    for (pe, s) in got {
        by_id.entry(s.id).or_default().push((*pe, s.clone()));
    }
    assert_eq!(by_id.len(), want.len());
    for (id, members) in &by_id {
        let mut order = want[id].clone();
        order.sort_unstable();
        assert_eq!(members.len(), order.len(), "{id}");
        let mut member = vec![false; pes as usize];
        let mut placed = vec![None; pes as usize];
        let token = SectionId::token(id.creator, id.counter);
        for (pe, s) in members {
            assert_eq!(order[s.rank as usize].1, *pe, "{id}: rank of PE {pe}");
            member[*pe as usize] = true;
            placed[*pe as usize] = Some(Placement {
                token,
                rank: s.rank,
                size: s.size,
                k: s.k,
                parent: s.parent,
                children: s.children.clone(),
            });
        }
        let k = members[0].1.k;
        check(&member, &placed, token, k).unwrap_or_else(|e| panic!("{id}: {e}"));
    }
}

fn verify(pes: u32, plan: Plan, report: &RunReport) {
    let sums: BTreeMap<Pe, Vec<u64>> = report.outputs::<(Pe, u64)>("sum").into_iter().fold(
        BTreeMap::new(),
        |mut m, (_, (pe, s))| {
            m.entry(pe).or_insert_with(Vec::new).push(s);
            m
        },
    );
    // The first split: sections by colour.
    let first: Vec<(Pe, Section)> = report.outputs("first");
    let mut colour_of_id = BTreeMap::new();
    let mut want: BTreeMap<SectionId, Vec<(i64, Pe)>> = BTreeMap::new();
    for (pe, s) in &first {
        let (colour, _) = plan.of(*pe);
        let c = colour.expect("only PEs with a colour join");
        assert_eq!(
            *colour_of_id.entry(s.id).or_insert(c),
            c,
            "one colour per section"
        );
    }
    for pe in 0..pes {
        if let (Some(c), key) = plan.of(pe) {
            if let Some((&id, _)) = colour_of_id.iter().find(|(_, &cc)| cc == c) {
                want.entry(id).or_default().push((key, pe));
            } else {
                panic!("PE {pe} of colour {c} got no section");
            }
        }
    }
    check_sections(pes, &first, &want);
    // Sections are made in ascending colour order: the same colours, the same ids.
    let mut by_colour: Vec<(u64, SectionId)> =
        colour_of_id.iter().map(|(&id, &c)| (c, id)).collect();
    by_colour.sort_unstable();
    assert!(
        by_colour
            .windows(2)
            .all(|w| w[0].1.counter < w[1].1.counter),
        "{by_colour:?}"
    );
    for (id, members) in &want {
        let total: u64 = members.iter().map(|&(_, pe)| u64::from(pe)).sum();
        for &(_, pe) in members {
            assert!(
                sums[&pe].contains(&total),
                "PE {pe} of {id}: {:?}",
                sums[&pe]
            );
        }
    }
    if plan.nested {
        let second: Vec<(Pe, Section)> = report.outputs("second");
        let mut want2: BTreeMap<SectionId, Vec<(i64, Pe)>> = BTreeMap::new();
        for (pe, s) in &second {
            want2.entry(s.id).or_default().push((-i64::from(*pe), *pe));
        }
        for (id, members) in &want2 {
            let parity = members[0].1 % 2;
            assert!(members.iter().all(|m| m.1 % 2 == parity), "{id}");
        }
        check_sections(pes, &second, &want2);
        let halves: usize = want
            .values()
            .map(|m| {
                let odd = m.iter().filter(|x| x.1 % 2 == 1).count();
                usize::from(odd > 0) + usize::from(odd < m.len())
            })
            .sum();
        assert_eq!(want2.len(), halves);
    }
}

#[test]
fn every_algorithm_ranks_by_key_then_pe_on_threads_and_sim() {
    for layer in [Layer::Threads, Layer::Sim] {
        for (i, alg) in available().into_iter().enumerate() {
            let plan = Plan {
                colours: 3,
                seed: 17 + i as u64,
                algorithm: Some(alg),
                nested: false,
                late: false,
                any: false,
            };
            let report = run(layer, 13, plan);
            verify(13, plan, &report);
        }
    }
}

#[test]
fn a_section_made_by_a_split_splits_again() {
    for layer in [Layer::Threads, Layer::Sim] {
        let plan = Plan {
            colours: 2,
            seed: 5,
            algorithm: None,
            nested: true,
            late: false,
            any: false,
        };
        let report = run(layer, 16, plan);
        verify(16, plan, &report);
    }
}

#[test]
fn the_default_algorithm_on_a_large_job() {
    for any in [false, true] {
        let plan = Plan::simple(4, 3, any);
        let report = run(Layer::Sim, 300, plan);
        verify(300, plan, &report);
    }
}

#[test]
fn a_split_by_any_u64_colour_makes_one_section_per_colour_on_threads_and_sim() {
    for layer in [Layer::Threads, Layer::Sim] {
        for (i, alg) in available().into_iter().enumerate() {
            let plan = Plan {
                algorithm: Some(alg),
                nested: true,
                ..Plan::simple(5, 40 + i as u64, true)
            };
            let report = run(layer, 14, plan);
            verify(14, plan, &report);
        }
    }
}

#[test]
fn splits_by_any_colour_and_by_0_to_n_run_in_call_order_with_late_callers() {
    for layer in [Layer::Threads, Layer::Sim] {
        let plan = Plan {
            nested: true,
            late: true,
            ..Plan::simple(3, 9, true)
        };
        let report = run(layer, 12, plan);
        verify(12, plan, &report);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
    #[test]
    fn random_u64_colours_split_into_their_sections(
        seed in 0u64..1_000_000,
        colours in 1u32..9,
        pes in 1u32..40,
    ) {
        let plan = Plan::simple(colours, seed, true);
        let report = run(Layer::Sim, pes, plan);
        verify(pes, plan, &report);
    }
}

#[test]
fn a_pe_that_calls_after_the_start_came_still_joins() {
    for layer in [Layer::Threads, Layer::Sim] {
        for algorithm in [Algorithm::Centralized, available()[3]] {
            let plan = Plan {
                colours: 2,
                seed: 8,
                algorithm: Some(algorithm),
                nested: true,
                late: true,
                any: false,
            };
            let report = run(layer, 12, plan);
            verify(12, plan, &report);
        }
    }
}

#[test]
fn a_colour_out_of_range_is_an_error_at_the_call() {
    let split = Split::new(2).colour(2u32);
    assert!(matches!(split.validate(), Err(HostError::BadColours(_))));
    assert!(Split::new(2).colour(1u32).key(-4).validate().is_ok());
    assert!(matches!(
        Split::new(0).validate(),
        Err(HostError::BadColours(_))
    ));
    assert!(Split::any().colour(u64::MAX).validate().is_ok());
}
