//! A member's view of a section, as the collectives need it: identity, rank, size,
//! branching factor, tree neighbours as PEs and — where the section has one — the
//! PE of any rank.
//!
//! Range sections compute everything in O(1) from their id. Sections built by a
//! creation algorithm (`section::Section`) only know their tree neighbours, so every
//! tree collective (broadcast, reduce, allreduce, barrier, scan, exscan, gather,
//! gatherv, tree allgather) runs on them; the Bruck, k-port and ring allgathers
//! address arbitrary ranks and need a rank→PE table ([`TreeMember::with_roster`]).

use super::error::CollectiveError;
use crate::kary;
use crate::range::RangeSection;
use crate::section::{Section, SectionId};
use chorus_core::Pe;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a member of any section knows about it.
pub trait Topology {
    /// The section's identity.
    fn id(&self) -> SectionId;
    /// This member's rank, 0..size.
    fn rank(&self) -> u32;
    /// Number of members.
    fn size(&self) -> u32;
    /// Branching factor of the section's tree.
    fn k(&self) -> u32;
    /// This member's PE.
    fn my_pe(&self) -> Pe;
    /// The PE of `rank`, when the member can know it (None without a roster).
    fn pe_of(&self, rank: u32) -> Option<Pe>;
    /// PE of this member's tree parent (None at rank 0).
    fn parent_pe(&self) -> Option<Pe>;
    /// PE of this member's `i`-th tree child (rank k*rank+1+i), if it exists.
    fn child_pe(&self, i: u32) -> Option<Pe>;
    /// True if `pe_of` answers for every rank.
    fn has_roster(&self) -> bool;
}

/// A member of a range section: O(1) state, every rank's PE computable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeMember {
    section: RangeSection,
    rank: u32,
}

impl RangeMember {
    /// The member of `section` on `pe`.
    pub fn new(section: RangeSection, pe: Pe) -> Result<Self, CollectiveError> {
        let rank = section.rank(pe).ok_or(CollectiveError::NotAMember { pe })?;
        Ok(RangeMember { section, rank })
    }

    /// The section this member belongs to.
    pub fn section(&self) -> RangeSection {
        self.section
    }
}

impl Topology for RangeMember {
    fn id(&self) -> SectionId {
        self.section.id()
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.section.size()
    }
    fn k(&self) -> u32 {
        self.section.k()
    }
    fn my_pe(&self) -> Pe {
        self.section
            .pe(self.rank)
            .expect("a member's rank is in range")
    }
    fn pe_of(&self, rank: u32) -> Option<Pe> {
        self.section.pe(rank)
    }
    fn parent_pe(&self) -> Option<Pe> {
        self.section.parent(self.rank).map(|(_, pe)| pe)
    }
    fn child_pe(&self, i: u32) -> Option<Pe> {
        (i < self.section.k())
            .then(|| self.section.children(self.rank).nth(i as usize))
            .flatten()
            .map(|(_, pe)| pe)
    }
    fn has_roster(&self) -> bool {
        true
    }
}

/// A member of a section built by a creation algorithm, with the rank→PE table when
/// the application has one (creation hands each member only its tree neighbours).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeMember {
    section: Section,
    me: Pe,
    roster: Option<Arc<Vec<Pe>>>,
}

impl TreeMember {
    /// The member on `me` that knows only its tree neighbours.
    pub fn new(section: Section, me: Pe) -> Self {
        TreeMember {
            section,
            me,
            roster: None,
        }
    }

    /// The member on `me` with `roster[rank]` = PE of every rank; it must hold `me`
    /// at this member's rank and agree with the tree neighbours. Give the roster to
    /// every member of the section or to none: members with one take shortcuts
    /// (re-rooted trees, doubling scans) that members without one do not follow.
    pub fn with_roster(section: Section, me: Pe, roster: Vec<Pe>) -> Result<Self, CollectiveError> {
        let r = section.rank;
        let bad = || CollectiveError::BadRoster {
            len: roster.len(),
            size: section.size,
            rank: r,
            pe: me,
        };
        if roster.len() != section.size as usize || roster.get(r as usize) != Some(&me) {
            return Err(bad());
        }
        let parent = kary::parent(r, section.k).map(|p| roster[p as usize]);
        let children: Vec<Pe> = kary::children(r, section.size, section.k)
            .map(|c| roster[c as usize])
            .collect();
        if parent != section.parent || children != section.children {
            return Err(bad());
        }
        Ok(TreeMember {
            section,
            me,
            roster: Some(Arc::new(roster)),
        })
    }
}

