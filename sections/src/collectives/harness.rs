//! Every collective's state machines run in memory under adversarial schedules: members
//! start in random order and messages arrive in random order (early ones wait for the
//! start, as the host keeps them), against a sequential computation.

use super::alltoall::Alltoall;
use super::choice::Allgather;
use super::error::CollectiveError;
use super::machine::{Machine, Out, Received, Step};
use super::op::Op;
use super::reduce::Delivery;
use super::topology::{Member, RangeMember, Rerooted, Topology, TreeMember};
use super::value::{Fold, Piece};
use crate::kary;
use crate::range::RangeSection;
use crate::section::{Section, SectionId};
use chorus_core::{Pe, RedData, Reducer};
use proptest::prelude::*;

/// Run one collective over `members` (rank order) with `ops[rank]`, delivering in the
/// order `choices` picks; every member's result, or None if it delivered none; or the
/// first error a member's machine ended with, and that member's rank.
fn run(
    members: Vec<Member>,
    ops: Vec<Op>,
    choices: impl FnMut(usize) -> usize,
) -> Result<Vec<Option<RedData>>, (usize, CollectiveError)> {
    run_counted(members, ops, choices).map(|(done, _)| done)
}

/// Every member's result, and the number of messages the members sent.
type Counted = (Vec<Option<RedData>>, usize);

/// `run`, also giving the number of messages the members sent.
fn run_counted(
    members: Vec<Member>,
    ops: Vec<Op>,
    mut choices: impl FnMut(usize) -> usize,
) -> Result<Counted, (usize, CollectiveError)> {
    let n = members.len();
    let rank_of = |pe: Pe| {
        members
            .iter()
            .position(|m| m.my_pe() == pe)
            .expect("a member PE")
    };
    let mut machines: Vec<Option<Box<dyn Machine>>> = vec![];
    let mut roots = vec![];
    for (r, op) in ops.into_iter().enumerate() {
        let (root, op) = op.reroot(members[r].has_roster());
        machines.push(Some(op.machine(r as u32, members[r].has_roster())));
        roots.push(root);
    }
    let mut started = vec![false; n];
    let mut done: Vec<Option<Option<RedData>>> = vec![None; n];
    let mut inbox: Vec<(usize, u32, u32, Piece)> = vec![];
    let mut sent = 0;
    let mut post = |inbox: &mut Vec<_>, from: u32, out: Out| {
        for (pe, tag, piece) in out.sends {
            sent += 1;
            inbox.push((rank_of(pe), from, tag, piece));
        }
    };
    loop {
        // Actions: start an unstarted member, or deliver a message to a started one.
        let unstarted: Vec<usize> = (0..n).filter(|&r| !started[r]).collect();
        // A message for a finished member stays in the inbox: after a success that is
        // a leftover (asserted below); after a failure, a member may have finished
        // before the mismatch reached it, as on the runtime.
        let ready: Vec<usize> = (0..inbox.len())
            .filter(|&i| started[inbox[i].0] && machines[inbox[i].0].is_some())
            .collect();
        let total = unstarted.len() + ready.len();
        if total == 0 {
            break;
        }
        let pick = choices(total);
        let mut out = Out::default();
        let (r, step) = if pick < unstarted.len() {
            let r = unstarted[pick];
            started[r] = true;
            let m = machines[r].as_mut().expect("a started member runs");
            (r, m.start(&Rerooted::new(&members[r], roots[r]), &mut out))
        } else {
            let (to, from, tag, piece) = inbox.swap_remove(ready[pick - unstarted.len()]);
            let m = machines[to]
                .as_mut()
                .expect("only running members are ready");
            let view = Rerooted::new(&members[to], roots[to]);
            let got = Received { from, tag, piece };
            (to, m.receive(&view, got, &mut out))
        };
        post(&mut inbox, r as u32, out);
        if let Step::Done(v) = step.map_err(|e| (r, e))? {
            machines[r] = None;
            done[r] = Some(v);
        }
    }
    assert!(inbox.is_empty(), "messages left over");
    let done = done
        .into_iter()
        .map(|d| d.expect("every member finished"))
        .collect();
    Ok((done, sent))
}

