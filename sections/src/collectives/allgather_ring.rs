//! The ring allgather: n-1 rounds; in each, member p passes the block it received last
//! (its own first) to p+1 and receives one from p-1. Nearest-neighbour traffic, the
//! usual choice for long messages.

use super::error::CollectiveError;
use super::machine::{Machine, Out, Received, Step, Stepped};
use super::rounds::{pe, Rounds};
use super::topology::Topology;
use chorus_core::RedData;

/// One member's ring allgather.
pub struct Ring {
    round: u32,
    rounds: Rounds,
}

impl Ring {
    /// A ring allgather of this member's `value`.
    pub fn new(rank: u32, value: RedData) -> Self {
        Ring {
            round: 0,
            rounds: Rounds::new(rank, value),
        }
    }

    /// Send round `round`'s block: the one from `round` ranks to the left.
    fn send(&self, me: &dyn Topology, out: &mut Out) -> Result<(), CollectiveError> {
        let n = me.size();
        let block = (me.rank() + n - self.round % n) % n;
        let right = (me.rank() + 1) % n;
        let piece = self.rounds.blocks(std::iter::once(block))?;
        out.send(pe(me, right), self.round, piece);
        Ok(())
    }
}

impl Machine for Ring {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        if me.size() == 1 {
            return self.rounds.done();
        }
        self.send(me, out)?;
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
            self.send(me, out)?;
        }
        Ok(Step::Pending)
    }
}
