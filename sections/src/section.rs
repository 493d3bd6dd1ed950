//! What creation produces: section identities, a member's place in the section tree,
//! and the check that a set of places forms a valid section.

use crate::hash::mix64;
use crate::kary;
use chorus_core::Pe;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// `SectionId::creator` of the world section, which no PE created.
pub const WORLD_CREATOR: Pe = Pe::MAX;

/// `SectionId::creator` of a section named by its roster ([`SectionId::of_roster`]).
pub const ROSTER_CREATOR: Pe = Pe::MAX - 1;

/// Identity of a section, unique without global agreement (the RBC paper's context
/// ids, section VI): a creator PE and that PE's local counter name a section built by
/// an algorithm; a range keeps its base's pair and adds its first PE, stride, size and
/// nesting depth, all computed locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SectionId {
    /// PE that named the base section (WORLD_CREATOR for the world).
    pub creator: Pe,
    /// The creator's count of sections it had named before this one.
    pub counter: u32,
    /// First world PE of a range (0 for a section that is not a range).
    pub first: u32,
    /// World-PE stride of a range (1 for a section that is not a range).
    pub stride: u32,
    /// Number of members.
    pub count: u32,
    /// How many range splits lead from the base to this section.
    pub depth: u32,
}

impl SectionId {
    /// The id of the world of `npes` PEs.
    pub fn world(npes: u32) -> Self {
        SectionId {
            creator: WORLD_CREATOR,
            counter: 0,
            first: 0,
            stride: 1,
            count: npes,
            depth: 0,
        }
    }

    /// The id of a section of `count` members named by `creator`'s `counter`-th creation.
    pub fn created(creator: Pe, counter: u32, count: u32) -> Self {
        SectionId {
            creator,
            counter,
            first: 0,
            stride: 1,
            count,
            depth: 0,
        }
    }

    /// The id of the section whose rank r is `roster[r]`, the same on every PE that
    /// computes it from the same roster and `salt`: a fixed 64-bit hash of the PEs in
    /// order and the salt (two rosters share an id with a chance of 2^-64), their
    /// first PE and their count. A new salt names a new section of the same PEs.
    pub fn of_roster(roster: &[Pe], salt: u64) -> Self {
        let h = roster
            .iter()
            .fold(mix64(roster.len() as u64 ^ mix64(salt)), |h, &pe| {
                mix64(h ^ u64::from(pe))
            });
        SectionId {
            creator: ROSTER_CREATOR,
            counter: h as u32,
            first: roster.first().copied().unwrap_or(0),
            stride: 1,
            count: roster.len() as u32,
            depth: (h >> 32) as u32,
        }
    }

    /// The pair (creator, counter) packed into one word, as creation protocols carry it.
    pub fn token(creator: Pe, counter: u32) -> u64 {
        (u64::from(creator) << 32) | u64::from(counter)
    }

    /// The id named by a token for a section of `count` members.
    pub fn from_token(token: u64, count: u32) -> Self {
        SectionId::created((token >> 32) as Pe, token as u32, count)
    }
}

impl std::fmt::Display for SectionId {
    /// `world`, or `#c of PE p` for a built section; a range split from it adds its
    /// PEs (`first`, `stride`, `count`) and nesting depth.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.creator == WORLD_CREATOR {
            write!(f, "world")?;
        } else if self.creator == ROSTER_CREATOR {
            let hash = u64::from(self.depth) << 32 | u64::from(self.counter);
            return write!(
                f,
                "roster {hash:016x} of {} PEs from {}",
                self.count, self.first
            );
        } else {
            write!(f, "#{} of PE {}", self.counter, self.creator)?;
        }
        if self.depth > 0 {
            write!(
                f,
                " / range of {} PEs from {} by {} (depth {})",
                self.count, self.first, self.stride, self.depth
            )?;
        }
        Ok(())
    }
}

/// A member's place in a new section, in the ids the creation protocol ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The creation's token (the new section's name, chosen at the parent's root).
    pub token: u64,
    /// The member's rank, 0..size.
    pub rank: u32,
    /// Number of members.
    pub size: u32,
    /// Branching factor of the tree.
    pub k: u32,
    /// Id of the member holding rank (rank-1)/k, None at rank 0.
    pub parent: Option<u32>,
    /// Ids of the members holding ranks k*rank+1 .., in rank order.
    pub children: Vec<u32>,
}

