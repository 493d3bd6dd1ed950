//! The paper's baseline: the same quicksort as a plain rsmpi program that makes a
//! native MPI communicator for every subtask with MPI_Comm_split, level by level.
//!
//! MPI collectives block, so a janus PE cannot progress its two groups together: it
//! runs them one after the other, in position order (which cannot deadlock: the
//! leftmost group waits on nobody). Each group splits its communicator twice per
//! level, once per child, because a janus PE belongs to both children. Data moves
//! point to point as in the chorus version; base cases are the same.

use super::base::BaseCase;
use super::input;
use super::key::Elem;
use super::layout::Layout;
use super::pivot;
use super::spec::SortSpec;
use super::task::{self, Partitioned, TaskKey};
use super::verify::{self, Outcome, PeRecord, RECORD_WORDS};
use mpi::collective::SystemOperation;
use mpi::request::WaitGuard;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use std::collections::HashMap;
use thiserror::Error;

/// Tag of base-case messages (levels use their depth as tag).
const BASE_TAG: i32 = 1 << 20;

/// Why the baseline did not produce an outcome.
#[derive(Debug, Error)]
pub enum SplitError {
    /// The parameters cannot run.
    #[error("{0}")]
    Spec(String),
    /// The records did not add up.
    #[error("checking the result: {0}")]
    Check(String),
}

/// What one baseline sort measured (rank 0).
#[derive(Debug, Clone)]
pub struct SplitOutcome {
    /// The sort's outcome, timed like the chorus versions' (slowest rank).
    pub outcome: Outcome,
    /// The slowest rank's time with its MPI_Comm_split calls taken out, seconds. It is
    /// low rather than high (a split also waits for slower members, and that wait is
    /// taken out too), so whole / this bounds from above what free sections can gain.
    pub without_split_s: f64,
}

/// A distributed task this rank takes part in, with its communicator.
struct Group {
    key: TaskKey,
    comm: SimpleCommunicator,
    elems: Vec<Elem>,
}

/// A flat message: the task's three words, then (key, origin) pairs.
fn pack(key: TaskKey, elems: &[Elem]) -> Vec<u64> {
    let mut v = key.words().to_vec();
    v.extend(elems.iter().flat_map(|&(k, g)| [k, g]));
    v
}

fn unpack(v: &[u64]) -> (TaskKey, Vec<Elem>) {
    let key = TaskKey::from_words(v).expect("a message names its task");
    (key, v[3..].chunks_exact(2).map(|c| (c[0], c[1])).collect())
}

/// Sort once on `world` (every rank calls this); rank 0 gets the outcome.
pub fn run(
    spec: &SortSpec,
    world: &SimpleCommunicator,
) -> Result<Option<SplitOutcome>, SplitError> {
    spec.validate().map_err(SplitError::Spec)?;
    let p = world.size() as u32;
    let me = world.rank() as u32;
    let layout = Layout::new(spec.n, p);
    let (lo, hi) = (layout.start(me), layout.start(me + 1));
    let mine = input::generate(spec.input, spec.keys, spec.seed, spec.n, lo, hi - lo);
    let mut rec = PeRecord {
        fp_in: input::fingerprint(&mine),
        ..PeRecord::default()
    };
    let mut in_split = 0.0f64;
    world.barrier();
    let t0 = mpi::time();
    let mut bases: Vec<BaseCase> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    if spec.n > 0 {
        let root = TaskKey {
            a: 0,
            b: spec.n,
            depth: 0,
        };
        place(
            &layout,
            me,
            root,
            Some(world.duplicate()),
            mine,
            &mut groups,
            &mut bases,
        );
    }
    while !groups.is_empty() {
        groups = level(
            spec,
            &layout,
            world,
            me,
            groups,
            &mut bases,
            &mut rec,
            &mut in_split,
        );
    }
    let slice = solve_bases(world, bases);
    let t1 = mpi::time();
    let rec = PeRecord {
        fp_in: rec.fp_in,
        t0: 0.0,
        t1: t1 - t0,
        janus: rec.janus,
        sections: rec.sections,
        levels: rec.levels,
        max_concurrent: rec.max_concurrent,
        ..PeRecord::of_slice(me, &slice)
    };
    let words = rec.words();
    let root = world.process_at_rank(0);
    let rest = t1 - t0 - in_split;
    let mut without_split_s = 0.0f64;
    if me == 0 {
        let mut all = vec![0u64; RECORD_WORDS * p as usize];
        root.gather_into_root(&words[..], &mut all[..]);
        root.reduce_into_root(&rest, &mut without_split_s, SystemOperation::max());
        let outcome = verify::check(&layout, &all).map_err(SplitError::Check)?;
        Ok(Some(SplitOutcome {
            outcome,
            without_split_s,
        }))
    } else {
        root.gather_into(&words[..]);
        root.reduce_into(&rest, SystemOperation::max());
        Ok(None)
    }
}

