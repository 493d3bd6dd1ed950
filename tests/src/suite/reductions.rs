//! Reductions over groups and arrays of 1, 2, 3, 7, 64 and 1000 members with every
//! reducer, checked against the same reduction computed directly.

use crate::{config, pes, pes_each};
use chorus_core::{
    ArrayMap, Callback, Chare, ChareProxy, Ctx, Encoded, Entry, ErrorPolicy, Layer, RedData,
    Reducer, Reducible, Registry, Runtime,
};
use serde::{Deserialize, Serialize};

/// The contribution of member `k` (its PE or index) for case `case`.
fn contribution(case: usize, k: u64) -> (RedData, Reducer) {
    let ki = k as i64;
    match case {
        0 => (ki.into_data(), Reducer::Sum),
        1 => (vec![k, 2 * k].into_data(), Reducer::Sum),
        2 => ((k as f64 * 0.5).into_data(), Reducer::Sum),
        3 => ((1 + (k % 3) as i64).into_data(), Reducer::Product),
        4 => (
            (if k.is_multiple_of(2) { 1.0f64 } else { -1.0 }).into_data(),
            Reducer::Product,
        ),
        5 => ((ki * 7 % 13 - 6).into_data(), Reducer::Min),
        6 => ((k * 11 % 17).into_data(), Reducer::Max),
        7 => (((k as f64) * 1.5 - 3.0).into_data(), Reducer::Max),
        8 => ((k % 5 != 4).into_data(), Reducer::And),
        9 => ((k == 2).into_data(), Reducer::Or),
        10 => ((0xffu64 ^ (1 << (k % 8))).into_data(), Reducer::BitAnd),
        11 => ((1u64 << (k % 40)).into_data(), Reducer::BitOr),
        12 => ((k * 2654435761 % 1024).into_data(), Reducer::BitXor),
        13 => (vec![k, k + 1000].into_data(), Reducer::Concat),
        14 => (Encoded(format!("m{k}")).into_data(), Reducer::Gather),
        _ => unreachable!(),
    }
}

const CASES: usize = 16;

/// What the reductions must produce over members with keys `keys` (in order).
fn expected(case: usize, keys: &[u64]) -> RedData {
    let vals = || keys.iter().map(|&k| contribution(case, k).0);
    let i = |d: RedData| i64::from_data(d).unwrap();
    let u = |d: RedData| u64::from_data(d).unwrap();
    let f = |d: RedData| f64::from_data(d).unwrap();
    let b = |d: RedData| bool::from_data(d).unwrap();
    match case {
        0 => vals().map(i).sum::<i64>().into_data(),
        1 => vec![keys.iter().sum::<u64>(), 2 * keys.iter().sum::<u64>()].into_data(),
        2 => vals().map(f).sum::<f64>().into_data(),
        3 => vals().map(i).fold(1i64, i64::wrapping_mul).into_data(),
        4 => vals().map(f).product::<f64>().into_data(),
        5 => vals().map(i).min().unwrap().into_data(),
        6 => vals().map(u).max().unwrap().into_data(),
        7 => vals().map(f).fold(f64::MIN, f64::max).into_data(),
        8 => vals().all(b).into_data(),
        9 => vals().any(b).into_data(),
        10 => vals().map(u).fold(u64::MAX, |a, x| a & x).into_data(),
        11 => vals().map(u).fold(0, |a, x| a | x).into_data(),
        12 => vals().map(u).fold(0, |a, x| a ^ x).into_data(),
        13 => keys
            .iter()
            .flat_map(|&k| [k, k + 1000])
            .collect::<Vec<u64>>()
            .into_data(),
        14 => RedData::List(vals().collect()),
        15 => keys.iter().map(|&k| k * k).max().unwrap().into_data(),
        _ => unreachable!(),
    }
}

/// The custom reducer registered for case 15: the largest value.
fn custom_max(a: RedData, b: RedData) -> Result<RedData, String> {
    let (a, b) = (u64::from_data(a)?, u64::from_data(b)?);
    Ok(a.max(b).into_data())
}

#[derive(Clone, Serialize, Deserialize)]
struct Plan {
    checker: ChareProxy<Checker>,
    entries: Vec<Entry<Checker, RedData>>,
    custom: Reducer,
}

/// A member of the group or array under test.
struct Member {
    plan: Plan,
}

#[derive(Clone, Serialize, Deserialize)]
enum MemberMsg {
    Go,
}

impl Chare for Member {
    type Init = Plan;
    type Msg = MemberMsg;
    fn create(plan: Plan, _: &mut Ctx) -> Self {
        Member { plan }
    }
    fn handle(&mut self, _: MemberMsg, ctx: &mut Ctx) {
        let key = ctx
            .this_index::<usize>()
            .map_or(u64::from(ctx.my_pe()), |i| i as u64);
        for case in 0..CASES {
            let (value, reducer) = if case == 15 {
                ((key * key).into_data(), self.plan.custom)
            } else {
                contribution(case, key)
            };
            let cb = Callback::chare(&self.plan.checker, self.plan.entries[case]);
            ctx.contribute(value, reducer, cb);
        }
    }
}

