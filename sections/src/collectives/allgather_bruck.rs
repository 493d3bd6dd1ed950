//! Bruck's allgather with k ports (k = 1 is the classic algorithm): in round j member
//! p sends the blocks it holds to p - i(k+1)^j and receives from p + i(k+1)^j
//! (i = 1..k, modulo the size), appending; ceil(log_{k+1} n) rounds for any n. Blocks
//! are keyed by rank, which is the local rotation of the paper's second phase.

use super::error::CollectiveError;
use super::machine::{Machine, Out, Received, Step, Stepped};
use super::rounds::{pe, Rounds};
use super::topology::Topology;
use chorus_core::RedData;

/// One member's Bruck allgather.
pub struct Bruck {
    ports: u32,
    round: u32,
    dist: u64,
    rounds: Rounds,
}

impl Bruck {
    /// Bruck with `ports` >= 1 partners per round.
    pub fn new(ports: u32, rank: u32, value: RedData) -> Self {
        Bruck {
            ports,
            round: 0,
            dist: 1,
            rounds: Rounds::new(rank, value),
        }
    }

    /// The distances i*(k+1)^j of this round that stay within the section.
    fn partners(&self, n: u64) -> impl Iterator<Item = u64> {
        let dist = self.dist;
        (1..=u64::from(self.ports))
            .map(move |i| i * dist)
            .filter(move |&d| d < n)
    }

    fn send_round(&self, me: &dyn Topology, out: &mut Out) -> Result<(), CollectiveError> {
        let (n, r) = (u64::from(me.size()), u64::from(me.rank()));
        for d in self.partners(n) {
            let to = ((r + n - d) % n) as u32;
            let count = self.dist.min(n - d);
            let piece = self
                .rounds
                .blocks((0..count).map(|t| ((r + t) % n) as u32))?;
            out.send(pe(me, to), self.round, piece);
        }
        Ok(())
    }

    fn advance(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let n = u64::from(me.size());
        loop {
            if self.dist >= n {
                return self.rounds.done();
            }
            let expected = self.partners(n).count();
            if !self.rounds.take_if_complete(self.round, expected)? {
                return Ok(Step::Pending);
            }
            self.round += 1;
            self.dist *= u64::from(self.ports) + 1;
            if self.dist < n {
                self.send_round(me, out)?;
            }
        }
    }
}

impl Machine for Bruck {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        if self.dist < u64::from(me.size()) {
            self.send_round(me, out)?;
        }
        self.advance(me, out)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        self.rounds.keep(tag, piece);
        self.advance(me, out)
    }
}