/// A member's view of a section built by an algorithm: its id, rank, size and
/// neighbours in the balanced k-ary tree, as PEs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// The section's identity.
    pub id: SectionId,
    /// This member's rank, 0..size.
    pub rank: u32,
    /// Number of members.
    pub size: u32,
    /// Branching factor of the tree.
    pub k: u32,
    /// PE of the parent in the tree (rank (rank-1)/k), None at rank 0.
    pub parent: Option<Pe>,
    /// PEs of the children (ranks k*rank+1 ..), in rank order.
    pub children: Vec<Pe>,
}

impl Section {
    /// Rank `rank`'s view of section `id` whose rank r is `roster[r]`, with a k-ary
    /// tree over the ranks.
    pub fn over_roster(id: SectionId, rank: u32, k: u32, roster: &[Pe]) -> Section {
        let size = roster.len() as u32;
        Section {
            id,
            rank,
            size,
            k,
            parent: kary::parent(rank, k).map(|p| roster[p as usize]),
            children: kary::children(rank, size, k)
                .map(|c| roster[c as usize])
                .collect(),
        }
    }
}

/// How a set of placements fails to be a section over the given members.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InvalidSection {
    /// A member ended without a place, or a non-member got one.
    #[error("id {id}: member={member} but placed={placed}")]
    Membership {
        /// The id.
        id: u32,
        /// Whether the id is a member.
        member: bool,
        /// Whether the id got a placement.
        placed: bool,
    },
    /// Members disagree on the size, the token or k, or the size is not the member count.
    #[error("id {id}: size {size} token {token} k {k}, expected size {want_size} token {want_token} k {want_k}")]
    Header {
        /// The member's id.
        id: u32,
        /// The size in its placement.
        size: u32,
        /// The token in its placement.
        token: u64,
        /// The branching factor in its placement.
        k: u32,
        /// The number of members.
        want_size: u32,
        /// The creation's token.
        want_token: u64,
        /// The creation's branching factor.
        want_k: u32,
    },
    /// Two members hold one rank, or a rank is out of range.
    #[error("rank {rank} is held by ids {first:?} and {second}")]
    Rank {
        /// The rank.
        rank: u32,
        /// The id that already holds it, None if the rank is out of range.
        first: Option<u32>,
        /// The id that claims it as well.
        second: u32,
    },
    /// A member's parent or children are not the members holding the tree ranks.
    #[error("id {id} (rank {rank}): tree neighbours {got:?}, expected {want:?}")]
    Tree {
        /// The member's id.
        id: u32,
        /// The member's rank.
        rank: u32,
        /// Its parent and children, as placed.
        got: (Option<u32>, Vec<u32>),
        /// The holders of its parent and child ranks.
        want: (Option<u32>, Vec<u32>),
    },
}

/// Check that `placed[id]` (one entry per id) is a section over exactly the ids with
/// `members[id]`: ranks a bijection onto 0..m, one size, token and k, and every
/// member's neighbours the holders of its parent and child ranks in the k-ary tree.
pub fn check(
    members: &[bool],
    placed: &[Option<Placement>],
    token: u64,
    k: u32,
) -> Result<(), InvalidSection> {
    let m = members.iter().filter(|&&b| b).count() as u32;
    let mut holder: Vec<Option<u32>> = vec![None; m as usize];
    for (id, (&member, p)) in members.iter().zip(placed).enumerate() {
        let id = id as u32;
        let Some(p) = p else {
            if member {
                return Err(InvalidSection::Membership {
                    id,
                    member,
                    placed: false,
                });
            }
            continue;
        };
        if !member {
            return Err(InvalidSection::Membership {
                id,
                member,
                placed: true,
            });
        }
        if p.size != m || p.token != token || p.k != k {
            return Err(InvalidSection::Header {
                id,
                size: p.size,
                token: p.token,
                k: p.k,
                want_size: m,
                want_token: token,
                want_k: k,
            });
        }
        match holder.get_mut(p.rank as usize) {
            Some(slot @ None) => *slot = Some(id),
            other => {
                return Err(InvalidSection::Rank {
                    rank: p.rank,
                    first: other.and_then(|s| *s),
                    second: id,
                })
            }
        }
    }
    for (id, p) in placed.iter().enumerate() {
        let Some(p) = p else { continue };
        let by_rank = |r: u32| holder[r as usize].expect("every rank is held");
        let want = (
            kary::parent(p.rank, k).map(by_rank),
            kary::children(p.rank, m, k)
                .map(by_rank)
                .collect::<Vec<_>>(),
        );
        if (p.parent, &p.children) != (want.0, &want.1) {
            return Err(InvalidSection::Tree {
                id: id as u32,
                rank: p.rank,
                got: (p.parent, p.children.clone()),
                want,
            });
        }
    }
    Ok(())
}
