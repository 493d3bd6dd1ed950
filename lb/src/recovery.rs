//! Recovery of walker groups after PE failures (`--sim-kill`): the driver's plan of
//! new groups from the survivors' committed chain states and its replicas.
//!
//! A step's allreduce commits it: every member that receives the result applies it,
//! so the survivors of a group hold the chain's state after its last step, or one
//! step behind if the failure cut the result's way to some of them. When a PE
//! fails every walker stops, drops whatever step or exchange it had in flight (their
//! results carry the old epoch and are ignored) and sends the driver its committed
//! state. Once every live PE has, the driver takes for each unfinished chain the most
//! advanced state any survivor holds — or, when every holder died, its replica (group
//! leaders send the driver each commit) — splits the live PEs into one contiguous
//! group per chain, and resumes them. A step is thus committed once in the state that
//! goes on; one cut in flight is redone, never applied twice. The step ledger
//! ([`crate::walker::ledger_entry`]) carried in every state checks it at the chain's
//! end.

use crate::walker::GroupState;
use chorus_core::Pe;
use std::collections::{BTreeMap, BTreeSet};

/// One group of the plan: its first and last world PE and its chain's state (None
/// for an idle group).
pub type PlannedGroup = (u32, u32, Option<GroupState>);

/// The groups after a recovery: the most advanced state of every unfinished chain
/// (`open`), from the survivors' `snapshots` or else the driver's `replicas`, each
/// given a contiguous share of the live PEs (dead PEs inside a range are skipped by
/// its members); chains beyond the live PEs are returned apart, for the driver.
pub fn plan(
    npes: u32,
    dead: &BTreeSet<Pe>,
    open: &[(u32, u64)],
    snapshots: &BTreeMap<Pe, GroupState>,
    replicas: &BTreeMap<u32, GroupState>,
) -> (Vec<PlannedGroup>, Vec<GroupState>) {
    let mut best: BTreeMap<u32, GroupState> = BTreeMap::new();
    for s in snapshots.values().chain(replicas.values()) {
        if s.chain == u32::MAX {
            continue;
        }
        let e = best.entry(s.chain).or_insert(*s);
        if s.next_item > e.next_item {
            *e = *s;
        }
    }
    let states: Vec<GroupState> = open
        .iter()
        .map(|&(chain, items)| {
            best.get(&chain).copied().unwrap_or(GroupState {
                first: 0,
                last: 0,
                chain,
                left: items,
                next_item: 0,
                items: 0,
                index_sum: 0,
                ledger: 0,
            })
        })
        // A chain whose last step is committed has ended: its end is on its way.
        .filter(|s| s.left > 0)
        .collect();
    let live: Vec<Pe> = (0..npes).filter(|p| !dead.contains(p)).collect();
    let n = states.len().min(live.len());
    let (walked, extra) = states.split_at(n);
    if walked.is_empty() {
        return (vec![(0, npes - 1, None)], extra.to_vec());
    }
    let start = |i: usize| live[i * live.len() / n];
    let groups = walked
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let first = if i == 0 { 0 } else { start(i) };
            let last = if i + 1 == n {
                npes - 1
            } else {
                start(i + 1) - 1
            };
            (first, last, Some(*s))
        })
        .collect();
    (groups, extra.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(chain: u32, next: u64, left: u64) -> GroupState {
        GroupState {
            first: 0,
            last: 0,
            chain,
            left,
            next_item: next,
            items: next,
            index_sum: next * next.saturating_sub(1) / 2,
            ledger: next,
        }
    }

    #[test]
    fn the_most_advanced_state_wins_and_groups_tile_the_pes() {
        let dead: BTreeSet<Pe> = [2, 3, 9].into();
        let snaps: BTreeMap<Pe, GroupState> =
            [(0, st(0, 4, 6)), (1, st(0, 5, 5)), (4, st(1, 2, 1))].into();
        // Chain 2's holders all died: its replica stands in.
        let reps: BTreeMap<u32, GroupState> = [(2, st(2, 7, 3)), (0, st(0, 3, 7))].into();
        let open = [(0, 10), (1, 3), (2, 10), (3, 5)];
        let (groups, extra) = plan(10, &dead, &open, &snaps, &reps);
        assert!(extra.is_empty());
        let next: Vec<u64> = groups.iter().map(|g| g.2.unwrap().next_item).collect();
        assert_eq!(next, vec![5, 2, 7, 0]);
        assert_eq!(groups[0].0, 0);
        assert_eq!(groups[3].1, 9);
        for w in groups.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
        // Every group holds a live PE.
        for g in &groups {
            assert!((g.0..=g.1).any(|p| !dead.contains(&p)), "{g:?}");
        }
    }

    #[test]
    fn more_chains_than_live_pes_leaves_the_rest_to_the_driver() {
        let dead: BTreeSet<Pe> = [1].into();
        let open = [(0, 1), (1, 1), (2, 1)];
        let (groups, extra) = plan(3, &dead, &open, &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(groups.len(), 2);
        assert_eq!(extra.len(), 1);
        let (groups, _) = plan(3, &dead, &[], &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(groups, vec![(0, 2, None)]);
    }
}
