//! The allgather of a modelled MPI_Comm_split, with the message pattern MPICH's
//! `MPIR_Allgather_intra_auto` picks for it: recursive doubling on a power of two,
//! Bruck otherwise, the ring for long totals. A member is a pure state machine: the
//! sorter sends the messages it asks for and hands it those that arrive.

use super::table::PairTable;
use std::collections::BTreeMap;

/// MPICH's `MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE` default: Bruck below this total.
pub const MPICH_SHORT_MSG: u64 = 81_920;
/// MPICH's `MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE` default: recursive doubling (powers
/// of two) below this total.
pub const MPICH_LONG_MSG: u64 = 524_288;
/// Bytes one member contributes to a split's allgather: two ints.
pub const PAIR_BYTES: u64 = 8;

/// An allgather algorithm of MPICH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// log2 p rounds, partner rank XOR 2^j, everything held each time.
    RecursiveDoubling,
    /// ceil(log2 p) rounds to rank - 2^j, then a local rotation.
    Bruck,
    /// p - 1 rounds to the next rank.
    Ring,
}

/// What MPICH (3.x/4.x defaults) runs for a split of a `size`-member group: the
/// total is `size` pairs of 8 bytes.
pub fn mpich_choice(size: u32) -> Algorithm {
    let total = PAIR_BYTES * u64::from(size);
    if total < MPICH_LONG_MSG && size.is_power_of_two() {
        Algorithm::RecursiveDoubling
    } else if total < MPICH_SHORT_MSG {
        Algorithm::Bruck
    } else {
        Algorithm::Ring
    }
}

/// What the model runs: MPICH's choice with `ring` (`jquick --split-ring`), else
/// Bruck where MPICH takes the ring (non-powers of two from 10,240 members,
/// everything from 65,536). The ring's p − 1 rounds send p(p − 1) messages per split,
/// which takes the simulator minutes at these sizes; Bruck's ceil(log2 p) latencies
/// are far fewer than the ring's p − 1, so without `ring` the model errs in MPI's
/// favour.
pub fn modelled(size: u32, ring: bool) -> Algorithm {
    match mpich_choice(size) {
        Algorithm::Ring if !ring => Algorithm::Bruck,
        a => a,
    }
}

/// A message a member sends: its round and the pairs, to a rank of the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Rank in the parent group.
    pub to: u32,
    /// Round number, from 0.
    pub round: u32,
    /// The pairs.
    pub table: PairTable,
}

/// One member's part of the allgather.
#[derive(Debug)]
pub struct PairGather {
    algorithm: Algorithm,
    rank: u32,
    size: u32,
    /// The round whose message this member waits for.
    round: u32,
    table: PairTable,
    /// Messages of rounds not reached yet: at most one per round (ceil(log2 p), or
    /// p − 1 for the ring), so it cannot grow without limit.
    early: BTreeMap<u32, PairTable>,
}

impl PairGather {
    /// Member `rank` of `size` with its own pair.
    pub fn new(algorithm: Algorithm, rank: u32, size: u32, mine: PairTable) -> Self {
        assert!(rank < size, "rank {rank} of a group of {size}");
        if algorithm == Algorithm::RecursiveDoubling && !size.is_power_of_two() {
            panic!("recursive doubling needs a power of two, not {size}")
        }
        PairGather {
            algorithm,
            rank,
            size,
            round: 0,
            table: mine,
            early: BTreeMap::new(),
        }
    }

    /// Rounds in all: ceil(log2 p), or p − 1 for the ring.
    pub fn rounds(&self) -> u32 {
        match self.algorithm {
            Algorithm::Ring => self.size - 1,
            _ => self.size.next_power_of_two().trailing_zeros(),
        }
    }

    /// True once the member holds every pair.
    pub fn is_done(&self) -> bool {
        self.round == self.rounds()
    }

    /// The message of the round under way, if any.
    fn send_now(&self) -> Option<Outgoing> {
        if self.is_done() {
            return None;
        }
        let (to, table) = match self.algorithm {
            // Leftwards, so the table grows in Bruck's order (own rank first): round
            // r passes on the pair of rank + r, the one that came last.
            Algorithm::Ring => ((self.rank + self.size - 1) % self.size, self.table.last()),
            Algorithm::RecursiveDoubling => (self.rank ^ (1 << self.round), self.table.clone()),
            Algorithm::Bruck => {
                let dist = 1u32 << self.round;
                (
                    (self.rank + self.size - dist) % self.size,
                    self.table.prefix(dist.min(self.size - dist)),
                )
            }
        };
        Some(Outgoing {
            to,
            round: self.round,
            table,
        })
    }

