//! Range sections (the RBC paper's range-based communicators): ranks f..=l with
//! stride s of the world or of another range, created and split locally in O(1)
//! without a message; ranks map to PEs and back in O(1), and so does the tree.

use crate::kary;
use crate::section::SectionId;
use chorus_core::Pe;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a range section cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RangeError {
    /// The world has no PE.
    #[error("a section needs at least one PE")]
    Empty,
    /// The branching factor is outside 2..=16.
    #[error("branching factor {0} is outside {min}..={max}", min = kary::MIN_K, max = kary::MAX_K)]
    BadK(u32),
    /// The first rank comes after the last.
    #[error("range {first}..={last} is reversed")]
    Reversed {
        /// The first rank asked for.
        first: u32,
        /// The last rank asked for.
        last: u32,
    },
    /// The last rank is not a rank of the parent.
    #[error("rank {last} is outside a section of {size}")]
    OutOfRange {
        /// The last rank asked for.
        last: u32,
        /// The number of ranks in the parent.
        size: u32,
    },
    /// A stride of zero.
    #[error("a stride must be at least 1")]
    ZeroStride,
}

/// A section whose members are the world PEs first, first+stride, .. (count of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RangeSection {
    id: SectionId,
    k: u32,
}

fn check_k(k: u32) -> Result<u32, RangeError> {
    if (kary::MIN_K..=kary::MAX_K).contains(&k) {
        Ok(k)
    } else {
        Err(RangeError::BadK(k))
    }
}

impl RangeSection {
    /// All `npes` PEs, with a k-ary tree.
    pub fn world(npes: u32, k: u32) -> Result<Self, RangeError> {
        if npes == 0 {
            return Err(RangeError::Empty);
        }
        Ok(RangeSection {
            id: SectionId::world(npes),
            k: check_k(k)?,
        })
    }

    /// The members holding ranks first, first+stride, .. up to last of this section,
    /// nested inside it (no message; O(1)); the new section keeps this one's k.
    pub fn split(&self, first: u32, last: u32, stride: u32) -> Result<Self, RangeError> {
        if stride == 0 {
            return Err(RangeError::ZeroStride);
        }
        if first > last {
            return Err(RangeError::Reversed { first, last });
        }
        if last >= self.size() {
            return Err(RangeError::OutOfRange {
                last,
                size: self.size(),
            });
        }
        let count = (last - first) / stride + 1;
        // Strides compose: ranks f + s*j of a range (F, S) are PEs F + S*f + S*s*j. A
        // single member keeps stride 1 so nested strides cannot overflow.
        let world_stride = if count == 1 {
            1
        } else {
            (u64::from(self.id.stride) * u64::from(stride)) as u32
        };
        Ok(RangeSection {
            id: SectionId {
                first: self.pe(first).expect("first is a rank here"),
                stride: world_stride,
                count,
                depth: self.id.depth + 1,
                ..self.id
            },
            k: self.k,
        })
    }

    /// The same members with another branching factor.
    pub fn with_k(&self, k: u32) -> Result<Self, RangeError> {
        Ok(RangeSection {
            id: self.id,
            k: check_k(k)?,
        })
    }

    /// The section's identity.
    pub fn id(&self) -> SectionId {
        self.id
    }

    /// Number of members.
    pub fn size(&self) -> u32 {
        self.id.count
    }

    /// Branching factor of the tree.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The PE holding `rank`.
    pub fn pe(&self, rank: u32) -> Option<Pe> {
        (rank < self.id.count).then(|| self.id.first + rank * self.id.stride)
    }

    /// The rank `pe` holds, if it is a member.
    pub fn rank(&self, pe: Pe) -> Option<u32> {
        let offset = pe.checked_sub(self.id.first)?;
        let rank = offset / self.id.stride;
        (offset % self.id.stride == 0 && rank < self.id.count).then_some(rank)
    }

    /// True if `pe` is a member.
    pub fn contains(&self, pe: Pe) -> bool {
        self.rank(pe).is_some()
    }

    /// The parent of `rank` in the section's tree, as (rank, PE).
    pub fn parent(&self, rank: u32) -> Option<(u32, Pe)> {
        let p = kary::parent(rank, self.k)?;
        (rank < self.size()).then(|| (p, self.id.first + p * self.id.stride))
    }

