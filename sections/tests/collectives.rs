//! Differential tests of the section collectives on the runtime: every collective on
//! range sections (stride 1 and more, nested) and on algorithm-style sections (members
//! in a shuffled PE order, with and without a roster) of sizes 1..20, element counts
//! 0, 1, 2^k and 2^k±1, against a sequential computation — the RBC test-suite pattern
//! — on the threads and sim layers. All cases of a run are started at once, so every
//! run also has many collectives in flight on one section and on overlapping ones.

// Each test file uses a part of the shared cases and their imports.
#[allow(dead_code, unused_imports)]
mod collective_cases;
use collective_cases::*;

#[test]
fn every_collective_on_range_sections_of_1_to_20_matches_the_sequential_result_on_sim() {
    let t = run(Layer::Sim, 41, range_sweep(41, 1..=20, &COUNTS), NO_STAGGER);
    eprintln!("range sweep on sim: {t:?}");
}

#[test]
fn every_collective_on_algorithm_sections_of_1_to_20_matches_the_sequential_result_on_sim() {
    let t = run(Layer::Sim, 29, tree_sweep(29, 1..=20, &COUNTS), NO_STAGGER);
    eprintln!("tree sweep on sim: {t:?}");
}

#[test]
fn every_collective_matches_the_sequential_result_on_threads() {
    let counts = [0, 1, 8, 9];
    let mut cases = range_sweep(20, 1..=20, &counts);
    cases.extend(tree_sweep(20, [1, 2, 3, 5, 8, 13, 20].into_iter(), &[1, 7]));
    let t = run(Layer::Threads, 20, cases, NO_STAGGER);
    eprintln!("sweep on threads: {t:?}");
}

/// The janus case: two range sections overlapping in one PE, each with several
/// collectives in flight at once, and the shared PE starting late so that messages of
/// both sections wait for it.
#[test]
fn overlapping_ranges_sharing_a_pe_run_collectives_at_the_same_time() {
    for layer in layers() {
        let world = RangeSection::world(9, 2).unwrap();
        let left = world.split(0, 4, 1).unwrap();
        let right = world.split(4, 8, 1).unwrap();
        let mut cases = Vec::new();
        for (i, coll) in all_colls(3).into_iter().enumerate() {
            for (j, sec) in [left, right].into_iter().enumerate() {
                for count in [1, 5] {
                    cases.push(Case {
                        shape: Shape::Range(sec),
                        coll,
                        count,
                        root: (i as u32 + 2 * j as u32) % 5,
                        seed: mix((i * 10 + j * 2) as u64 + u64::from(count)),
                        base: 0,
                    });
                }
            }
        }
        // PE 4 (the shared one) computes for 20 ms before starting anything.
        let t = run(layer, 9, cases, (9, 4, Duration::from_millis(20)));
        eprintln!("janus case on {layer:?}: {t:?}");
    }
}

/// Forty collectives in flight on one section; odd PEs start late.
#[test]
fn many_collectives_in_flight_on_one_section() {
    for layer in layers() {
        let sec = RangeSection::world(7, 2).unwrap().split(1, 6, 1).unwrap();
        let colls = all_colls(1);
        let cases: Vec<Case> = (0..40u64)
            .map(|i| Case {
                shape: Shape::Range(sec),
                coll: colls[i as usize % colls.len()],
                count: [0, 3, 16][i as usize % 3],
                root: (i % 6) as u32,
                seed: mix(i),
                base: 0,
            })
            .collect();
        let t = run(layer, 7, cases, (2, 1, Duration::from_millis(10)));
        eprintln!("40 in flight on {layer:?}: {t:?}");
    }
}

/// Starting a collective checks what it can locally and says why it refuses.
#[test]
fn bad_starts_are_refused_with_typed_errors() {
    let (reg, _) = registry();
    let report = Runtime::new(reg, config(Layer::Sim, 4))
        .run(|ctx| {
            let coll = Collectives::create(ctx);
            let sec = RangeSection::world(4, 2).unwrap();
            let me = RangeMember::new(sec, 0).unwrap();
            let other = RangeMember::new(sec, 1).unwrap();
            let bare = TreeMember::new(
                Section {
                    id: SectionId::created(0, 0, 4),
                    rank: 0,
                    size: 4,
                    k: 2,
                    parent: None,
                    children: vec![1, 2],
                },
                0,
            );
            let cb = Callback::Ignore;
            let errors: Vec<CollectiveError> = [
                coll.broadcast(ctx, other, 0, Some(1u64), cb.clone()),
                coll.broadcast::<u64>(ctx, me, 0, None, cb.clone()),
                coll.reduce(ctx, me, 4, 1u64, Reducer::Sum, cb.clone()),
                coll.allreduce(ctx, me, 1u64, Reducer::Custom(0), cb.clone()),
                coll.scan(ctx, me, true, Reducer::Sum, cb.clone()),
                coll.allgather(ctx, bare.clone(), 1u64, Allgather::Ring, cb.clone()),
                coll.allgather(ctx, me, 1u64, Allgather::StandardExchange(0), cb.clone()),
            ]
            .into_iter()
            .map(|r| r.unwrap_err())
            .collect();
            // Nothing was started, so nothing is left running: the job ends.
            let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            ctx.publish("errors", &text);
            assert_eq!(
                errors[..3],
                [
                    CollectiveError::NotMyPe {
                        member: 1,
                        caller: 0
                    },
                    CollectiveError::MissingValue,
                    CollectiveError::BadRoot { root: 4, size: 4 },
                ]
            );
            assert_eq!(errors[3], CollectiveError::CustomReducer(0));
            assert!(matches!(errors[4], CollectiveError::Value(_)));
            assert_eq!(
                errors[5],
                CollectiveError::NeedsRoster {
                    algorithm: "the ring"
                }
            );
            assert_eq!(errors[6], CollectiveError::BadPorts(0));
            assert_eq!(
                RangeMember::new(sec.split(1, 2, 1).unwrap(), 0).unwrap_err(),
                { CollectiveError::NotAMember { pe: 0 } }
            );
            ctx.exit_on_quiescence();
        })
        .unwrap();
    let errors: Vec<String> = report.output("errors").unwrap();
    assert_eq!(errors.len(), 7);
}

