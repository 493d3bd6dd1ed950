//! MPI_Comm_split as MPICH implements it, as a chorus program (`--sections
//! split-model`), so JQuick on range sections can be set against JQuick with a
//! modelled split per level on any layer, the simulator's 32,768 PEs included.
//!
//! One split of a parent group of p members, on every member (`MPIR_Comm_split_impl`):
//! 1. an allgather of every member's (colour, key), 8 bytes each, over the parent, by
//!    the algorithm MPICH picks for p (`gather`: recursive doubling on powers of two,
//!    else Bruck; Bruck also where MPICH would take the ring);
//! 2. `MPIR_Get_contextid_sparse`: an allreduce (bitwise and) of the context-id mask,
//!    [`CONTEXT_WORDS`] words, over the parent, undefined members included;
//! 3. locally, a scan of the p pairs for one's colour and a sort of the m members of it
//!    by (key, old rank) (`table::new_group`), charged on the simulator by
//!    [`local_cost`]; the child task starts only after this.
//!
//! A janus PE belongs to both children, so, as in `mpi_split.rs`, every parent splits
//! once per distributed child (colour 0 for its members, undefined for the rest, key 0)
//! and the second split starts after the first returned: MPI_Comm_split blocks. The
//! data exchange follows both splits, as in `mpi_split.rs`. Everything else — pivot,
//! counts, exchange, base cases — is the range-section code path, so the comparison
//! isolates group creation. What the model leaves out makes MPI faster than MPICH:
//! the ring for long allgathers, `MPIR_Comm_commit`'s hierarchy set-up, and blocking
//! (a janus PE runs its two tasks' splits concurrently, the schedule no cascade can
//! slow down).

pub mod gather;
pub mod table;

use super::task::TaskKey;
use crate::mpi_model::script_run::ScriptRun;
use chorus_sections::range::RangeSection;
use gather::PairGather;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;
use table::PairTable;

pub use crate::mpi_model::{CONTEXT_WORDS, NS_PER_PAIR};

/// Modelled time per comparison of the key sort, ns: glibc's `qsort` (a merge sort)
/// with MPICH's `sorttype_compare` measured 3.4 ns (512 members) to 6.9 ns (16,384)
/// on the EPYC that measured [`NS_PER_PAIR`]. Both are a modern 3 GHz core's; Blue Gene/P's
/// 850 MHz cores would take about three times as long, so they err in MPI's favour.
pub const NS_PER_COMPARISON: f64 = 7.0;

/// Comparisons glibc's merge sort makes on m members whose keys arrive in order (key
/// 0 everywhere, as JQuick splits): m/2 per level of log2 m levels (measured: 114,688
/// for 16,384).
pub fn comparisons(m: u32) -> f64 {
    let m = f64::from(m);
    if m < 2.0 {
        0.0
    } else {
        m / 2.0 * m.log2().ceil()
    }
}

/// Modelled local time of one split for a member: the scan of the parent's `p` pairs
/// and the sort of its group's `m`; nothing for an undefined member, which MPICH lets
/// skip both.
pub fn local_cost(p: u32, m: Option<u32>) -> Duration {
    match m {
        None => Duration::ZERO,
        Some(m) => {
            let ns = NS_PER_PAIR * f64::from(p) + NS_PER_COMPARISON * comparisons(m);
            Duration::from_nanos(ns as u64)
        }
    }
}

/// Names one split: the parent task and which child (0 left, 1 right) it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitId {
    /// The task whose group is split.
    pub parent: TaskKey,
    /// The child the split makes.
    pub child: u8,
}

impl SplitId {
    /// The four words the context-id allreduce carries to name it.
    pub fn words(&self) -> [u64; 4] {
        let [a, b, d] = self.parent.words();
        [a, b, d, u64::from(self.child)]
    }

    /// The split named by the first four words of a context-id result.
    pub fn from_words(v: &[u64]) -> Option<Self> {
        Some(SplitId {
            parent: TaskKey::from_words(v)?,
            child: u8::try_from(*v.get(3)?).ok()?,
        })
    }
}

/// One parent's splits on this PE.
#[derive(Debug)]
pub struct ParentSplits {
    /// The parent's group.
    pub section: RangeSection,
    /// The two children.
    pub children: [TaskKey; 2],
    /// The child whose split is under way or next (2 once both are done).
    pub next: u8,
    /// This PE's new group for each child it is a member of.
    pub groups: [Option<RangeSection>; 2],
}

/// A PE's splits under way. Each map holds at most one entry per task this PE runs a
/// level of at once (two for a janus PE), plus messages of splits it has not reached,
/// which come from its parents' members and stop when those splits end.
#[derive(Debug, Default)]
pub struct Splits {
    /// Parents being split, by parent task.
    pub parents: HashMap<TaskKey, ParentSplits>,
    /// Allgathers under way.
    pub gathers: HashMap<SplitId, PairGather>,
    /// Allgather messages that came before this PE started their split: (round, pairs).
    pub early: HashMap<SplitId, Vec<(u32, PairTable)>>,
    /// Gathered tables waiting for their context id.
    pub tables: HashMap<SplitId, PairTable>,
    /// Modelled MPI_Comm_create_groups under way (the create-group-model modes), named as
    /// splits are: at most one per task this PE runs a level of at once.
    pub creating: HashMap<SplitId, ScriptRun>,
    /// Tags of leaders' exchanges that came before this PE started their creation
    /// (it was still finishing the parent's level or its other child's group): at most
    /// one per round of each creation of this PE's parents' children.
    pub early_exchanges: HashMap<SplitId, Vec<u32>>,
}

/// The range section a modelled split made: the members' old ranks must be a run of
/// the parent's in order (JQuick's children are), and they give the child's range.
pub fn group_section(parent: RangeSection, members: &[u32]) -> RangeSection {
    let (first, last) = (members[0], members[members.len() - 1]);
    assert!(
        members.iter().zip(first..).all(|(&m, r)| m == r),
        "a modelled split made a group that is not a range of its parent"
    );
    parent
        .split(first, last, 1)
        .expect("a split's members are ranks of its parent")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_and_names() {
        assert_eq!(comparisons(16_384), 114_688.0);
        assert_eq!(local_cost(100, None), Duration::ZERO);
        assert_eq!(local_cost(1000, Some(1)), Duration::from_nanos(1500));
        let id = SplitId {
            parent: TaskKey {
                a: 3,
                b: 90,
                depth: 2,
            },
            child: 1,
        };
        assert_eq!(SplitId::from_words(&id.words()), Some(id));
        let world = RangeSection::world(10, 4).unwrap();
        assert_eq!(
            group_section(world, &[3, 4, 5]),
            world.split(3, 5, 1).unwrap()
        );
    }
}
