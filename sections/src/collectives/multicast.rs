//! One-sided multicast over a range section (Charm++'s section multicast): only the
//! root starts it; the value travels down the k-ary tree re-rooted at the root, and
//! every member delivers it to its own element of a group or of an array indexed by
//! rank. Stateless — no sequence number, nothing for the other members to start —
//! because a range member's place follows from the section and its PE in O(1).

use super::topology::{Member, RangeMember, Rerooted, Topology};
use chorus_core::{ArrayProxy, Callback, Chare, Entry, GroupProxy, Pe, Reducible};
use serde::{Deserialize, Serialize};

/// Where each member of a multicast delivers the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerMember(Callback);

impl PerMember {
    /// To `entry` of the group member on each member's PE.
    pub fn group<C: Chare, T: Reducible>(proxy: &GroupProxy<C>, entry: Entry<C, T>) -> Self {
        PerMember(Callback::group_member(proxy, 0, entry))
    }

    /// To `entry` of the array element whose index is the member's rank.
    pub fn array_by_rank<C: Chare, T: Reducible>(
        proxy: &ArrayProxy<C, usize>,
        entry: Entry<C, T>,
    ) -> Self {
        PerMember(Callback::array_element(proxy, &0usize, entry))
    }

    /// The callback of the member of `rank` on `pe`.
    pub fn callback(&self, rank: u32, pe: Pe) -> Callback {
        match &self.0 {
            cb @ Callback::GroupMember { .. } => cb.with_pe(pe),
            cb => cb.with_element(&(rank as usize)),
        }
    }
}

/// PEs of this member's children in the section's tree re-rooted at `root`.
pub(crate) fn children(section: RangeMember, root: u32) -> Vec<Pe> {
    let member = Member::Range(section);
    let view = Rerooted::new(&member, root);
    (0..view.k()).map_while(|i| view.child_pe(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::RangeSection;
    use std::collections::BTreeSet;

    #[test]
    fn the_rerooted_tree_reaches_every_member_once() {
        let sec = RangeSection::world(50, 3).unwrap().split(4, 48, 4).unwrap();
        for root in 0..sec.size() {
            let mut seen = BTreeSet::new();
            let mut frontier = vec![sec.pe(root).unwrap()];
            while let Some(pe) = frontier.pop() {
                assert!(seen.insert(pe), "PE {pe} reached twice");
                frontier.extend(children(RangeMember::new(sec, pe).unwrap(), root));
            }
            let all: BTreeSet<Pe> = (0..sec.size()).map(|r| sec.pe(r).unwrap()).collect();
            assert_eq!(seen, all);
        }
    }
}