/// A complete task: distributed (with its communicator) or a base case.
fn place(
    layout: &Layout,
    me: u32,
    key: TaskKey,
    comm: Option<SimpleCommunicator>,
    elems: Vec<Elem>,
    groups: &mut Vec<Group>,
    bases: &mut Vec<BaseCase>,
) {
    let (first, last) = layout.span(key.a, key.b);
    if last - first >= 2 {
        let comm = comm.expect("a distributed task has a communicator");
        groups.push(Group { key, comm, elems });
    } else {
        let partner = (first != last).then_some((if me == first { last } else { first }, None));
        bases.push(BaseCase {
            key,
            mine: elems,
            partner,
            left: me == first,
        });
    }
}

/// One level of every group this rank is in (in position order), then the exchange;
/// returns the next level's groups and adds the seconds spent in MPI_Comm_split to
/// `in_split`.
#[allow(clippy::too_many_arguments)]
fn level(
    spec: &SortSpec,
    layout: &Layout,
    world: &SimpleCommunicator,
    me: u32,
    mut groups: Vec<Group>,
    bases: &mut Vec<BaseCase>,
    rec: &mut PeRecord,
    in_split: &mut f64,
) -> Vec<Group> {
    groups.sort_by_key(|g| g.key.a);
    let depth = groups[0].key.depth;
    rec.levels = rec.levels.max(u64::from(depth) + 1);
    rec.max_concurrent = rec.max_concurrent.max(groups.len() as u64);
    let (lo, hi) = (layout.start(me), layout.start(me + 1));
    let mut sends: Vec<(u32, Vec<u64>)> = Vec::new();
    let mut fill: HashMap<TaskKey, (Option<SimpleCommunicator>, Vec<Elem>)> = HashMap::new();
    let mut expect = 0u64;
    for g in groups {
        let key = g.key;
        let me_first = lo.max(key.a);
        let pivot = pivot_of(spec, &g, me_first);
        let (small, large): (Vec<Elem>, Vec<Elem>) = g.elems.into_iter().partition(|e| *e < pivot);
        let (before, total) = small_counts(&g.comm, small.len() as u64);
        let children = key.children(total);
        let cut = children[0].b;
        if !children[0].is_empty() && !children[1].is_empty() && lo < cut && cut < hi {
            rec.janus += 1;
        }
        // One MPI_Comm_split per child over the parent's communicator: a janus rank
        // is in both.
        for child in children {
            let member = !child.is_empty() && layout.overlap(me, child.a, child.b) > 0;
            let comm = child_comm(layout, &g.comm, child, member, rec, in_split);
            if member {
                expect += layout.overlap(me, child.a, child.b);
                fill.insert(child, (comm, Vec::new()));
            }
        }
        let part = Partitioned {
            small_before: before,
            small,
            large,
            small_total: total,
        };
        for r in task::routes(layout, key, me_first, part) {
            if r.pe == me {
                expect -= r.elems.len() as u64;
                fill.get_mut(&r.child)
                    .expect("a route to me is a child I am in")
                    .1
                    .extend(r.elems);
            } else {
                sends.push((r.pe, pack(r.child, &r.elems)));
            }
        }
    }
    let mut got = 0u64;
    exchange(world, &sends, depth as i32, expect > 0, |key, elems| {
        got += elems.len() as u64;
        fill.get_mut(&key)
            .expect("data for a child I am in")
            .1
            .extend(elems);
        got < expect
    });
    let mut next = Vec::new();
    for (key, (comm, elems)) in fill {
        place(layout, me, key, comm, elems, &mut next, bases);
    }
    next
}