/// Choices in 0..m drawn from `seed`: a schedule for `run`, or a shuffle.
fn picks(seed: u64) -> impl FnMut(usize) -> usize {
    let mut s = seed;
    move |m| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as usize % m
    }
}

/// Members of a strided range (roster) or of a shuffled algorithm section (tree only).
fn members(n: u32, k: u32, tree: bool, seed: u64) -> Vec<Member> {
    if !tree {
        let sec = RangeSection::world(3 * n + 2, k)
            .unwrap()
            .split(2, 3 * n + 1, 3)
            .unwrap();
        return (0..n)
            .map(|r| RangeMember::new(sec, sec.pe(r).unwrap()).unwrap().into())
            .collect();
    }
    let mut pes: Vec<Pe> = (0..n).map(|r| r * 5 + 1).collect();
    let mut pick = picks(seed);
    for i in (1..pes.len()).rev() {
        pes.swap(i, pick(i + 1));
    }
    (0..n)
        .map(|r| {
            let section = Section {
                id: SectionId::created(pes[0], 9, n),
                rank: r,
                size: n,
                k,
                parent: kary::parent(r, k).map(|p| pes[p as usize]),
                children: kary::children(r, n, k).map(|c| pes[c as usize]).collect(),
            };
            TreeMember::new(section, pes[r as usize]).into()
        })
        .collect()
}

fn values(n: u32, len: usize, seed: u64) -> Vec<RedData> {
    (0..n)
        .map(|r| {
            let f = |i: usize| {
                ((seed ^ (u64::from(r) * 977 + i as u64)).wrapping_mul(0x9E37_79B9) >> 7) % 10_000
            };
            RedData::F64(
                (0..len)
                    .map(|i| (f(i) as f64 - 5000.0) * 10f64.powi((f(i) % 30) as i32 - 15))
                    .collect(),
            )
        })
        .collect()
}

fn add(a: &RedData, b: &RedData) -> RedData {
    match (a, b) {
        (RedData::F64(a), RedData::F64(b)) => {
            RedData::F64(a.iter().zip(b).map(|(x, y)| x + y).collect())
        }
        _ => unreachable!(),
    }
}