/// A group member that records every multicast value reaching its PE.
struct Inbox;

impl Chare for Inbox {
    type Init = ();
    type Msg = RedData;
    fn create(_: (), _: &mut Ctx) -> Self {
        Inbox
    }
    fn handle(&mut self, v: RedData, ctx: &mut Ctx) {
        let pe = ctx.my_pe();
        ctx.publish("inbox", &(pe, v));
    }
}

/// Multicasts to start: (section, root rank); case 0 goes to an array by rank.
#[derive(Clone, Serialize, Deserialize)]
struct McPlan {
    coll: Collectives,
    inbox: GroupProxy<Inbox>,
    inbox_got: Entry<Inbox, RedData>,
    sinks: Sinks,
    cases: Vec<(RangeSection, u32)>,
}

/// Starts the multicasts whose root is on its PE.
struct McDriver;

impl Chare for McDriver {
    type Init = McPlan;
    type Msg = ();
    fn create(plan: McPlan, ctx: &mut Ctx) -> Self {
        for (i, &(sec, root)) in plan.cases.iter().enumerate() {
            if sec.pe(root) != Some(ctx.my_pe()) {
                continue;
            }
            let target = if i == 0 {
                PerMember::array_by_rank(&plan.sinks.array, plan.sinks.got)
            } else {
                PerMember::group(&plan.inbox, plan.inbox_got)
            };
            let member = RangeMember::new(sec, ctx.my_pe()).unwrap();
            let value = vec![i as u64, mix(i as u64)];
            plan.coll.multicast(ctx, member, value, target).unwrap();
        }
        McDriver
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// One-sided multicasts from every root of strided and nested ranges reach each
/// member's group element (or array element by rank) exactly once, and nobody else.
#[test]
fn multicasts_reach_each_member_once_from_any_root() {
    for layer in layers() {
        let world = RangeSection::world(13, 2).unwrap();
        let first = world.split(2, 11, 3).unwrap();
        let mut cases = vec![(first, 2)];
        for sec in [
            world,
            world.with_k(3).unwrap(),
            first,
            world.split(1, 12, 2).unwrap().split(1, 5, 1).unwrap(),
            world.split(7, 7, 1).unwrap(),
        ] {
            cases.extend((0..sec.size()).map(|r| (sec, r)));
        }
        let (mut reg, got) = registry();
        reg.chare::<Inbox>("inbox").chare::<McDriver>("mc-driver");
        let inbox_got = reg.entry::<Inbox, RedData>("inbox", |v| v);
        let plan_cases = cases.clone();
        let report = Runtime::new(reg, config(layer, 13))
            .run(move |ctx| {
                let coll = Collectives::create(ctx);
                let inbox = ctx.create_group::<Inbox>(());
                let n = plan_cases[0].0.size() as usize;
                let array = ctx.create_array_1d::<Sink>(n, (), ArrayMap::RoundRobin);
                let plan = McPlan {
                    coll,
                    inbox,
                    inbox_got,
                    sinks: Sinks { array, got },
                    cases: plan_cases,
                };
                ctx.create_group::<McDriver>(plan);
                ctx.exit_on_quiescence();
            })
            .unwrap_or_else(|e| panic!("{layer:?}: {e}"));
        let value = |i: usize| RedData::U64(vec![i as u64, mix(i as u64)]);
        let mut by_rank: Vec<(usize, RedData)> =
            report.outputs("got").into_iter().map(|x| x.1).collect();
        by_rank.sort_by_key(|x| x.0);
        let want: Vec<(usize, RedData)> = (0..cases[0].0.size() as usize)
            .map(|r| (r, value(0)))
            .collect();
        assert_eq!(by_rank, want, "{layer:?}: the array by rank");
        let mut got: Vec<(Pe, RedData)> =
            report.outputs("inbox").into_iter().map(|x| x.1).collect();
        let mut want: Vec<(Pe, RedData)> = Vec::new();
        for (i, (sec, _)) in cases.iter().enumerate().skip(1) {
            want.extend((0..sec.size()).map(|r| (sec.pe(r).unwrap(), value(i))));
        }
        let key = |x: &(Pe, RedData)| format!("{x:?}");
        got.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(got, want, "{layer:?}: the group");
    }
}
