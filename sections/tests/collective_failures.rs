//! Section collectives that must fail or race well: logarithmic allgathers against the
//! ring in virtual time, values that do not combine, news of a failure reaching every
//! waiting member, and forged section views refused at the start (the shared cases are
//! in `collective_cases`).

// Each test file uses a part of the shared cases and their imports.
#[allow(dead_code, unused_imports)]
mod collective_cases;
use collective_cases::*;

/// On sim, with short blocks, the logarithmic allgathers finish in a fraction of the
/// ring's n-1 rounds (virtual time, deterministic), and `Auto` picks one of them.
#[test]
fn logarithmic_allgathers_beat_the_ring_on_short_blocks_in_virtual_time() {
    let n = 64;
    let sec = RangeSection::world(n, 2).unwrap();
    let time = |a: Allgather| {
        let case = Case {
            shape: Shape::Range(sec),
            coll: Coll::Allgather(a),
            count: 1,
            root: 0,
            seed: 2,
            base: 0,
        };
        run_timed(Layer::Sim, n, vec![case], NO_STAGGER).1
    };
    let algorithms = [
        Allgather::Auto,
        Allgather::Tree,
        Allgather::Bruck(1),
        Allgather::Bruck(3),
        Allgather::StandardExchange(1),
        Allgather::StandardExchange(3),
        Allgather::Ring,
    ];
    let t: Vec<f64> = algorithms.iter().map(|&a| time(a)).collect();
    for (a, t) in algorithms.iter().zip(&t) {
        eprintln!(
            "allgather {} of 64 x 8 bytes on sim: {:.1} us",
            a.name(),
            t * 1e6
        );
    }
    let ring = t[6];
    for (a, &x) in algorithms.iter().zip(&t).take(6) {
        assert!(
            x * 3.0 < ring,
            "{} takes {x} s, the ring {ring} s",
            a.name()
        );
    }
    assert_eq!(t[0], t[4], "Auto is recursive doubling at 64 members");
}

/// A collective whose members' values do not combine, as every member starts it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
enum BadOp {
    Reduce,
    Allreduce,
    Scan,
    Gather,
    Allgather(Allgather),
}

/// One member (`odd`) gives `odd_value`; the others give three `u64`s. The member of
/// rank `late`, if any, starts two handlers after computing for a millisecond.
#[derive(Clone, Serialize, Deserialize)]
struct BadPlan {
    coll: Collectives,
    sinks: Sinks,
    shape: Shape,
    op: BadOp,
    odd: u32,
    odd_value: RedData,
    late: Option<u32>,
}

impl BadPlan {
    /// Start the member on this PE's part of the collective.
    fn start(&self, ctx: &mut Ctx) {
        let Some(member) = self.shape.member(ctx.my_pe()) else {
            return;
        };
        let rank = member.rank();
        let v = if rank == self.odd {
            self.odd_value.clone()
        } else {
            RedData::U64(vec![u64::from(rank), 1, 2])
        };
        let cb = Callback::array_element(&self.sinks.array, &(rank as usize), self.sinks.got);
        let c = &self.coll;
        let started = match self.op {
            BadOp::Reduce => c.reduce(ctx, member, 0, v, Reducer::Sum, cb),
            BadOp::Allreduce => c.allreduce(ctx, member, v, Reducer::Sum, cb),
            BadOp::Scan => c.scan(ctx, member, v, Reducer::Sum, cb),
            BadOp::Gather => c.gather(ctx, member, 0, v, cb),
            BadOp::Allgather(a) => c.allgather(ctx, member, v, a, cb),
        };
        // Every member's own value is fine: starting succeeds everywhere.
        started.unwrap_or_else(|e| panic!("starting {:?}: {e}", self.op));
    }
}

/// One per PE: starts its member's part of the plan's collective.
struct BadDriver(BadPlan);