fn cat(vs: &[RedData]) -> RedData {
    RedData::F64(
        vs.iter()
            .flat_map(|v| match v {
                RedData::F64(x) => x.clone(),
                _ => unreachable!(),
            })
            .collect(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    #[test]
    fn every_collective_survives_any_schedule(
        n in 1u32..34,
        k in 2u32..6,
        tree in any::<bool>(),
        which in 0usize..15,
        len in prop::sample::select(vec![0usize, 1, 2, 3, 4, 5]),
        root_pick in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let members = members(n, k, tree && !(8..12).contains(&which), seed);
        let vals = values(n, len, seed);
        let root = root_pick % n;
        let sum = Fold::new(Reducer::Sum, &vals[0]).unwrap();
        let uvals: Vec<RedData> = vals.iter().map(|v| match v {
            RedData::F64(x) => RedData::U64(x.iter().map(|f| f.to_bits() >> 3).collect()),
            _ => unreachable!(),
        }).collect();
        let usum = Fold::new(Reducer::Sum, &uvals[0]).unwrap();
        let uprefix = |upto: usize| uvals[1..upto].iter().fold(uvals[0].clone(), |a, v| match (a, v) {
            (RedData::U64(a), RedData::U64(b)) => RedData::U64(a.iter().zip(b).map(|(x, y)| x.wrapping_add(*y)).collect()),
            _ => unreachable!(),
        });
        let concat = Fold::new(Reducer::Concat, &vals[0]).unwrap();
        let prefix = |upto: usize| vals[1..upto].iter().fold(vals[0].clone(), |a, v| add(&a, v));
        let op = |r: usize| -> Op {
            let value = vals[r].clone();
            match which {
                0 => Op::Broadcast { root, value: (r as u32 == root).then_some(value) },
                1 => Op::Reduce { fold: sum, value, delivery: Delivery::Root(root) },
                2 => Op::Reduce { fold: sum, value, delivery: Delivery::All },
                3 => Op::Reduce { fold: sum, value, delivery: Delivery::Barrier },
                4 => Op::Scan { fold: sum, value, exclusive: false },
                5 => Op::Scan { fold: sum, value, exclusive: true },
                6 => Op::Reduce { fold: Fold::new(Reducer::Gather, &vals[0]).unwrap(), value, delivery: Delivery::Root(root) },
                7 => Op::Reduce { fold: concat, value, delivery: Delivery::All },
                8 => Op::Allgather { algorithm: Allgather::Bruck(1 + (seed % 3) as u32), value },
                9 => Op::Allgather { algorithm: Allgather::StandardExchange(1 + (seed % 3) as u32), value },
                10 => Op::Allgather { algorithm: Allgather::Ring, value },
                11 => Op::Allgather { algorithm: Allgather::Bruck(1), value },
                12 => Op::Scan { fold: usum, value: uvals[r].clone(), exclusive: false },
                13 => Op::Scan { fold: usum, value: uvals[r].clone(), exclusive: true },
                _ => Op::Reduce { fold: usum, value: uvals[r].clone(), delivery: Delivery::Root(root) },
            }
        };
        let ops: Vec<Op> = (0..n as usize).map(op).collect();
        let got = run(members, ops, picks(seed)).expect("no member's part fails");
        let everywhere = |v: RedData| vec![Some(v); n as usize];
        let at_root = |v: RedData| (0..n).map(|r| (r == root).then(|| v.clone())).collect::<Vec<_>>();
        let want: Vec<Option<RedData>> = match which {
            0 => everywhere(vals[root as usize].clone()),
            1 => at_root(prefix(n as usize)),
            2 => everywhere(prefix(n as usize)),
            3 => everywhere(RedData::List(vec![])),
            4 => (1..=n as usize).map(|r| Some(prefix(r))).collect(),
            5 => (0..n as usize).map(|r| Some(if r == 0 { RedData::F64(vec![0.0; len]) } else { prefix(r) })).collect(),
            6 => at_root(RedData::List(vals.clone())),
            12 => (1..=n as usize).map(|r| Some(uprefix(r))).collect(),
            13 => (0..n as usize).map(|r| Some(if r == 0 { RedData::U64(vec![0; len]) } else { uprefix(r) })).collect(),
            14 => at_root(uprefix(n as usize)),
            _ => everywhere(cat(&vals)),
        };
        prop_assert_eq!(got, want);
    }
}

/// How the odd member's value differs from the others' three `u64`s.
#[derive(Debug, Clone, Copy)]
enum Odd {
    /// Three `i64`s.
    Kind,
    /// Two `u64`s.
    Length,
    /// Three `f64`s (rank lists where the others send plain values).
    Float,
}

impl Odd {
    fn value(self) -> RedData {
        match self {
            Odd::Kind => RedData::I64(vec![1, 2, 3]),
            Odd::Length => RedData::U64(vec![1, 2]),
            Odd::Float => RedData::F64(vec![1.0, 2.0, 3.0]),
        }
    }
}

/// One member's value differs in kind or length: the collective ends with a
/// `Mismatch` at some member, under any schedule, on trees and rosters, and the error
/// says what disagreed.
#[test]
fn values_that_do_not_combine_end_with_a_typed_mismatch() {
    for seed in 0..60u64 {
        let n = 2 + (seed % 11) as u32;
        let k = 2 + (seed % 3) as u32;
        let odd_rank = (chorus_core::mix64(seed) % u64::from(n)) as usize;
        let root = (chorus_core::mix64(seed ^ 1) % u64::from(n)) as u32;
        for which in 0..8 {
            // Allgathers by rounds need a roster; the rest run on both kinds of section.
            let tree = which < 5 && seed % 2 == 0;
            let odd = match which {
                // Concatenations take any lengths.
                2 | 5.. => Odd::Kind,
                _ => [Odd::Kind, Odd::Length, Odd::Float][seed as usize % 3],
            };
            let said = mismatch_said(which, odd, tree);
            let op = |r: usize| {
                let v = if r == odd_rank {
                    odd.value()
                } else {
                    RedData::U64(vec![4, 5, 6])
                };
                mismatch_op(which, v, root, 1 + (seed % 3) as u32)
            };
            let got = run(
                members(n, k, tree, seed),
                (0..n as usize).map(op).collect(),
                picks(seed),
            );
            let case = format!("seed {seed} op {which} n {n} tree {tree} {odd:?} at {odd_rank}");
            match got {
                Err((_, CollectiveError::Mismatch(what))) => {
                    assert!(what.contains(said), "{case}: {what}")
                }
                other => panic!("{case}: {other:?}"),
            }
        }
    }
}

/// What the mismatch of collective `which` says when one member's value is `odd`.
fn mismatch_said(which: u32, odd: Odd, tree: bool) -> &'static str {
    match (which, odd) {
        (2 | 5.., _) => "cannot concatenate",
        // On a tree every member climbs it and rank 0 meets both kinds; with
        // a roster integer members double and the f64 member climbs.
        (3 | 4, Odd::Float) if tree => "cannot combine",
        (_, Odd::Kind) => "cannot combine",
        (_, Odd::Length) => "different lengths",
        (_, Odd::Float) => "f64 values with integer ones",
    }
}

/// Collective `which` of the mismatch test over value `v`: reduces to `root` or all,
/// scans, and allgathers (`ag` rounds' parameter).
fn mismatch_op(which: u32, v: RedData, root: u32, ag: u32) -> Op {
    let fold = Fold::new(Reducer::Sum, &v).unwrap();
    match which {
        0 => Op::Reduce {
            fold,
            value: v,
            delivery: Delivery::Root(root),
        },
        1 => Op::Reduce {
            fold,
            value: v,
            delivery: Delivery::All,
        },
        2 => Op::Reduce {
            fold: Fold::new(Reducer::Concat, &v).unwrap(),
            value: v,
            delivery: Delivery::Root(root),
        },
        3 => Op::Scan {
            fold,
            value: v,
            exclusive: false,
        },
        4 => Op::Scan {
            fold,
            value: v,
            exclusive: true,
        },
        5 => Op::Allgather {
            algorithm: Allgather::Bruck(ag),
            value: v,
        },
        6 => Op::Allgather {
            algorithm: Allgather::StandardExchange(ag),
            value: v,
        },
        _ => Op::Allgather {
            algorithm: Allgather::Ring,
            value: v,
        },
    }
}

/// The mix a scan could not catch before the probes: every `f64` member ranks below
/// every integer one, so no doubling message ever reached a tree member and neither
/// side heard from the other. Now it ends with a mismatch under any schedule.
#[test]
fn a_scan_with_f64_members_below_integer_ones_ends_with_a_mismatch() {
    for seed in 0..40u64 {
        let n = 3 + (seed % 6) as u32;
        let floats = 1 + (seed % u64::from(n - 1)) as usize;
        let op = |r: usize| {
            let value = if r < floats {
                RedData::F64(vec![1.5])
            } else {
                RedData::U64(vec![2])
            };
            Op::Scan {
                fold: Fold::new(Reducer::Sum, &value).unwrap(),
                value,
                exclusive: seed % 2 == 1,
            }
        };
        let got = run(
            members(n, 2 + (seed % 3) as u32, false, seed),
            (0..n as usize).map(op).collect(),
            picks(seed),
        );
        match got {
            Err((_, CollectiveError::Mismatch(what))) => assert!(
                what.contains("cannot combine f64 values with integer ones"),
                "seed {seed}: {what}"
            ),
            other => panic!("seed {seed} n {n} floats {floats}: {other:?}"),
        }
    }
}

/// The block member `r` addresses to rank `j` in an alltoallv: lengths differ.
fn block(r: u32, j: u32, seed: u64) -> Vec<u64> {
    let len = (u64::from(r) * 7 + u64::from(j) * 3 + seed) % 4;
    (0..len)
        .map(|i| seed ^ (u64::from(r) << 40 | u64::from(j) << 20 | i))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

    #[test]
    fn alltoall_matches_the_sequential_exchange(
        n in 1u32..40,
        bruck in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let algorithm = if bruck { Alltoall::Bruck } else { Alltoall::Pairwise };
        let ops = (0..n)
            .map(|r| Op::Alltoall {
                algorithm,
                blocks: (0..n).map(|j| RedData::U64(block(r, j, seed))).collect(),
            })
            .collect();
        let (got, sent) = run_counted(members(n, 3, false, seed), ops, picks(seed)).unwrap();
        for (j, got) in got.into_iter().enumerate() {
            let want: Vec<u64> = (0..n).flat_map(|r| block(r, j as u32, seed)).collect();
            prop_assert_eq!(got, Some(RedData::U64(want)), "rank {}", j);
        }
        prop_assert_eq!(sent as u64, algorithm.messages(n));
    }
}

#[test]
fn alltoall_messages_follow_each_algorithm() {
    assert_eq!(Alltoall::Pairwise.messages(8), 56);
    assert_eq!(Alltoall::Bruck.messages(8), 24);
    assert_eq!(Alltoall::Bruck.messages(9), 36);
    assert_eq!(Alltoall::Bruck.messages(1), 0);
}

#[test]
fn alltoall_refuses_a_wrong_block_count() {
    let ops = (0..4)
        .map(|_| Op::Alltoall {
            algorithm: Alltoall::Pairwise,
            blocks: vec![RedData::U64(vec![1]); 3],
        })
        .collect();
    let err = run(members(4, 2, false, 1), ops, picks(1)).unwrap_err();
    assert_eq!(err.1, CollectiveError::BlockCount { got: 3, size: 4 });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(13), ..ProptestConfig::default() })]

    #[test]
    fn scatter_gives_each_rank_its_block(
        n in 1u32..40,
        k in 2u32..6,
        tree in any::<bool>(),
        root_pick in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let root = root_pick % n;
        let ops = (0..n)
            .map(|r| Op::Scatter {
                root,
                blocks: (r == root)
                    .then(|| (0..n).map(|j| RedData::U64(block(root, j, seed))).collect()),
            })
            .collect();
        let (got, sent) = run_counted(members(n, k, tree, seed), ops, picks(seed)).unwrap();
        for (j, got) in got.into_iter().enumerate() {
            prop_assert_eq!(got, Some(RedData::U64(block(root, j as u32, seed))), "rank {}", j);
        }
        // n - 1 down the tree, plus the hops up to rank 0 without a roster.
        let mut up = 0;
        let mut r = root;
        while let Some(p) = kary::parent(r, k).filter(|_| tree) {
            up += 1;
            r = p;
        }
        prop_assert_eq!(sent as u32, n - 1 + up);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(17), ..ProptestConfig::default() })]

    #[test]
    fn reduce_scatter_gives_each_rank_its_block_of_the_reduction(
        n in 1u32..34,
        k in 2u32..6,
        tree in any::<bool>(),
        min in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let counts: Vec<u32> = (0..n).map(|j| ((u64::from(j) + seed) % 3) as u32).collect();
        let len: u32 = counts.iter().sum();
        let value = |r: u32| -> Vec<u64> {
            (0..len).map(|i| (seed ^ (u64::from(r) * 131 + u64::from(i))) % 100_000).collect()
        };
        let reducer = if min { Reducer::Min } else { Reducer::Sum };
        let fold = Fold::new(reducer, &RedData::U64(value(0))).unwrap();
        let ops = (0..n)
            .map(|r| Op::ReduceScatter { fold, value: RedData::U64(value(r)), counts: counts.clone() })
            .collect();
        let got = run(members(n, k, tree, seed), ops, picks(seed)).unwrap();
        let reduced: Vec<u64> = (0..len as usize)
            .map(|i| {
                let column = (0..n).map(|r| value(r)[i]);
                if min { column.min().unwrap() } else { column.sum() }
            })
            .collect();
        let mut at = 0;
        for (j, got) in got.into_iter().enumerate() {
            let c = counts[j] as usize;
            prop_assert_eq!(got, Some(RedData::U64(reduced[at..at + c].to_vec())), "rank {}", j);
            at += c;
        }
    }
}
