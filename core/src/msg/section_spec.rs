//! What every PE of an array section knows of it, carried by its multicasts, its
//! reductions and the callbacks that name it (`msg/kind/section.rs`,
//! `Callback::Section`).

use crate::base::ids::{CollectionId, Pe};
use crate::msg::array::ElemAddr;
use serde::{Deserialize, Serialize};

/// What every PE of a section knows of it: its members, grouped by the PE the
/// array's map places them on (their home), and the tree over those PEs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SectionSpec {
    /// Unique per section: the creating PE and its count of sections made before.
    pub(crate) id: u64,
    /// The array the members belong to.
    pub(crate) coll: CollectionId,
    /// Branching factor of the tree over `roster`.
    pub(crate) k: u32,
    /// The members' home PEs, ascending: rank r of the tree is `roster[r]`.
    pub(crate) roster: Vec<Pe>,
    /// `members[r]`: the members homed on `roster[r]`, ascending by key.
    pub(crate) members: Vec<Vec<ElemAddr>>,
}

impl SectionSpec {
    /// Tree rank of `pe`, if it is one of the section's PEs.
    pub(crate) fn rank_of(&self, pe: Pe) -> Option<u32> {
        self.roster.binary_search(&pe).ok().map(|r| r as u32)
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.members.iter().map(Vec::len).sum()
    }

    /// What is wrong with it as received: ranks and member lists that do not match,
    /// a PE outside the job, a branching factor the tree cannot use.
    pub(crate) fn check(&self, npes: usize) -> Result<(), String> {
        let sorted = self.roster.windows(2).all(|w| w[0] < w[1]);
        if self.roster.is_empty() || !sorted || self.members.len() != self.roster.len() {
            return Err("a section's PEs are empty, unsorted or not one list per PE".into());
        }
        if self.roster.iter().any(|&pe| pe as usize >= npes) {
            return Err(format!(
                "a section names a PE outside the {npes} of the job"
            ));
        }
        if self.k < 2 {
            return Err(format!("a section tree's branching factor is {}", self.k));
        }
        Ok(())
    }

    /// Bytes it takes on a wire, for traces.
    pub(crate) fn wire_bytes(&self) -> u64 {
        let keys: usize = self
            .members
            .iter()
            .flatten()
            .map(|a| a.key.len() + 16)
            .sum();
        24 + 4 * self.roster.len() as u64 + keys as u64
    }
}
