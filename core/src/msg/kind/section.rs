//! Array sections (Charm++'s `CkSectionInfo` and `CkMulticast`): a multicast going
//! down the section's tree over the home PEs of its members, and section reductions
//! coming up it (handled in `engine/section.rs`).

use super::payload_slot;
use super::{family, payload_in, Body};
use crate::base::ids::{CollectionId, Pe};
use crate::msg::array::ElemAddr;
use crate::msg::callback::Callback;
use crate::msg::payload::Payload;
use crate::msg::reduction::{Partial, Reducer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

family! {
    /// Array-section multicasts and reductions.
    SectionMsg {
        SectionCast = 27 => None;
        SectionReduce = 28 => Some("chorus::section_reduction");
    }
}

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
    fn wire_bytes(&self) -> u64 {
        let keys: usize = self
            .members
            .iter()
            .flatten()
            .map(|a| a.key.0.len() + 16)
            .sum();
        24 + 4 * self.roster.len() as u64 + keys as u64
    }
}

/// A multicast to every member of a section, for the PE of tree rank `rank`, in the
/// tree re-rooted at rank `root`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SectionCast {
    pub(crate) spec: Arc<SectionSpec>,
    pub(crate) root: u32,
    pub(crate) rank: u32,
    #[serde(with = "payload_slot")]
    pub(crate) payload: Payload,
}

impl Body for SectionCast {
    payload_in!(payload);
    fn needs(&self) -> Option<CollectionId> {
        Some(self.spec.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        self.spec.check(npes)?;
        let m = self.spec.roster.len() as u32;
        if self.root >= m || self.rank >= m {
            return Err(format!(
                "a section multicast names rank {} from root {} of {m}",
                self.rank, self.root
            ));
        }
        Ok(())
    }
    fn body_bytes(&self) -> u64 {
        self.spec.wire_bytes() + self.payload.wire_len()
    }
}

/// One tree node of a section reduction: the PE and how many contributions (its
/// members' and its children's partials) it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Node {
    pub(crate) pe: Pe,
    pub(crate) expect: u32,
}

/// A member's contribution, or a child's combined partial, to reduction `red` of
/// section `id`, for the node `path[0]`; the rest of `path` leads to the root, so no
/// PE keeps the section's tree to pass a reduction on.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SectionReduce {
    pub(crate) id: u64,
    pub(crate) coll: CollectionId,
    pub(crate) red: u32,
    pub(crate) path: Vec<Node>,
    pub(crate) reducer: Reducer,
    /// Boxed as a reduction's `Contribute` is: rare and large.
    pub(crate) body: Box<(Callback, Partial)>,
}

impl Body for SectionReduce {
    fn check(&self, npes: usize) -> Result<(), String> {
        match self
            .path
            .iter()
            .find(|n| n.pe as usize >= npes || n.expect == 0)
        {
            Some(n) => Err(format!(
                "a section reduction names PE {} waiting for {} of a job of {npes}",
                n.pe, n.expect
            )),
            None if self.path.is_empty() => Err("a section reduction has no path".into()),
            None => Ok(()),
        }
    }
    fn body_bytes(&self) -> u64 {
        32 + 8 * self.path.len() as u64 + bincode::serialized_size(&self.body.1).unwrap_or(0)
    }
}