impl Chare for BadDriver {
    type Init = BadPlan;
    /// Handlers left before a late member starts.
    type Msg = u8;
    fn create(plan: BadPlan, ctx: &mut Ctx) -> Self {
        let late = plan.late.is_some_and(|r| {
            plan.shape
                .member(ctx.my_pe())
                .is_some_and(|m| m.rank() == r)
        });
        if late {
            // What arrives during the compute is queued behind the first message to
            // self and ahead of the second, which starts the collective.
            ctx.work(Duration::from_millis(1));
            let me = ctx.this_group::<BadDriver>().expect("a group member");
            me.send(ctx, ctx.my_pe(), 2);
        } else {
            plan.start(ctx);
        }
        BadDriver(plan)
    }
    fn handle(&mut self, left: u8, ctx: &mut Ctx) {
        if left > 1 {
            let me = ctx.this_group::<BadDriver>().expect("a group member");
            me.send(ctx, ctx.my_pe(), left - 1);
        } else {
            self.0.start(ctx);
        }
    }
}

/// Run the plan on 4 PEs of `layer` under `policy`.
fn run_bad(
    layer: Layer,
    policy: ErrorPolicy,
    shape: &Shape,
    op: BadOp,
    (odd, odd_value): (u32, &RedData),
    late: Option<u32>,
) -> Result<chorus_core::RunReport, RuntimeError> {
    let (mut reg, got) = registry();
    reg.chare::<BadDriver>("bad-driver");
    let (shape, odd_value) = (shape.clone(), odd_value.clone());
    let config = Config {
        on_error: policy,
        ..config(layer, 4)
    };
    Runtime::new(reg, config).run(move |ctx| {
        let coll = Collectives::create(ctx);
        let array = ctx.create_array_1d::<Sink>(4, (), ArrayMap::RoundRobin);
        let plan = BadPlan {
            coll,
            sinks: Sinks { array, got },
            shape,
            op,
            odd,
            odd_value,
            late,
        };
        ctx.create_group::<BadDriver>(plan);
        ctx.exit_on_quiescence();
    })
}

