//! The k-port standard exchange (recursive doubling when k = 1): with b = k+1, in
//! round j member p exchanges everything it holds with the k members that differ from
//! it only in base-b digit j of the rank; log_b n rounds when n is a power of b.
//! Otherwise, with P the largest power of b not above n, each member p >= P first hands
//! its block to p mod P, ranks 0..P-1 run the exchange, and hand the result back (the
//! usual fold for non-powers; a rank below P stands in for up to k others).

use super::machine::{Machine, Out, Received, Step, Stepped};
use super::rounds::{pe, Rounds};
use super::topology::Topology;
use chorus_core::RedData;

const FOLD_IN: u32 = 0;
// Below bit 24, which the tuner's chained mock-ups use to number their phases.
const FOLD_OUT: u32 = (1 << 24) - 1;

/// One member's standard exchange.
pub struct StandardExchange {
    base: u64,
    /// Largest power of `base` not above the size.
    core: u64,
    /// The exchange round under way (tag round+1); None before the fold-in arrived.
    round: Option<u32>,
    dist: u64,
    rounds: Rounds,
}

impl StandardExchange {
    /// The exchange with `ports` >= 1 partners per round.
    pub fn new(ports: u32, rank: u32, value: RedData) -> Self {
        StandardExchange {
            base: u64::from(ports) + 1,
            core: 1,
            round: None,
            dist: 1,
            rounds: Rounds::new(rank, value),
        }
    }

    fn send_round(&self, me: &dyn Topology, out: &mut Out) {
        let r = u64::from(me.rank());
        let digit = (r / self.dist) % self.base;
        let first = r - digit * self.dist;
        let tag = self.round.expect("a round is under way") + 1;
        for e in (0..self.base).filter(|&e| e != digit) {
            let to = (first + e * self.dist) as u32;
            out.send(pe(me, to), tag, self.rounds.all());
        }
    }

    /// Run the exchange rounds as far as the arrived messages allow.
    fn advance(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let r = u64::from(me.rank());
        let n = u64::from(me.size());
        // The extra members r + core, r + 2 core, .. this one stands in for.
        let extras = (r + self.core..n).step_by(self.core as usize);
        if self.round.is_none() {
            if !self
                .rounds
                .take_if_complete(FOLD_IN, extras.clone().count())?
            {
                return Ok(Step::Pending);
            }
            self.round = Some(0);
            if self.dist < self.core {
                self.send_round(me, out);
            }
        }
        while self.dist < self.core {
            let round = self.round.expect("a round is under way");
            if !self
                .rounds
                .take_if_complete(round + 1, (self.base - 1) as usize)?
            {
                return Ok(Step::Pending);
            }
            self.round = Some(round + 1);
            self.dist *= self.base;
            if self.dist < self.core {
                self.send_round(me, out);
            }
        }
        for extra in extras {
            out.send(pe(me, extra as u32), FOLD_OUT, self.rounds.all());
        }
        self.rounds.done()
    }
}

impl Machine for StandardExchange {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let n = u64::from(me.size());
        while self.core * self.base <= n {
            self.core *= self.base;
        }
        let r = u64::from(me.rank());
        if r >= self.core {
            let to = (r % self.core) as u32;
            out.send(pe(me, to), FOLD_IN, self.rounds.all());
            return Ok(Step::Pending);
        }
        self.advance(me, out)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        if u64::from(me.rank()) >= self.core {
            // An extra member: the only message it gets is the whole result.
            self.rounds.have.extend(piece.ranked()?);
            return self.rounds.done();
        }
        self.rounds.keep(tag, piece);
        self.advance(me, out)
    }
}
