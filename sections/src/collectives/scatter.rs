//! Scatter from any root (`MPI_Scatter`, or `MPI_Scatterv` with blocks of different
//! lengths): the root's block j goes to rank j. The root's blocks go to rank 0
//! (directly with a roster, else up the tree; with a roster the tree is re-rooted at
//! the root and nothing goes up), then down the k-ary tree, each member passing on
//! to each child only the blocks of that child's subtree: n − 1 messages down.

use super::alltoall::check_blocks;
use super::error::CollectiveError;
use super::machine::{children, relays_up, send_up_to_root, Machine, Out, Received, Step, Stepped};
use super::topology::Topology;
use super::value::Piece;
use crate::kary;
use chorus_core::RedData;
use std::collections::BTreeMap;

const UP: u32 = 0;
const DOWN: u32 = 1;

/// One member's scatter.
pub struct Scatter {
    root: u32,
    blocks: Option<Vec<RedData>>,
}

impl Scatter {
    /// A scatter from `root`; `blocks` are the root's, by rank of this view (ignored
    /// elsewhere).
    pub fn new(root: u32, blocks: Option<Vec<RedData>>) -> Self {
        Scatter { root, blocks }
    }

    /// Keep this member's block and pass each child its subtree's.
    fn down(me: &dyn Topology, ranked: Vec<(u32, RedData)>, out: &mut Out) -> Stepped {
        let mut by_rank: BTreeMap<u32, RedData> = ranked.into_iter().collect();
        let (n, k) = (me.size(), me.k());
        let kids = kary::children(me.rank(), n, k).zip(children(me));
        for (child, pe) in kids {
            let piece = kary::subtree_ranks(child, n, k)
                .into_iter()
                .map(|r| by_rank.remove(&r).map(|b| (r, b)).ok_or(r))
                .collect::<Result<Vec<_>, u32>>()
                .map_err(|r| missing(r, me.rank()))?;
            out.send(pe, DOWN, Piece::Ranked(piece));
        }
        let own = by_rank
            .remove(&me.rank())
            .ok_or(missing(me.rank(), me.rank()))?;
        Ok(Step::Done(Some(own)))
    }
}

fn missing(block: u32, at: u32) -> CollectiveError {
    CollectiveError::Protocol(format!(
        "the block of rank {block} did not reach rank {at} on its way down the tree"
    ))
}

impl Machine for Scatter {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        if me.rank() != self.root {
            return Ok(Step::Pending);
        }
        // `Collectives::scatter` refuses a root without one block per member.
        let blocks = self.blocks.take().expect("the root holds the blocks");
        check_blocks(blocks.len(), me.size())?;
        let ranked = (0..).zip(blocks).collect();
        if me.rank() == 0 {
            return Self::down(me, ranked, out);
        }
        send_up_to_root(me, UP, Piece::Ranked(ranked), out);
        Ok(Step::Pending)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        let ranked = piece.ranked()?;
        match tag {
            UP if me.rank() == 0 => Self::down(me, ranked, out),
            UP if relays_up(me, self.root) => {
                send_up_to_root(me, UP, Piece::Ranked(ranked), out);
                Ok(Step::Pending)
            }
            UP => Err(CollectiveError::Protocol(format!(
                "the root's blocks reached rank {}, which is not on their way to rank 0 (do the members agree on the root?)",
                me.rank()
            ))),
            _ => Self::down(me, ranked, out),
        }
    }
}
