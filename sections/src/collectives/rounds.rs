//! What the allgather algorithms share: the blocks a member holds, keyed by rank, and
//! messages of later rounds kept until their round comes.

use super::error::CollectiveError;
use super::machine::{Step, Stepped};
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
    pub(crate) fn take_if_complete(
        &mut self,
        tag: u32,
        expected: usize,
    ) -> Result<bool, CollectiveError> {
        if self.early.get(&tag).map_or(0, Vec::len) < expected {
            return Ok(false);
        }
        for piece in self.early.remove(&tag).unwrap_or_default() {
            self.have.extend(piece.ranked()?);
        }
        Ok(true)
    }

    /// The blocks of `ranks`, sorted by rank; a block not held is a `Protocol` error
    /// (a peer ran another algorithm).
    pub(crate) fn blocks(
        &self,
        ranks: impl Iterator<Item = u32>,
    ) -> Result<Piece, CollectiveError> {
        let mut v = ranks
            .map(|r| match self.have.get(&r) {
                Some(b) => Ok((r, b.clone())),
                None => Err(CollectiveError::Protocol(format!(
                    "the block of rank {r} is due to be passed on but never arrived"
                ))),
            })
            .collect::<Result<Vec<(u32, RedData)>, _>>()?;
        v.sort_by_key(|x| x.0);
        Ok(Piece::Ranked(v))
    }

    /// Every held block.
    pub(crate) fn all(&self) -> Piece {
        Piece::Ranked(self.have.iter().map(|(&r, v)| (r, v.clone())).collect())
    }

    /// Finish: the concatenation of every rank's block, in rank order. Messages of
    /// rounds this member never ran are a `Protocol` error (a peer ran another
    /// algorithm).
    pub(crate) fn done(&mut self) -> Stepped {
        let have = self.finish()?;
        Ok(Step::Done(Some(concat(have.into_iter().collect())?)))
    }

    /// Take every held block, by key, after the last round; messages of rounds this
    /// member never ran are a `Protocol` error (a peer ran another algorithm).
    pub(crate) fn finish(&mut self) -> Result<BTreeMap<u32, RedData>, CollectiveError> {
        if let Some(tag) = self.early.keys().next() {
            return Err(CollectiveError::Protocol(format!(
                "a message of round {tag} is left over after the last round"
            )));
        }
        Ok(std::mem::take(&mut self.have))
    }
}

/// The PE of `rank`, which the allgathers that use this always know (a roster).
pub(crate) fn pe(me: &dyn Topology, rank: u32) -> Pe {
    me.pe_of(rank).expect("allgather needs a roster")
}
