//! The (colour, key) table of a modelled MPI_Comm_split and the local step that turns
//! it into a new group: MPICH's scan for the members of one's colour and its sort of
//! them by (key, old rank).
//!
//! A table of a parent of p members is p pairs of two 32-bit ints, 8 bytes each on
//! the wire, as in MPICH's allgather. In memory it is run-length coded: JQuick's
//! tables are a few runs (members of a child, then the rest), and 32,768 simulated PEs
//! each holding 32,768 plain pairs would need 8 GiB. The encoding (`Serialize`) writes
//! every pair, so the simulator charges exactly the bytes MPICH sends.

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// MPI_UNDEFINED: the member joins no new group.
pub const UNDEFINED: u32 = u32::MAX;

/// One member's (colour, key), packed as MPICH's two ints are laid out.
pub fn pair(colour: u32, key: i32) -> u64 {
    (u64::from(colour) << 32) | u64::from(key as u32)
}

/// The colour of a packed pair.
pub fn colour(pair: u64) -> u32 {
    (pair >> 32) as u32
}

/// The key of a packed pair.
pub fn key(pair: u64) -> i32 {
    pair as u32 as i32
}

/// Pairs of consecutive ranks, run-length coded: (pair, count) runs, no count zero,
/// no two neighbouring runs equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairTable {
    runs: Vec<(u64, u32)>,
    len: u32,
}

impl PairTable {
    /// The table of one member.
    pub fn one(pair: u64) -> Self {
        PairTable {
            runs: vec![(pair, 1)],
            len: 1,
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True if the table holds no pair.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of runs (what the table costs in memory).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn push_run(&mut self, pair: u64, count: u32) {
        if count == 0 {
            return;
        }
        self.len += count;
        match self.runs.last_mut() {
            Some((p, c)) if *p == pair => *c += count,
            _ => self.runs.push((pair, count)),
        }
    }

    /// Append `other`'s pairs after this table's.
    pub fn append(&mut self, other: &PairTable) {
        for &(p, c) in &other.runs {
            self.push_run(p, c);
        }
    }

    /// The first `count` pairs (all of them if the table is shorter).
    pub fn prefix(&self, count: u32) -> PairTable {
        let mut out = PairTable::default();
        let mut left = count;
        for &(p, c) in &self.runs {
            if left == 0 {
                break;
            }
            let take = c.min(left);
            out.push_run(p, take);
            left -= take;
        }
        out
    }

    /// The last pair, alone (what a ring round passes on).
    pub fn last(&self) -> PairTable {
        match self.runs.last() {
            Some(&(p, _)) => PairTable::one(p),
            None => PairTable::default(),
        }
    }

    /// The table rotated so that pair `start` comes first (Bruck's final local step).
    pub fn rotated(&self, start: u32) -> PairTable {
        let start = if self.len == 0 { 0 } else { start % self.len };
        let mut head = PairTable::default();
        let mut tail = PairTable::default();
        let mut at = 0u32;
        for &(p, c) in &self.runs {
            let cut = start.saturating_sub(at).min(c);
            tail.push_run(p, cut);
            head.push_run(p, c - cut);
            at += c;
        }
        head.append(&tail);
        head
    }

    /// Every pair, in rank order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs
            .iter()
            .flat_map(|&(p, c)| std::iter::repeat_n(p, c as usize))
    }
}

impl FromIterator<u64> for PairTable {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut t = PairTable::default();
        for p in iter {
            t.push_run(p, 1);
        }
        t
    }
}

impl Serialize for PairTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len as usize))?;
        for p in self.iter() {
            seq.serialize_element(&p)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for PairTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = PairTable;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of packed (colour, key) pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PairTable, A::Error> {
                let mut t = PairTable::default();
                while let Some(p) = seq.next_element::<u64>()? {
                    t.push_run(p, 1);
                }
                Ok(t)
            }
        }
        d.deserialize_seq(Pairs)
    }
}