    /// The children of `rank` in the section's tree, as (rank, PE).
    pub fn children(&self, rank: u32) -> impl Iterator<Item = (u32, Pe)> {
        let (first, stride) = (self.id.first, self.id.stride);
        kary::children(rank, self.size(), self.k).map(move |c| (c, first + c * stride))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strided_range_of_a_range() {
        let world = RangeSection::world(100, 2).unwrap();
        let odd = world.split(1, 99, 2).unwrap();
        assert_eq!(odd.size(), 50);
        assert_eq!(odd.pe(3), Some(7));
        let inner = odd.split(2, 40, 3).unwrap();
        assert_eq!(inner.size(), 13);
        assert_eq!(
            (0..inner.size())
                .map(|r| inner.pe(r).unwrap())
                .collect::<Vec<_>>(),
            (0..13).map(|j| 5 + 6 * j).collect::<Vec<_>>()
        );
        assert_eq!(inner.rank(11), Some(1));
        assert_eq!(inner.rank(12), None);
        assert_eq!(inner.rank(3), None);
        assert_eq!(inner.id().depth, 2);
        assert_eq!(
            inner.id().to_string(),
            "world / range of 13 PEs from 5 by 6 (depth 2)"
        );
        assert_eq!(world.id().to_string(), "world");
        assert_eq!(SectionId::created(3, 7, 10).to_string(), "#7 of PE 3");
        assert_ne!(inner.id(), odd.id());
        assert_eq!(world.split(0, 99, 1).unwrap().size(), 100);
        assert_ne!(world.split(0, 99, 1).unwrap().id(), world.id());
    }

    #[test]
    fn bad_ranges_are_refused() {
        let world = RangeSection::world(10, 3).unwrap();
        assert_eq!(
            world.split(5, 4, 1),
            Err(RangeError::Reversed { first: 5, last: 4 })
        );
        assert_eq!(
            world.split(0, 10, 1),
            Err(RangeError::OutOfRange { last: 10, size: 10 })
        );
        assert_eq!(world.split(0, 3, 0), Err(RangeError::ZeroStride));
        assert_eq!(RangeSection::world(0, 3), Err(RangeError::Empty));
        assert_eq!(RangeSection::world(4, 1), Err(RangeError::BadK(1)));
        assert_eq!(world.with_k(17), Err(RangeError::BadK(17)));
    }

    proptest! {
        #[test]
        fn nested_splits_map_ranks_both_ways(
            npes in 1u32..5000,
            k in kary::MIN_K..=kary::MAX_K,
            cuts in prop::collection::vec((any::<u32>(), any::<u32>(), 1u32..7), 1..5),
        ) {
            let mut sec = RangeSection::world(npes, k).unwrap();
            // The reference: the list of world PEs, cut the same way.
            let mut pes: Vec<u32> = (0..npes).collect();
            for (a, b, s) in cuts {
                let n = sec.size();
                let (f, l) = (a % n, b % n);
                let (f, l) = (f.min(l), f.max(l));
                sec = sec.split(f, l, s).unwrap();
                pes = pes[f as usize..=l as usize].iter().step_by(s as usize).copied().collect();
                prop_assert_eq!(sec.size() as usize, pes.len());
            }
            for (r, &pe) in pes.iter().enumerate() {
                prop_assert_eq!(sec.pe(r as u32), Some(pe));
                prop_assert_eq!(sec.rank(pe), Some(r as u32));
            }
            let members = pes.len() as u32;
            for pe in 0..npes {
                prop_assert_eq!(sec.contains(pe), pes.binary_search(&pe).is_ok());
            }
            for r in 0..members {
                let kids: Vec<_> = sec.children(r).collect();
                for &(c, pe) in &kids {
                    prop_assert_eq!(sec.parent(c), Some((r, sec.pe(r).unwrap())));
                    prop_assert_eq!(sec.pe(c), Some(pe));
                }
                prop_assert_eq!(kids.len() as u32, kary::num_children(r, members, k));
            }
        }
    }
}
