//! What the allgather algorithms share: the blocks a member holds, keyed by rank, and
//! messages of later rounds kept until their round comes.

use super::machine::{ok, Step};
use super::topology::Topology;
use super::value::{concat, Piece};
use chorus_core::{Pe, RedData};
use std::collections::BTreeMap;

/// Blocks held and messages waiting, per round.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    /// The blocks this member holds, by rank.
    pub(crate) have: BTreeMap<u32, RedData>,
    early: BTreeMap<u32, Vec<Piece>>,
}

impl Rounds {
    /// A member holding only its own block.
    pub(crate) fn new(rank: u32, value: RedData) -> Self {
        let mut have = BTreeMap::new();
        have.insert(rank, value);
        Rounds {
            have,
            early: BTreeMap::new(),
        }
    }

    /// Keep a message of round `tag`.
    pub(crate) fn keep(&mut self, tag: u32, piece: Piece) {
        self.early.entry(tag).or_default().push(piece);
    }

    /// Take round `tag`'s messages if `expected` of them are in, adding their blocks.
    pub(crate) fn take_if_complete(&mut self, tag: u32, expected: usize) -> bool {
        if self.early.get(&tag).map_or(0, Vec::len) < expected {
            return false;
        }
        for piece in self.early.remove(&tag).unwrap_or_default() {
            self.have.extend(piece.ranked());
        }
        true
    }

    /// The blocks of `ranks` (all held), sorted by rank.
    pub(crate) fn blocks(&self, ranks: impl Iterator<Item = u32>) -> Piece {
        let mut v: Vec<(u32, RedData)> = ranks
            .map(|r| (r, self.have.get(&r).expect("the block is held").clone()))
            .collect();
        v.sort_by_key(|x| x.0);
        Piece::Ranked(v)
    }

    /// Every held block.
    pub(crate) fn all(&self) -> Piece {
        Piece::Ranked(self.have.iter().map(|(&r, v)| (r, v.clone())).collect())
    }

    /// Finish: the concatenation of every rank's block, in rank order.
    pub(crate) fn done(&mut self) -> Step {
        debug_assert!(self.early.is_empty(), "no message is left over");
        let have = std::mem::take(&mut self.have);
        Step::Done(Some(ok(concat(have.into_iter().collect()))))
    }
}

/// The PE of `rank`, which the allgathers that use this always know (a roster).
pub(crate) fn pe(me: &dyn Topology, rank: u32) -> Pe {
    me.pe_of(rank).expect("allgather needs a roster")
}
