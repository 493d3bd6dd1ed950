//! Alltoall: member r gives one block for each rank j, and member j gets the blocks
//! addressed to it, concatenated in the senders' rank order (`MPI_Alltoall`; blocks of
//! different lengths make it `MPI_Alltoallv`). Two algorithms, both over a roster:
//! the pairwise exchange (p − 1 rounds, one message each: p(p − 1) messages in all,
//! every block sent once, straight to its owner) and Bruck's (⌈log2 p⌉ rounds of one
//! message each: fewer, larger messages, as blocks travel through intermediate
//! members; it wins when blocks are short and latency dominates).

use super::error::CollectiveError;
use super::machine::{Machine, Out, Received, Step, Stepped};
use super::rounds::{pe, Rounds};
use super::topology::Topology;
use super::value::{concat, Piece};
use chorus_core::RedData;
use serde::{Deserialize, Serialize};

/// An alltoall algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Alltoall {
    /// Choose by block length (or the tuning profile does).
    Auto,
    /// Pairwise exchange: in round i member r sends to r + i and receives from r − i.
    Pairwise,
    /// Bruck: in round i member r sends to r + 2^i every block whose index (its
    /// distance to its owner) has bit i set.
    Bruck,
}

/// Blocks up to this many bytes (per block) go by Bruck under `Auto`: below it the
/// latency of p − 1 rounds outweighs Bruck's extra copies.
pub const BRUCK_MAX_BLOCK_BYTES: usize = 256;

impl Alltoall {
    /// Short name, e.g. `pairwise`.
    pub fn name(self) -> &'static str {
        match self {
            Alltoall::Auto => "auto",
            Alltoall::Pairwise => "pairwise",
            Alltoall::Bruck => "bruck",
        }
    }

    /// The algorithm to run for blocks of about `block_bytes` bytes: `Auto` takes
    /// Bruck for short blocks, the pairwise exchange otherwise. Every algorithm
    /// needs a roster.
    pub fn resolve(
        self,
        block_bytes: usize,
        has_roster: bool,
    ) -> Result<Alltoall, CollectiveError> {
        if !has_roster {
            return Err(CollectiveError::NeedsRoster {
                algorithm: "alltoall",
            });
        }
        Ok(match self {
            Alltoall::Auto if block_bytes <= BRUCK_MAX_BLOCK_BYTES => Alltoall::Bruck,
            Alltoall::Auto => Alltoall::Pairwise,
            other => other,
        })
    }

    /// The messages all `size` members send in total.
    pub fn messages(self, size: u32) -> u64 {
        let p = u64::from(size);
        match self {
            Alltoall::Bruck => p * u64::from(bruck_rounds(size)),
            _ => p * p.saturating_sub(1),
        }
    }
}

/// Rounds of Bruck's alltoall over `size` members: ⌈log2 size⌉.
pub fn bruck_rounds(size: u32) -> u32 {
    size.max(1).next_power_of_two().trailing_zeros()
}

/// Check a member's number of blocks: one per rank.
pub(crate) fn check_blocks(given: usize, size: u32) -> Result<(), CollectiveError> {
    if given != size as usize {
        return Err(CollectiveError::BlockCount { got: given, size });
    }
    Ok(())
}

/// One member's pairwise alltoall.
pub struct Pairwise {
    round: u32,
    blocks: Vec<Option<RedData>>,
    rounds: Rounds,
}

impl Pairwise {
    /// Member `rank`'s pairwise alltoall of `blocks` (one per rank).
    pub fn new(rank: u32, blocks: Vec<RedData>) -> Self {
        let mut blocks: Vec<Option<RedData>> = blocks.into_iter().map(Some).collect();
        let own = blocks
            .get_mut(rank as usize)
            .and_then(Option::take)
            .unwrap_or(RedData::List(Vec::new()));
        Pairwise {
            round: 0,
            blocks,
            rounds: Rounds::new(rank, own),
        }
    }

    /// Send round `round`'s block to its owner, `round + 1` ranks to the right.
    fn send(&mut self, me: &dyn Topology, out: &mut Out) {
        let n = me.size();
        let to = (me.rank() + self.round + 1) % n;
        let block = self.blocks[to as usize]
            .take()
            .expect("each block is sent once");
        out.send(
            pe(me, to),
            self.round,
            Piece::Ranked(vec![(me.rank(), block)]),
        );
    }
}

impl Machine for Pairwise {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        check_blocks(self.blocks.len(), me.size())?;
        if me.size() == 1 {
            return self.rounds.done();
        }
        self.send(me, out);
        Ok(Step::Pending)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        self.rounds.keep(tag, piece);
        while self.rounds.take_if_complete(self.round, 1)? {
            self.round += 1;
            if self.round + 1 == me.size() {
                return self.rounds.done();
            }
            self.send(me, out);
        }
        Ok(Step::Pending)
    }
}

/// One member's Bruck alltoall. Blocks are kept by index i: the block at index i is
/// due i ranks to the right of the member holding it; round b moves every block
/// whose index has bit b set 2^b ranks right, so after the last round index i holds
/// the block that member `rank − i` addressed to this one.
pub struct Bruck {
    round: u32,
    rank: u32,
    given: usize,
    rounds: Rounds,
}

impl Bruck {
    /// Member `rank`'s Bruck alltoall of `blocks` (one per rank).
    pub fn new(rank: u32, blocks: Vec<RedData>) -> Self {
        let n = blocks.len();
        let given = n;
        let mut rounds = Rounds::default();
        for (dest, block) in blocks.into_iter().enumerate() {
            let index = (dest + n - rank as usize % n.max(1)) % n.max(1);
            rounds.have.insert(index as u32, block);
        }
        Bruck {
            round: 0,
            rank,
            given,
            rounds,
        }
    }

    /// Send round `round`'s blocks: those whose index has the round's bit set.
    fn send(&self, me: &dyn Topology, out: &mut Out) -> Result<(), CollectiveError> {
        let n = me.size();
        let dist = 1u32 << self.round;
        let moving = (1..n).filter(|i| i & dist != 0);
        let piece = self.rounds.blocks(moving)?;
        out.send(pe(me, (me.rank() + dist) % n), self.round, piece);
        Ok(())
    }

    /// After the last round: the blocks in their senders' rank order.
    fn done(&mut self, n: u32) -> Stepped {
        let have = self.rounds.finish()?;
        let mut by_sender: Vec<(u32, RedData)> = have
            .into_iter()
            .map(|(i, b)| ((self.rank + n - i) % n, b))
            .collect();
        by_sender.sort_by_key(|x| x.0);
        Ok(Step::Done(Some(concat(by_sender)?)))
    }
}

impl Machine for Bruck {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        check_blocks(self.given, me.size())?;
        if me.size() == 1 {
            return self.done(1);
        }
        self.send(me, out)?;
        Ok(Step::Pending)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        self.rounds.keep(tag, piece);
        while self.rounds.take_if_complete(self.round, 1)? {
            self.round += 1;
            if self.round == bruck_rounds(me.size()) {
                return self.done(me.size());
            }
            self.send(me, out)?;
        }
        Ok(Step::Pending)
    }
}
