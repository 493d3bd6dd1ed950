//! Inclusive and exclusive prefix reductions by rank over the section tree: members'
//! values climb to rank 0 as rank lists, rank 0 folds them in rank order, and each
//! subtree's prefixes go back down to it. Exact for every built-in reducer; needs only
//! tree neighbours; O(subtree) data per member (O(size) at rank 0).
//!
//! Rank 0's exclusive prefix is the reducer's identity shaped like its own value
//! (zeros for `Sum`, the largest value for `Min`, an empty vector for `Concat`, ...).
//!
//! With a roster, members whose values are integers scan by recursive doubling
//! instead, and a scan that mixes them with `f64` values would leave both sides
//! waiting for messages that never come. So where the kind of value decides the
//! algorithm, a tree member also sends a probe to rank + 1 and finishes only once the
//! one from rank - 1 came: every member then hears from the rank below it, and at
//! the first pair of ranks that scan differently one side sees the other's message
//! and ends the scan with a mismatch.

use super::error::CollectiveError;
use super::machine::{child_toward, children, Machine, Out, Received, Step, Stepped};
use super::topology::Topology;
use super::value::{merge_ranked, Fold, Piece};
use crate::kary;
use chorus_core::RedData;

const UP: u32 = 0;
const DOWN: u32 = 1;
/// Tag of the probe to rank + 1: no doubling round reaches it, and it is the largest
/// a tuned chain leaves a phase (`tune::chain`).
pub(crate) const PROBE: u32 = (1 << 24) - 1;

/// One member's scan.
pub struct Scan {
    fold: Fold,
    exclusive: bool,
    values: Vec<(u32, RedData)>,
    waiting: u32,
    /// Whether this member sends and awaits probes.
    probe: bool,
    /// The probe from rank - 1 has come (or none is due).
    probed: bool,
    /// This member's prefix, kept while its probe is due.
    result: Option<RedData>,
}

impl Scan {
    /// A scan of this member's `value` (rank `rank`) with `fold`; with `probe`, the
    /// member also exchanges probes with its rank neighbours (it has a roster, and
    /// members with other kinds of value would double).
    pub fn new(fold: Fold, value: RedData, rank: u32, exclusive: bool, probe: bool) -> Self {
        Scan {
            fold,
            exclusive,
            values: vec![(rank, value)],
            waiting: 0,
            probe,
            probed: !probe || rank == 0,
            result: None,
        }
    }

    /// Done once both the prefix and the probe due from rank - 1 are here.
    fn finish(&mut self, prefix: Option<RedData>) -> Stepped {
        if prefix.is_some() {
            self.result = prefix;
        }
        match (&self.result, self.probed) {
            (Some(_), true) => Ok(Step::Done(self.result.take())),
            _ => Ok(Step::Pending),
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
        let mine = Self::scatter(me, prefixes, out)?;
        self.finish(Some(mine))
    }

    /// Hand each child its subtree's prefixes; this member's own is returned.
    fn scatter(
        me: &dyn Topology,
        prefixes: Vec<(u32, RedData)>,
        out: &mut Out,
    ) -> Result<RedData, CollectiveError> {
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
        Ok(mine)
    }
}

impl Machine for Scan {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        if self.probe && me.rank() + 1 < me.size() {
            let Some(next) = me.pe_of(me.rank() + 1) else {
                return Err(CollectiveError::Protocol(format!(
                    "rank {} has no roster entry for rank {}",
                    me.rank(),
                    me.rank() + 1
                )));
            };
            out.send(next, PROBE, Piece::Ranked(Vec::new()));
        }
        self.waiting = kary::num_children(me.rank(), me.size(), me.k());
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Ok(Step::Pending)
        }
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        // A plain value comes only from a member that scans by recursive doubling:
        // its value is an integer where this member's is f64.
        let Piece::Ranked(piece) = piece else {
            return Err(self.fold.mixed_kinds());
        };
        if tag == PROBE {
            if self.probed {
                return Err(CollectiveError::Protocol(format!(
                    "rank {} got a second probe",
                    me.rank()
                )));
            }
            self.probed = true;
            return self.finish(None);
        }
        if tag == DOWN {
            let mine = Self::scatter(me, piece, out)?;
            return self.finish(Some(mine));
        }
        let Some(waiting) = self.waiting.checked_sub(1) else {
            return Err(CollectiveError::Protocol(format!(
                "rank {} got more values from below than it has subtrees",
                me.rank()
            )));
        };
        let values = std::mem::take(&mut self.values);
        self.values = merge_ranked(values, piece);
        self.waiting = waiting;
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Ok(Step::Pending)
        }
    }
}
