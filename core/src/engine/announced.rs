//! Which creations of each creator a PE has seen, when creations may arrive in any
//! order (a later one can overtake an earlier one on the network).

use crate::base::hash::HashMap;
use crate::base::ids::Pe;
use crate::base::lazy::Lazy;
use std::collections::BTreeSet;

/// The sequence numbers seen from one creator: all below `below`, and those in `above`.
#[derive(Debug, Default)]
struct Seen {
    below: u32,
    above: BTreeSet<u32>,
}

/// Creations seen on this PE, by creator.
#[derive(Debug, Default)]
pub(crate) struct Announced {
    /// The first creator heard from, while its creations arrive in order: (creator,
    /// creations seen). Most PEs of a large simulated job hear from one creator (the
    /// main chare's PE), and then keep no table.
    first: Option<(Pe, u32)>,
    /// Boxed on first use: most PEs never need it.
    by_creator: Lazy<HashMap<Pe, Seen>>,
}

impl Announced {
    /// Record that creation `seq` of `creator` reached this PE.
    pub(crate) fn insert(&mut self, creator: Pe, seq: u32) {
        match &mut self.first {
            Some((c, below)) if *c == creator => {
                if seq < *below {
                    return;
                }
                if seq == *below {
                    *below += 1;
                    return;
                }
                // Out of order: the creator moves to the table, which keeps gaps.
                let below = *below;
                self.first = None;
                self.by_creator.get_mut().insert(
                    creator,
                    Seen {
                        below,
                        above: BTreeSet::new(),
                    },
                );
            }
            None if seq == 0 && self.by_creator.get().is_none_or(HashMap::is_empty) => {
                self.first = Some((creator, 1));
                return;
            }
            _ => {}
        }
        let s = self.by_creator.get_mut().entry(creator).or_default();
        if seq < s.below {
            return;
        }
        // In order, the common case: no tree node is allocated (a `BTreeSet` keeps its
        // emptied node, which 10^6 simulated PEs would each hold).
        if seq == s.below && s.above.is_empty() {
            s.below += 1;
            return;
        }
        s.above.insert(seq);
        while s.above.remove(&s.below) {
            s.below += 1;
        }
    }

    /// True if creation `seq` of `creator` has reached this PE.
    pub(crate) fn contains(&self, creator: Pe, seq: u32) -> bool {
        if let Some((c, below)) = self.first {
            if c == creator {
                return seq < below;
            }
        }
        self.by_creator
            .get()
            .and_then(|m| m.get(&creator))
            .is_some_and(|s| seq < s.below || s.above.contains(&seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_creations_leave_the_gap_unseen() {
        let mut a = Announced::default();
        a.insert(3, 1);
        assert!(a.contains(3, 1));
        assert!(!a.contains(3, 0), "seq 0 may still be on its way");
        a.insert(3, 0);
        assert!(a.contains(3, 0) && a.contains(3, 1) && !a.contains(3, 2));
        assert!(!a.contains(4, 0));
        a.insert(3, 1);
        assert!(
            a.by_creator.get().expect("a table")[&3].above.is_empty(),
            "a contiguous prefix is compact"
        );
    }

    #[test]
    fn a_first_creator_in_order_keeps_no_table_until_a_gap() {
        let mut a = Announced::default();
        for seq in 0..3 {
            a.insert(5, seq);
        }
        a.insert(5, 1);
        assert!(a.by_creator.get().is_none(), "in order: no table");
        assert!(a.contains(5, 2) && !a.contains(5, 3) && !a.contains(6, 0));
        a.insert(5, 4);
        assert!(a.first.is_none(), "a gap moves the creator to the table");
        assert!(a.contains(5, 2) && !a.contains(5, 3) && a.contains(5, 4));
        a.insert(5, 3);
        assert!(a.contains(5, 3) && a.by_creator.get().expect("a table")[&5].above.is_empty());
        a.insert(7, 0);
        assert!(a.contains(7, 0) && !a.contains(7, 1) && a.contains(5, 4));
    }
}