/// Receives every case's result.
struct Checker {
    results: Vec<Option<RedData>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum CheckerMsg {
    Result(usize, RedData),
}

impl Chare for Checker {
    type Init = ();
    type Msg = CheckerMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Checker {
            results: vec![None; CASES],
        }
    }
    fn handle(&mut self, msg: CheckerMsg, ctx: &mut Ctx) {
        let CheckerMsg::Result(case, data) = msg;
        assert!(self.results[case].is_none(), "case {case} delivered twice");
        self.results[case] = Some(data);
        if self.results.iter().all(Option::is_some) {
            let all: Vec<RedData> = self.results.iter().flatten().cloned().collect();
            ctx.publish("results", &all);
            ctx.exit();
        }
    }
}

macro_rules! case_entries {
    ($reg:expr, $($n:literal),*) => {
        vec![$($reg.entry::<Checker, RedData>(concat!("Checker::case", $n), |d| CheckerMsg::Result($n, d))),*]
    };
}

fn registry() -> (Registry, Vec<Entry<Checker, RedData>>, Reducer) {
    let mut reg = Registry::new();
    reg.chare::<Member>("Member").chare::<Checker>("Checker");
    let entries = case_entries!(reg, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let custom = reg.reducer("max", custom_max);
    (reg, entries, custom)
}

enum Collection {
    Group,
    Array { n: usize, map: ArrayMap },
}

fn run_case(layer: Layer, pes: u32, coll: Collection) -> Vec<RedData> {
    let (reg, entries, custom) = registry();
    let report = Runtime::new(reg, config(layer, pes, ErrorPolicy::Abort))
        .run(move |ctx| {
            let checker = ctx.create_chare::<Checker>((), 0);
            let plan = Plan {
                checker,
                entries,
                custom,
            };
            match coll {
                Collection::Group => ctx
                    .create_group::<Member>(plan)
                    .broadcast(ctx, MemberMsg::Go),
                Collection::Array { n, map } => ctx
                    .create_array_1d::<Member>(n, plan, map)
                    .broadcast(ctx, MemberMsg::Go),
            }
        })
        .expect("reduction run");
    report.output("results").expect("checker published")
}

fn check(results: Vec<RedData>, members: u64, what: &str) {
    assert_eq!(results.len(), CASES, "{what}: every case reported");
    let keys: Vec<u64> = (0..members).collect();
    for (case, got) in results.into_iter().enumerate() {
        let want = expected(case, &keys);
        match (&got, &want) {
            (RedData::F64(g), RedData::F64(w)) => {
                for (g, w) in g.iter().zip(w) {
                    assert!(
                        (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                        "{what} case {case}: {g} != {w}"
                    );
                }
            }
            _ => assert_eq!(got, want, "{what} case {case}"),
        }
    }
}

/// Group reductions with every reducer on 1, 2, 3, 7 and 64 PEs (on mpi: every rank).
pub fn group_reductions_with_every_reducer_on_1_2_3_7_64_pes(layer: Layer) {
    for pes in pes_each(layer, &[1, 2, 3, 7, 64]) {
        let results = run_case(layer, pes, Collection::Group);
        check(
            results,
            u64::from(pes),
            &format!("group of {pes} on {layer:?}"),
        );
    }
}

/// A group reduction over 1000 PEs (on mpi: every rank).
pub fn group_reduction_over_1000_pes(layer: Layer) {
    let p = pes(layer, 1000);
    let results = run_case(layer, p, Collection::Group);
    check(results, u64::from(p), &format!("group of {p}"));
}

/// Array reductions with every reducer over 1, 2, 3, 7, 64 and 1000 elements, on 4 and
/// 8 PEs with the block map and 3 PEs round-robin (on mpi: every rank, both maps).
pub fn array_reductions_with_every_reducer_on_1_2_3_7_64_1000_elements(layer: Layer) {
    let mut runs: Vec<(u32, ArrayMap)> = Vec::new();
    for (wanted, map) in [
        (4, ArrayMap::Block),
        (3, ArrayMap::RoundRobin),
        (8, ArrayMap::Block),
    ] {
        let run = (pes(layer, wanted), map);
        if !runs.contains(&run) {
            runs.push(run);
        }
    }
    for n in [1usize, 2, 3, 7, 64, 1000] {
        for &(pes, map) in &runs {
            let results = run_case(layer, pes, Collection::Array { n, map });
            check(
                results,
                n as u64,
                &format!("array of {n} on {pes} PEs ({map:?}, {layer:?})"),
            );
        }
    }
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "group_reductions_with_every_reducer_on_1_2_3_7_64_pes",
        group_reductions_with_every_reducer_on_1_2_3_7_64_pes,
    ),
    (
        "group_reduction_over_1000_pes",
        group_reduction_over_1000_pes,
    ),
    (
        "array_reductions_with_every_reducer_on_1_2_3_7_64_1000_elements",
        array_reductions_with_every_reducer_on_1_2_3_7_64_1000_elements,
    ),
];
