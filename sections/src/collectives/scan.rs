//! Inclusive and exclusive prefix reductions by rank over the section tree: members'
//! values climb to rank 0 as rank lists, rank 0 folds them in rank order, and each
//! subtree's prefixes go back down to it. Exact for every built-in reducer; needs only
//! tree neighbours; O(subtree) data per member (O(size) at rank 0).
//!
//! Rank 0's exclusive prefix is the reducer's identity shaped like its own value
//! (zeros for `Sum`, the largest value for `Min`, an empty vector for `Concat`, ...).

use super::error::CollectiveError;
use super::machine::{child_toward, children, Machine, Out, Step, Stepped};
use super::topology::Topology;
use super::value::{merge_ranked, Fold, Piece};
use crate::kary;
use chorus_core::RedData;

const UP: u32 = 0;
const DOWN: u32 = 1;

/// One member's scan.
pub struct Scan {
    fold: Fold,
    exclusive: bool,
    values: Vec<(u32, RedData)>,
    waiting: u32,
}

impl Scan {
    /// A scan of this member's `value` (rank `rank`) with `fold`.
    pub fn new(fold: Fold, value: RedData, rank: u32, exclusive: bool) -> Self {
        Scan {
            fold,
            exclusive,
            values: vec![(rank, value)],
            waiting: 0,
        }
    }

    fn climb(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let values = std::mem::take(&mut self.values);
        if me.rank() != 0 {
            let parent = me.parent_pe().expect("a non-root has a parent");
            out.send(parent, UP, Piece::Ranked(values));
            return Ok(Step::Pending);
        }
        let prefixes = self.fold.prefixes(values, self.exclusive)?;
        Self::scatter(me, prefixes, out)
    }

    /// Keep this member's prefix and hand each child its subtree's.
    fn scatter(me: &dyn Topology, prefixes: Vec<(u32, RedData)>, out: &mut Out) -> Stepped {
        let kids = children(me);
        let mut parts: Vec<Vec<(u32, RedData)>> = vec![Vec::new(); kids.len()];
        let mut mine = None;
        for (rank, p) in prefixes {
            match child_toward(me.rank(), rank, me.k()) {
                Some(i) => parts[i as usize].push((rank, p)),
                None if rank == me.rank() => mine = Some(p),
                None => {
                    return Err(CollectiveError::Protocol(format!(
                        "the prefix of rank {rank} reached rank {}, outside its subtree",
                        me.rank()
                    )))
                }
            }
        }
        let Some(mine) = mine else {
            return Err(CollectiveError::Protocol(format!(
                "the prefixes for rank {}'s subtree lack its own",
                me.rank()
            )));
        };
        for (pe, part) in kids.into_iter().zip(parts) {
            out.send(pe, DOWN, Piece::Ranked(part));
        }
        Ok(Step::Done(Some(mine)))
    }
}

impl Machine for Scan {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        self.waiting = kary::num_children(me.rank(), me.size(), me.k());
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Ok(Step::Pending)
        }
    }

    fn receive(
        &mut self,
        me: &dyn Topology,
        _from: u32,
        tag: u32,
        piece: Piece,
        out: &mut Out,
    ) -> Stepped {
        if tag == DOWN {
            return Self::scatter(me, piece.ranked()?, out);
        }
        let Some(waiting) = self.waiting.checked_sub(1) else {
            return Err(CollectiveError::Protocol(format!(
                "rank {} got more values from below than it has subtrees",
                me.rank()
            )));
        };
        let values = std::mem::take(&mut self.values);
        self.values = merge_ranked(values, piece.ranked()?);
        self.waiting = waiting;
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Ok(Step::Pending)
        }
    }
}