/// A case of values that do not combine: the section, the collective, the odd member's
/// rank and value, the collective's name, the ranks that find the problem and what
/// they say.
type BadCase = (Shape, BadOp, u32, RedData, &'static str, Vec<u32>, String);

/// Members whose values differ in kind or length end a reduce, an allreduce, a scan
/// (by recursive doubling and by the tree), a gather and allgathers by rounds with
/// `CollectiveError::Failed` naming the collective, the section and what disagreed,
/// reported by "section collectives" under both policies: `abort` returns it; `drop`
/// lists it, and the members waiting on the failed one hear of it and fail with
/// `Aborted` instead of waiting (no handler panics, and the job still ends).
#[test]
fn values_that_do_not_combine_fail_the_collective_with_a_typed_error_under_both_policies() {
    let range = RangeSection::world(4, 2).unwrap();
    let tree = Shape::Tree {
        id: SectionId::created(0, 77, 4),
        k: 2,
        roster: vec![2, 0, 3, 1],
        shared: false,
    };
    let u64s = RedData::U64(vec![0; 3]);
    let combine = |b: RedData| {
        chorus_core::reduction::combine_values(Reducer::Sum, u64s.clone(), b, &|_| None)
            .unwrap_err()
            .to_string()
    };
    let other_kind = RedData::I64(vec![1, 2, 3]);
    let shorter = RedData::U64(vec![1, 2]);
    let floats = RedData::F64(vec![0.5; 3]);
    let concat = "reducer Concat cannot concatenate u64 with i64".to_string();
    // (shape, op, odd rank, its value, the collective's name, ranks that find the
    // problem, what they say). On the range section rank r is PE r; in the k = 2 tree
    // rank 1 merges rank 3's partial, and rank 0 folds a scan's or gather's values.
    let cases: Vec<BadCase> = vec![
        (
            Shape::Range(range),
            BadOp::Reduce,
            3,
            other_kind.clone(),
            "reduce",
            vec![1],
            combine(other_kind.clone()),
        ),
        (
            Shape::Range(range),
            BadOp::Allreduce,
            3,
            shorter.clone(),
            "allreduce",
            vec![1],
            combine(shorter.clone()),
        ),
        (
            Shape::Range(range),
            BadOp::Allreduce,
            3,
            floats,
            "allreduce",
            vec![1],
            "reducer Sum cannot combine f64 values with integer ones".into(),
        ),
        // Recursive doubling: only rank 3 folds in rank 3's value.
        (
            Shape::Range(range),
            BadOp::Scan,
            3,
            other_kind.clone(),
            "scan",
            vec![3],
            combine(other_kind.clone()),
        ),
        (
            tree.clone(),
            BadOp::Scan,
            3,
            shorter.clone(),
            "scan",
            vec![0],
            combine(shorter),
        ),
        (
            Shape::Range(range),
            BadOp::Gather,
            2,
            other_kind.clone(),
            "gather",
            vec![0],
            concat.clone(),
        ),
        (
            Shape::Range(range),
            BadOp::Allgather(Allgather::Ring),
            2,
            other_kind.clone(),
            "allgather (ring)",
            vec![0, 1, 2, 3],
            concat.clone(),
        ),
        (
            Shape::Range(range),
            BadOp::Allgather(Allgather::Bruck(1)),
            2,
            other_kind,
            "allgather (bruck/1)",
            vec![0, 1, 2, 3],
            concat,
        ),
    ];
    for layer in layers() {
        for (shape, op, odd, odd_value, name, ranks, what) in &cases {
            let (section, pe_of) = match shape {
                Shape::Range(s) => (
                    s.id(),
                    ranks.iter().map(|&r| s.pe(r).unwrap()).collect::<Vec<_>>(),
                ),
                Shape::Tree { id, roster, .. } => {
                    (*id, ranks.iter().map(|&r| roster[r as usize]).collect())
                }
            };
            let wants: Vec<String> = ranks
                .iter()
                .zip(pe_of)
                .map(|(&rank, pe)| {
                    CollectiveError::Failed {
                        collective: name.to_string(),
                        section,
                        seq: 0,
                        rank,
                        pe,
                        cause: Box::new(CollectiveError::Mismatch(what.clone())),
                    }
                    .to_string()
                })
                .collect();
            let expected = |e: &RuntimeError| {
                matches!(e, RuntimeError::Reported { by, message, .. }
                    if by == REPORTER && wants.contains(message))
            };
            let case = format!("{layer:?}: {op:?} on {shape:?}, rank {odd} gives {odd_value:?}");
            let err = run_bad(
                layer,
                ErrorPolicy::Abort,
                shape,
                *op,
                (*odd, odd_value),
                None,
            )
            .expect_err("abort ends the job with the error");
            assert!(expected(&err), "{case}: {err:?}, wanted one of {wants:?}");
            assert!(err.to_string().contains(what.as_str()), "{case}: {err}");
            let report = run_bad(
                layer,
                ErrorPolicy::Drop,
                shape,
                *op,
                (*odd, odd_value),
                None,
            )
            .unwrap_or_else(|e| panic!("{case}: drop completes the job, got {e}"));
            let errors = report.errors();
            assert!(
                errors.iter().any(|e| expected(e)),
                "{case}: drop lists one of {wants:?}, got {errors:?}"
            );
            // The other errors are members that were waiting on the failed ones and
            // heard of the failure instead of waiting forever.
            let heard = |e: &RuntimeError| {
                matches!(e, RuntimeError::Reported { by, message, .. }
                    if by == REPORTER && message.contains(") failed it ") && message.contains(what.as_str()))
            };
            assert!(
                errors.iter().all(|e| expected(e) || heard(e)),
                "{case}: {errors:?}, wanted {wants:?} and members that heard of them"
            );
            // Every member that expects a result gets it or fails: none is left waiting.
            let got: Vec<(usize, RedData)> =
                report.outputs("got").into_iter().map(|(_, g)| g).collect();
            for rank in 0..shape.size() {
                let expects = !matches!(op, BadOp::Reduce | BadOp::Gather) || rank == 0;
                let pe = shape.member_pe(rank);
                let failed_here = format!(" failed at rank {rank} (PE {pe}): ");
                let failed = errors.iter().any(
                    |e| matches!(e, RuntimeError::Reported { message, .. } if message.contains(&failed_here)),
                );
                let answered = got.iter().any(|(i, _)| *i == rank as usize);
                assert!(
                    !expects || failed || answered,
                    "{case}: rank {rank} got neither a result nor an error: {errors:?}"
                );
            }
        }
    }
}

/// News of a failure reaches every waiting member: up and down a tree without a
/// roster, to a member that had not started (which fails at its start and passes the
/// news on to its subtree), and from a member with a roster to all. On the sim layer,
/// where the order is fixed. Each case: the section, the odd rank and its value, the
/// late rank, the rank that finds the problem, and the rank that fails at its start.
#[test]
fn news_of_a_failure_reaches_every_waiting_member() {
    let range = Shape::Range(RangeSection::world(4, 2).unwrap());
    // Ranks 0..4 on PEs 2, 0, 3, 1; rank 0's children are 1 and 2, rank 1's is 3.
    let tree = Shape::Tree {
        id: SectionId::created(0, 77, 4),
        k: 2,
        roster: vec![2, 0, 3, 1],
        shared: false,
    };
    let shorter = RedData::U64(vec![1, 2]);
    // Rank 1 finds rank 3's short vector while rank 2 computes: the roster tells all.
    // In the tree, rank 1 finds it and the news climbs to 0 and goes down to 2 and 3.
    // In the tree with rank 1 late, rank 0 finds rank 2's, and rank 1 passes the news
    // on to rank 3 when it starts.
    let cases = [
        (&range, 3, Some(2), 1, Some(2)),
        (&tree, 3, None, 1, None),
        (&tree, 2, Some(1), 0, Some(1)),
    ];
    for (shape, odd, late, finder, starter) in cases {
        let case = format!("{shape:?}, odd rank {odd}, late rank {late:?}");
        let report = run_bad(
            Layer::Sim,
            ErrorPolicy::Drop,
            shape,
            BadOp::Allreduce,
            (odd, &shorter),
            late,
        )
        .unwrap_or_else(|e| panic!("{case}: drop completes the job, got {e}"));
        let errors: Vec<String> = report.errors().iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 4, "{case}: every member fails: {errors:?}");
        let at = |rank: u32| format!("failed at rank {rank} (PE {}): ", shape.member_pe(rank));
        let origin = format!("rank {finder} (PE {}) failed it", shape.member_pe(finder));
        for rank in 0..4 {
            let mine: Vec<&String> = errors.iter().filter(|e| e.contains(&at(rank))).collect();
            assert_eq!(mine.len(), 1, "{case}: rank {rank}: {errors:?}");
            let e = mine[0];
            if rank == finder {
                assert!(
                    e.contains("do not combine") && !e.contains("failed it"),
                    "{case}: {e}"
                );
            } else if Some(rank) == starter {
                assert!(
                    e.contains(&format!("{origin} before this member started")),
                    "{case}: {e}"
                );
            } else {
                assert!(e.contains(&format!("{origin} first")), "{case}: {e}");
            }
        }
        assert!(
            report.outputs::<(usize, RedData)>("got").is_empty(),
            "{case}"
        );
    }
}