    /// The first message.
    pub fn start(&self) -> Option<Outgoing> {
        self.send_now()
    }

    /// A message of `round` arrived: the messages this member can send now.
    pub fn arrive(&mut self, round: u32, table: PairTable) -> Vec<Outgoing> {
        assert!(
            round < self.rounds() && self.early.insert(round, table).is_none(),
            "round {round} of an allgather of {} arrived twice or out of range",
            self.size
        );
        let mut out = Vec::new();
        while let Some(got) = self.early.remove(&self.round) {
            match self.algorithm {
                Algorithm::RecursiveDoubling if self.rank & (1 << self.round) != 0 => {
                    let mut t = got;
                    t.append(&self.table);
                    self.table = t;
                }
                _ => self.table.append(&got),
            }
            self.round += 1;
            out.extend(self.send_now());
        }
        out
    }

    /// Every member's pair in rank order (needs `is_done`).
    pub fn finish(self) -> PairTable {
        assert!(self.is_done(), "an allgather finished early");
        match self.algorithm {
            Algorithm::RecursiveDoubling => self.table,
            _ => self.table.rotated((self.size - self.rank) % self.size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::{pair, UNDEFINED};
    use super::*;

    /// Runs every member, delivering messages last-sent first (so rounds arrive
    /// early); returns each member's table, rounds, messages and pairs received.
    fn run(algorithm: Algorithm, p: u32) -> Vec<(PairTable, u32, u32, u32)> {
        let mine = |r: u32| {
            PairTable::one(pair(
                if r.is_multiple_of(3) { UNDEFINED } else { 0 },
                r as i32,
            ))
        };
        let mut members: Vec<PairGather> = (0..p)
            .map(|r| PairGather::new(algorithm, r, p, mine(r)))
            .collect();
        let mut stats = vec![(0u32, 0u32); p as usize];
        let mut queue: Vec<(u32, Outgoing)> = (0..p)
            .filter_map(|r| members[r as usize].start().map(|o| (r, o)))
            .collect();
        while let Some((from, o)) = queue.pop() {
            let s = &mut stats[o.to as usize];
            s.0 += 1;
            s.1 += o.table.len();
            assert_eq!(o.table.iter().count() as u32, o.table.len(), "{from}");
            for next in members[o.to as usize].arrive(o.round, o.table) {
                queue.push((o.to, next));
            }
        }
        members
            .into_iter()
            .zip(stats)
            .map(|(m, (msgs, pairs))| {
                let rounds = m.rounds();
                (m.finish(), rounds, msgs, pairs)
            })
            .collect()
    }

    #[test]
    fn each_algorithm_takes_its_rounds_and_receives_p_minus_1_pairs() {
        for (algorithm, sizes) in [
            (Algorithm::RecursiveDoubling, vec![1u32, 2, 4, 8, 64, 1024]),
            (Algorithm::Bruck, vec![1, 2, 3, 5, 7, 12, 100, 1000]),
            (Algorithm::Ring, vec![1, 2, 3, 5, 7, 12, 100]),
        ] {
            for p in sizes {
                let want: PairTable = (0..p)
                    .map(|r| pair(if r.is_multiple_of(3) { UNDEFINED } else { 0 }, r as i32))
                    .collect();
                let log2 = match algorithm {
                    Algorithm::Ring => p - 1,
                    _ => p.next_power_of_two().trailing_zeros(),
                };
                for (rank, (table, rounds, msgs, pairs)) in
                    run(algorithm, p).into_iter().enumerate()
                {
                    assert_eq!(table, want, "{algorithm:?} p={p} rank {rank}");
                    assert_eq!(
                        (rounds, msgs, pairs),
                        (log2, log2, p - 1),
                        "{algorithm:?} p={p}"
                    );
                }
            }
        }
    }

    #[test]
    fn mpich_picks_by_size_and_total() {
        assert_eq!(mpich_choice(32_768), Algorithm::RecursiveDoubling);
        assert_eq!(mpich_choice(65_536), Algorithm::Ring);
        assert_eq!(mpich_choice(10_239), Algorithm::Bruck);
        assert_eq!(mpich_choice(10_241), Algorithm::Ring);
        assert_eq!(modelled(10_241, false), Algorithm::Bruck);
        assert_eq!(modelled(10_241, true), Algorithm::Ring);
        assert_eq!(modelled(4096, true), Algorithm::RecursiveDoubling);
    }
}