impl TreeMember {
    /// The member on `me` of the section whose rank r is `roster[r]`, with a k-ary
    /// tree over the ranks and the id [`SectionId::of_roster`] (with `salt`): any PE
    /// of the roster makes its own view alone, so survivors of a failure can make a
    /// fresh section of themselves without a creation.
    pub fn of_roster(roster: Vec<Pe>, k: u32, me: Pe, salt: u64) -> Result<Self, CollectiveError> {
        let size = roster.len() as u32;
        let bad = || CollectiveError::BadRoster {
            len: roster.len(),
            size,
            rank: size,
            pe: me,
        };
        let rank = roster.iter().position(|&pe| pe == me).ok_or_else(bad)? as u32;
        if !(kary::MIN_K..=kary::MAX_K).contains(&k) {
            return Err(CollectiveError::BadSection {
                rank,
                size,
                k,
                has_parent: rank > 0,
                children: 0,
                want_children: 0,
            });
        }
        let section = Section::over_roster(SectionId::of_roster(&roster, salt), rank, k, &roster);
        TreeMember::with_roster(section, me, roster)
    }
}

impl Topology for TreeMember {
    fn id(&self) -> SectionId {
        self.section.id
    }
    fn rank(&self) -> u32 {
        self.section.rank
    }
    fn size(&self) -> u32 {
        self.section.size
    }
    fn k(&self) -> u32 {
        self.section.k
    }
    fn my_pe(&self) -> Pe {
        self.me
    }
    fn pe_of(&self, rank: u32) -> Option<Pe> {
        if rank == self.section.rank {
            return Some(self.me);
        }
        self.roster.as_ref()?.get(rank as usize).copied()
    }
    fn parent_pe(&self) -> Option<Pe> {
        self.section.parent
    }
    fn child_pe(&self, i: u32) -> Option<Pe> {
        self.section.children.get(i as usize).copied()
    }
    fn has_roster(&self) -> bool {
        self.roster.is_some()
    }
}

/// Either kind of member, as the collectives host carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Member {
    /// A member of a range section.
    Range(RangeMember),
    /// A member of an algorithm-built section.
    Tree(TreeMember),
}

impl From<RangeMember> for Member {
    fn from(m: RangeMember) -> Self {
        Member::Range(m)
    }
}

impl From<TreeMember> for Member {
    fn from(m: TreeMember) -> Self {
        Member::Tree(m)
    }
}

macro_rules! both {
    ($self:ident, $m:ident => $e:expr) => {
        match $self {
            Member::Range($m) => $e,
            Member::Tree($m) => $e,
        }
    };
}

impl Topology for Member {
    fn id(&self) -> SectionId {
        both!(self, m => m.id())
    }
    fn rank(&self) -> u32 {
        both!(self, m => m.rank())
    }
    fn size(&self) -> u32 {
        both!(self, m => m.size())
    }
    fn k(&self) -> u32 {
        both!(self, m => m.k())
    }
    fn my_pe(&self) -> Pe {
        both!(self, m => m.my_pe())
    }
    fn pe_of(&self, rank: u32) -> Option<Pe> {
        both!(self, m => m.pe_of(rank))
    }
    fn parent_pe(&self) -> Option<Pe> {
        both!(self, m => m.parent_pe())
    }
    fn child_pe(&self, i: u32) -> Option<Pe> {
        both!(self, m => m.child_pe(i))
    }
    fn has_roster(&self) -> bool {
        both!(self, m => m.has_roster())
    }
}

impl Member {
    /// True if `pe` holds a rank of this section, as far as the member can tell:
    /// with a roster, any rank; without one, its tree neighbours (the others are
    /// beyond what it knows).
    pub fn involves(&self, pe: Pe) -> bool {
        match self {
            Member::Range(m) => m.section.contains(pe),
            Member::Tree(t) => match &t.roster {
                Some(r) => r.contains(&pe),
                None => t.section.parent == Some(pe) || t.section.children.contains(&pe),
            },
        }
    }
}

/// Check that `member`'s view is a place in a k-ary tree, as the collectives route
/// on it: a rank below the size, k in `MIN_K..=MAX_K`, a parent unless at rank 0 and
/// exactly the rank's tree children (a forged or corrupted `Section` fails here).
pub(crate) fn check_view(member: &Member) -> Result<(), CollectiveError> {
    let (rank, size, k) = (member.rank(), member.size(), member.k());
    let fits = rank < size && (kary::MIN_K..=kary::MAX_K).contains(&k);
    let want_children = if fits {
        kary::num_children(rank, size, k)
    } else {
        0
    };
    let children = (0..=kary::MAX_K)
        .take_while(|&i| member.child_pe(i).is_some())
        .count();
    let has_parent = member.parent_pe().is_some();
    if fits && has_parent == (rank != 0) && children == want_children as usize {
        return Ok(());
    }
    Err(CollectiveError::BadSection {
        rank,
        size,
        k,
        has_parent,
        children,
        want_children,
    })
}

/// A member's view with the tree re-rooted at `root`: rank r appears as
/// (r - root) mod n, so a rooted collective needs no hop through rank 0. Needs a
/// roster unless `root` is 0, where it is the member's own view.
#[derive(Debug, Clone, Copy)]
pub struct Rerooted<'a> {
    member: &'a Member,
    root: u32,
}