/// A forged section view (no parent at rank 1, missing children, k = 0) is refused at
/// the start with `BadSection`, before any routing could panic on it.
#[test]
fn forged_section_views_are_refused_at_the_start() {
    let (reg, _) = registry();
    let report = Runtime::new(reg, config(Layer::Sim, 4))
        .run(|ctx| {
            let coll = Collectives::create(ctx);
            let forge = |rank, k, parent, children| {
                TreeMember::new(
                    Section {
                        id: SectionId::created(0, 5, 4),
                        rank,
                        size: 4,
                        k,
                        parent,
                        children,
                    },
                    0,
                )
            };
            let members = [
                forge(1, 2, None, vec![3]),
                forge(0, 2, None, vec![1]),
                forge(0, 0, None, vec![1, 2]),
                forge(7, 2, Some(3), vec![]),
            ];
            let errors: Vec<CollectiveError> = members
                .into_iter()
                .map(|m| {
                    coll.allreduce(ctx, m, 1u64, Reducer::Sum, Callback::Ignore)
                        .unwrap_err()
                })
                .collect();
            assert!(
                errors
                    .iter()
                    .all(|e| matches!(e, CollectiveError::BadSection { .. })),
                "{errors:?}"
            );
            assert_eq!(
                errors[1],
                CollectiveError::BadSection {
                    rank: 0,
                    size: 4,
                    k: 2,
                    has_parent: false,
                    children: 1,
                    want_children: 2,
                }
            );
            ctx.publish("refused", &errors.len());
            ctx.exit_on_quiescence();
        })
        .unwrap();
    assert_eq!(report.output::<usize>("refused"), Some(4));
}
