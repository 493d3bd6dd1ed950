//! Partitions of the PEs into walker groups: what a collective exchange sees, the
//! default regrouping (idle groups join busy ones), and the check every new
//! partition must pass before PEs act on it.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use thiserror::Error;

/// A walker group: a contiguous range of world PEs and the chain it works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupLoad {
    /// First world PE (the group's leader, rank 0).
    pub first: u32,
    /// Last world PE.
    pub last: u32,
    /// The chain the group walks, or None once it has none left.
    pub chain: Option<u32>,
    /// Items of the chain not yet done.
    pub left: u64,
}

impl GroupLoad {
    /// Number of PEs in the group.
    pub fn size(&self) -> u32 {
        self.last - self.first + 1
    }

    /// True if the group still has items to run.
    pub fn busy(&self) -> bool {
        self.chain.is_some() && self.left > 0
    }
}

/// How a proposed partition is not one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BadPartition {
    /// The groups leave a gap, overlap, or do not end at the last PE.
    #[error("groups must tile PEs 0..{npes} in order; {detail}")]
    Tiling {
        /// The number of PEs the groups should tile.
        npes: u32,
        /// Where the tiling breaks.
        detail: String,
    },
    /// A chain that still had items lost its group, or got two.
    #[error("chain {chain} with {left} items left is walked by {groups} groups after regrouping")]
    Chain {
        /// The chain.
        chain: u32,
        /// Items of the chain not yet done.
        left: u64,
        /// How many groups of the new partition walk it.
        groups: usize,
    },
}

/// Check that `after` tiles 0..npes and gives every busy chain of `before` exactly
/// one group, with the same items left.
pub fn check(before: &[GroupLoad], after: &[GroupLoad], npes: u32) -> Result<(), BadPartition> {
    let mut next = 0u32;
    for g in after {
        if g.first != next || g.last < g.first {
            return Err(BadPartition::Tiling {
                npes,
                detail: format!("group {}..={} where PE {next} was due", g.first, g.last),
            });
        }
        next = g.last + 1;
    }
    if next != npes {
        return Err(BadPartition::Tiling {
            npes,
            detail: format!("the groups end at PE {next}"),
        });
    }
    // Counted once, not searched per chain: every PE checks every partition, so a
    // search per chain cost each regroup O(groups^2) per PE, and mcmc on 8192
    // simulated PEs minutes.
    // Only looked up, never iterated: its per-process seed cannot reach behaviour.
    let mut walking_by_chain: HashMap<(Option<u32>, u64), usize> = HashMap::new();
    walking_by_chain.reserve(after.len());
    for a in after {
        *walking_by_chain.entry((a.chain, a.left)).or_default() += 1;
    }
    for b in before.iter().filter(|g| g.busy()) {
        let walking = walking_by_chain
            .get(&(b.chain, b.left))
            .copied()
            .unwrap_or(0);
        if walking != 1 {
            return Err(BadPartition::Chain {
                chain: b.chain.unwrap_or_default(),
                left: b.left,
                groups: walking,
            });
        }
    }
    Ok(())
}

/// Idle groups join busy ones: every run of idle PEs goes to the nearest busy group
/// on its right (on its left past the last busy group); busy groups keep their PEs.
pub fn idle_join_busy(groups: &[GroupLoad]) -> Vec<GroupLoad> {
    let mut out: Vec<GroupLoad> = Vec::new();
    let mut pending_first: Option<u32> = None;
    for g in groups {
        if g.busy() {
            let first = pending_first.take().unwrap_or(g.first);
            out.push(GroupLoad { first, ..*g });
        } else if pending_first.is_none() {
            pending_first = Some(g.first);
        }
    }
    match (pending_first, out.last_mut(), groups.last()) {
        (Some(_), Some(tail), Some(end)) => tail.last = end.last,
        (Some(first), None, Some(end)) => out.push(GroupLoad {
            first,
            last: end.last,
            chain: None,
            left: 0,
        }),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(first: u32, last: u32, chain: Option<u32>, left: u64) -> GroupLoad {
        GroupLoad {
            first,
            last,
            chain,
            left,
        }
    }

    #[test]
    fn idle_runs_join_the_busy_group_to_their_right_or_left_at_the_end() {
        let before = [
            g(0, 3, Some(0), 0),
            g(4, 7, Some(1), 5),
            g(8, 11, None, 0),
            g(12, 15, Some(3), 9),
            g(16, 19, Some(4), 0),
        ];
        let after = idle_join_busy(&before);
        assert_eq!(after, vec![g(0, 7, Some(1), 5), g(8, 19, Some(3), 9)]);
        check(&before, &after, 20).expect("a partition");
    }

    #[test]
    fn all_idle_stays_one_idle_group() {
        let before = [g(0, 3, None, 0), g(4, 7, Some(1), 0)];
        let after = idle_join_busy(&before);
        assert_eq!(after, vec![g(0, 7, None, 0)]);
        check(&before, &after, 8).expect("a partition");
    }

    #[test]
    fn check_names_gaps_and_lost_chains() {
        let before = [g(0, 3, Some(0), 4), g(4, 7, Some(1), 2)];
        let gap = [g(0, 2, Some(0), 4), g(4, 7, Some(1), 2)];
        assert!(matches!(
            check(&before, &gap, 8),
            Err(BadPartition::Tiling { .. })
        ));
        let lost = [g(0, 7, Some(0), 4)];
        assert!(matches!(
            check(&before, &lost, 8),
            Err(BadPartition::Chain { chain: 1, .. })
        ));
    }
}