/// The pivot of group `g`'s task: the median of its samples, which the members
/// draw from the elements they hold (this rank's first position is `me_first`).
fn pivot_of(spec: &SortSpec, g: &Group, me_first: u64) -> Elem {
    // Every sample slot is owned by one member: a MIN allreduce fills them all.
    let mut slots = vec![u64::MAX; 2 * spec.samples as usize];
    for (j, pos) in pivot::sample_positions(spec.seed, g.key, spec.samples).enumerate() {
        if me_first <= pos && pos < me_first + g.elems.len() as u64 {
            let (k, o) = g.elems[(pos - me_first) as usize];
            slots[2 * j] = k;
            slots[2 * j + 1] = o;
        }
    }
    let mut sampled = vec![0u64; slots.len()];
    g.comm
        .all_reduce_into(&slots[..], &mut sampled[..], SystemOperation::min());
    pivot::median(&sampled).expect("a task draws at least one sample")
}

/// The small elements held by the members before this rank, and by all of them, of
/// this rank's `small`.
fn small_counts(comm: &SimpleCommunicator, small: u64) -> (u64, u64) {
    let mut before = 0u64;
    comm.exclusive_scan_into(&small, &mut before, SystemOperation::sum());
    if comm.rank() == 0 {
        before = 0;
    }
    let mut total = 0u64;
    comm.all_reduce_into(&small, &mut total, SystemOperation::sum());
    (before, total)
}

/// The communicator of `child` if it is distributed, split from its parent's `comm`
/// (every member of the parent calls this; `member` says whether this rank is in the
/// child). Counts the section on the child's rank 0 and the time spent splitting.
fn child_comm(
    layout: &Layout,
    comm: &SimpleCommunicator,
    child: TaskKey,
    member: bool,
    rec: &mut PeRecord,
    in_split: &mut f64,
) -> Option<SimpleCommunicator> {
    let distributed = !child.is_empty() && {
        let (f, l) = layout.span(child.a, child.b);
        l - f >= 2
    };
    if !distributed {
        return None;
    }
    let colour = if member {
        Color::with_value(0)
    } else {
        Color::undefined()
    };
    let t = mpi::time();
    let c = comm.split_by_color(colour);
    *in_split += mpi::time() - t;
    if c.as_ref().is_some_and(|c| c.rank() == 0) {
        rec.sections += 1;
    }
    c
}

/// Post `sends` (PE, packed task data) with `tag`; if `receive`, hand every packed
/// message that arrives with `tag` to `take` until it returns false. Returns once the
/// sends are complete too.
fn exchange(
    world: &SimpleCommunicator,
    sends: &[(u32, Vec<u64>)],
    tag: i32,
    receive: bool,
    mut take: impl FnMut(TaskKey, Vec<Elem>) -> bool,
) {
    mpi::request::scope(|scope| {
        let _guards: Vec<_> = sends
            .iter()
            .map(|(pe, buf)| {
                WaitGuard::from(world.process_at_rank(*pe as i32).immediate_send_with_tag(
                    scope,
                    &buf[..],
                    tag,
                ))
            })
            .collect();
        let mut more = receive;
        while more {
            let (v, _) = world.any_process().receive_vec_with_tag::<u64>(tag);
            let (key, elems) = unpack(&v);
            more = take(key, elems);
        }
    });
}

/// Exchange two-PE base cases with the partners, then sort every base case.
fn solve_bases(world: &SimpleCommunicator, mut bases: Vec<BaseCase>) -> Vec<Elem> {
    let sends: Vec<(u32, Vec<u64>)> = bases
        .iter()
        .filter_map(|b| {
            b.partner
                .as_ref()
                .map(|(pe, _)| (*pe, pack(b.key, &b.mine)))
        })
        .collect();
    let mut left = sends.len();
    exchange(world, &sends, BASE_TAG, left > 0, |key, elems| {
        let b = bases
            .iter_mut()
            .find(|b| b.key == key)
            .expect("a partner's base case is mine too");
        if let Some((_, slot)) = &mut b.partner {
            *slot = Some(elems);
        }
        left -= 1;
        left > 0
    });
    bases.sort_by_key(|b| b.key.a);
    bases.into_iter().flat_map(|b| b.solve().0).collect()
}
