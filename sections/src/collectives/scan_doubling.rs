//! Prefix reductions by recursive doubling (Hillis–Steele) for members with a roster
//! and reducers that combine in any grouping (integers, booleans, bitwise): in round j
//! rank r sends its running prefix to r + 2^j and folds in the one from r - 2^j;
//! ceil(log2 n) rounds, one value per message, no member holds more than its own.
//! A rank list from a member that scans by the tree (its value is `f64`; see
//! `scan::PROBE`) ends the scan with a mismatch instead of leaving it waiting.

use super::error::CollectiveError;
use super::machine::{Machine, Out, Received, Step, Stepped};
use super::topology::Topology;
use super::value::{Fold, Piece};
use chorus_core::RedData;
use std::collections::BTreeMap;

/// One member's doubling scan.
pub struct DoublingScan {
    fold: Fold,
    exclusive: bool,
    /// Fold of ranks r-2^j+1 ..= r (clipped at 0).
    incl: RedData,
    /// Fold of ranks r-2^j+1 ..= r-1; None while that is empty.
    excl: Option<RedData>,
    identity: RedData,
    round: u32,
    dist: u64,
    early: BTreeMap<u32, RedData>,
}

impl DoublingScan {
    /// A doubling scan of this member's `value` with a value-mode `fold`.
    pub fn new(fold: Fold, value: RedData, exclusive: bool) -> Self {
        DoublingScan {
            identity: fold.identity_like(&value),
            fold,
            exclusive,
            incl: value,
            excl: None,
            round: 0,
            dist: 1,
            early: BTreeMap::new(),
        }
    }

    fn combine(&self, left: RedData, right: RedData) -> Result<RedData, CollectiveError> {
        self.fold.step(left, right)
    }

    fn send_round(&self, me: &dyn Topology, out: &mut Out) {
        let (r, n) = (u64::from(me.rank()), u64::from(me.size()));
        if r + self.dist < n {
            let to = me
                .pe_of((r + self.dist) as u32)
                .expect("a doubling scan has a roster");
            out.send(to, self.round, Piece::Value(self.incl.clone()));
        }
    }

    fn advance(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let (r, n) = (u64::from(me.rank()), u64::from(me.size()));
        while self.dist < n {
            if r >= self.dist {
                let Some(t) = self.early.remove(&self.round) else {
                    return Ok(Step::Pending);
                };
                self.excl = Some(match self.excl.take() {
                    None => t.clone(),
                    Some(e) => self.combine(t.clone(), e)?,
                });
                self.incl = self.combine(t, self.incl.clone())?;
            }
            self.round += 1;
            self.dist *= 2;
            if self.dist < n {
                self.send_round(me, out);
            }
        }
        let v = if self.exclusive {
            self.excl.take().unwrap_or_else(|| self.identity.clone())
        } else {
            self.incl.clone()
        };
        Ok(Step::Done(Some(v)))
    }
}

impl Machine for DoublingScan {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        self.send_round(me, out);
        self.advance(me, out)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        // A rank list comes only from a member that scans by the tree: its value is
        // f64 where this member's is an integer.
        let Piece::Value(v) = piece else {
            return Err(self.fold.mixed_kinds());
        };
        self.early.insert(tag, v);
        self.advance(me, out)
    }
}