/// The new group of the member at `rank`, as MPI_Comm_split makes it from the whole
/// table: the old ranks of the members of its colour ordered by (key, old rank), and
/// the counts the cost model charges. None for a member of colour [`UNDEFINED`].
pub fn new_group(table: &PairTable, rank: u32) -> Option<NewGroup> {
    let mine = table.iter().nth(rank as usize)?;
    let c = colour(mine);
    if c == UNDEFINED {
        return None;
    }
    // MPICH's step 2: one pass over all p pairs for those of one's colour.
    let mut keyed: Vec<(i32, u32)> = table
        .iter()
        .zip(0u32..)
        .filter(|(p, _)| colour(*p) == c)
        .map(|(p, r)| (key(p), r))
        .collect();
    // Step 4: the sort by key, ties by old rank (MPICH keeps the original index to
    // make qsort stable).
    keyed.sort_unstable();
    let members: Vec<u32> = keyed.into_iter().map(|(_, r)| r).collect();
    let new_rank = members
        .iter()
        .position(|&r| r == rank)
        .expect("a member is in its own colour") as u32;
    Some(NewGroup {
        members,
        new_rank,
        scanned: table.len(),
    })
}

/// A member's new group after a modelled split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGroup {
    /// Old ranks of the new group's members, in new-rank order.
    pub members: Vec<u32>,
    /// This member's rank in the new group.
    pub new_rank: u32,
    /// Pairs scanned for the colour (the parent's size).
    pub scanned: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_coalesce_and_the_wire_form_is_every_pair() {
        let mut t = PairTable::one(pair(0, 0));
        t.append(&PairTable::one(pair(0, 0)));
        t.append(&PairTable::one(pair(UNDEFINED, 0)));
        assert_eq!((t.len(), t.runs()), (3, 2));
        let bytes = bincode::serialize(&t).unwrap();
        // bincode's sequence length, then 8 bytes per pair, as MPICH sends.
        assert_eq!(bytes.len(), 8 + 3 * 8);
        let back: PairTable = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, t);
        assert_eq!(
            t.rotated(2).iter().collect::<Vec<_>>()[0],
            pair(UNDEFINED, 0)
        );
        assert_eq!(t.prefix(2).len(), 2);
        assert_eq!(key(pair(3, -5)), -5);
        assert_eq!(colour(pair(3, -5)), 3);
    }

    #[test]
    fn undefined_members_get_no_group() {
        let t: PairTable = [pair(0, 0), pair(UNDEFINED, 0), pair(0, 0)]
            .into_iter()
            .collect();
        assert_eq!(new_group(&t, 1), None);
        let g = new_group(&t, 2).unwrap();
        assert_eq!((g.members, g.new_rank, g.scanned), (vec![0, 2], 1, 3));
    }

    proptest! {
        /// MPI_Comm_split's ranks: members of one colour, ordered by key and then by
        /// old rank, whatever the table's runs look like.
        #[test]
        fn ranks_follow_key_then_old_rank(
            cells in proptest::collection::vec((0u32..3, -3i32..3), 1..60),
            rot in 0u32..60,
        ) {
            let table: PairTable = cells.iter().map(|&(c, k)| pair(c, k)).collect();
            prop_assert_eq!(table.rotated(rot).rotated(table.len() - rot % table.len()), table.clone());
            for (rank, &(c, _)) in cells.iter().enumerate() {
                let g = new_group(&table, rank as u32).unwrap();
                let mut want: Vec<(i32, u32)> = cells
                    .iter()
                    .zip(0u32..)
                    .filter(|((cc, _), _)| *cc == c)
                    .map(|((_, k), r)| (*k, r))
                    .collect();
                want.sort();
                let want: Vec<u32> = want.into_iter().map(|x| x.1).collect();
                prop_assert_eq!(&g.members, &want);
                prop_assert_eq!(g.members[g.new_rank as usize], rank as u32);
            }
        }
    }
}
