//! Which creations of each creator a PE has seen, when creations may arrive in any
//! order (a later one can overtake an earlier one on the network).

use crate::base::hash::HashMap;
use crate::base::ids::Pe;
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
    by_creator: HashMap<Pe, Seen>,
}

impl Announced {
    /// Record that creation `seq` of `creator` reached this PE.
    pub(crate) fn insert(&mut self, creator: Pe, seq: u32) {
        let s = self.by_creator.entry(creator).or_default();
        if seq < s.below {
            return;
        }
        s.above.insert(seq);
        while s.above.remove(&s.below) {
            s.below += 1;
        }
    }

    /// True if creation `seq` of `creator` has reached this PE.
    pub(crate) fn contains(&self, creator: Pe, seq: u32) -> bool {
        self.by_creator
            .get(&creator)
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
            a.by_creator[&3].above.is_empty(),
            "a contiguous prefix is compact"
        );
    }
}