impl<'a> Rerooted<'a> {
    /// `member`'s view with its tree rooted at rank `root`.
    pub fn new(member: &'a Member, root: u32) -> Self {
        debug_assert!(root == 0 || member.has_roster());
        Rerooted { member, root }
    }

    fn absolute(&self, rel: u32) -> u32 {
        ((u64::from(rel) + u64::from(self.root)) % u64::from(self.size())) as u32
    }
}

impl Topology for Rerooted<'_> {
    fn id(&self) -> SectionId {
        self.member.id()
    }
    fn rank(&self) -> u32 {
        let n = self.size();
        (self.member.rank() + n - self.root) % n
    }
    fn size(&self) -> u32 {
        self.member.size()
    }
    fn k(&self) -> u32 {
        self.member.k()
    }
    fn my_pe(&self) -> Pe {
        self.member.my_pe()
    }
    fn pe_of(&self, rank: u32) -> Option<Pe> {
        (rank < self.size())
            .then(|| self.member.pe_of(self.absolute(rank)))
            .flatten()
    }
    fn parent_pe(&self) -> Option<Pe> {
        if self.root == 0 {
            return self.member.parent_pe();
        }
        kary::parent(self.rank(), self.k()).and_then(|p| self.pe_of(p))
    }
    fn child_pe(&self, i: u32) -> Option<Pe> {
        if self.root == 0 {
            return self.member.child_pe(i);
        }
        let first = u64::from(self.rank()) * u64::from(self.k()) + 1;
        (i < kary::num_children(self.rank(), self.size(), self.k()))
            .then(|| self.pe_of((first + u64::from(i)) as u32))
            .flatten()
    }
    fn has_roster(&self) -> bool {
        self.member.has_roster()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_tree_members_agree_on_a_strided_range() {
        let world = RangeSection::world(30, 3).unwrap();
        let sec = world.split(2, 29, 3).unwrap();
        let roster: Vec<Pe> = (0..sec.size()).map(|r| sec.pe(r).unwrap()).collect();
        for (r, &pe) in roster.iter().enumerate() {
            let range = RangeMember::new(sec, pe).unwrap();
            let tree = Section {
                id: sec.id(),
                rank: r as u32,
                size: sec.size(),
                k: 3,
                parent: range.parent_pe(),
                children: (0..3).filter_map(|i| range.child_pe(i)).collect(),
            };
            let t = TreeMember::with_roster(tree.clone(), pe, roster.clone()).unwrap();
            let bare = TreeMember::new(tree, pe);
            assert_eq!(range.rank(), r as u32);
            for m in [&t as &dyn Topology, &bare] {
                assert_eq!(m.parent_pe(), range.parent_pe());
                assert_eq!(
                    (0..4).map(|i| m.child_pe(i)).collect::<Vec<_>>(),
                    (0..4).map(|i| range.child_pe(i)).collect::<Vec<_>>()
                );
            }
            assert_eq!(t.pe_of(0), Some(2));
            assert_eq!(bare.pe_of(0), (r == 0).then_some(2));
            assert!(!bare.has_roster());
        }
        assert_eq!(
            RangeMember::new(sec, 3),
            Err(CollectiveError::NotAMember { pe: 3 })
        );
    }

    #[test]
    fn a_rerooted_tree_is_the_kary_tree_of_shifted_ranks() {
        let sec = RangeSection::world(40, 3).unwrap().split(3, 39, 2).unwrap();
        let n = sec.size();
        for root in 0..n {
            for r in 0..n {
                let m = Member::from(RangeMember::new(sec, sec.pe(r).unwrap()).unwrap());
                let v = Rerooted::new(&m, root);
                let rel = (r + n - root) % n;
                assert_eq!(v.rank(), rel);
                let abs = |x: u32| sec.pe((x + root) % n);
                assert_eq!(v.parent_pe(), kary::parent(rel, 3).and_then(abs));
                let kids: Vec<_> = (0..4).filter_map(|i| v.child_pe(i)).collect();
                let want: Vec<_> = kary::children(rel, n, 3).filter_map(abs).collect();
                assert_eq!(kids, want);
            }
        }
    }

    #[test]
    fn a_roster_that_disagrees_is_refused() {
        let s = Section {
            id: SectionId::created(0, 0, 3),
            rank: 1,
            size: 3,
            k: 2,
            parent: Some(7),
            children: vec![],
        };
        assert!(TreeMember::with_roster(s.clone(), 5, vec![7, 5, 6]).is_ok());
        assert!(TreeMember::with_roster(s.clone(), 5, vec![8, 5, 6]).is_err());
        assert!(TreeMember::with_roster(s, 5, vec![7, 5]).is_err());
    }
}
