//! The balanced k-ary tree over ranks 0..m-1 (the langer paper's equations 1-4): the
//! parent of rank r is (r-1)/k and its children are k*r+1 ..= k*r+k.

/// Smallest branching factor a section tree may have.
pub const MIN_K: u32 = 2;
/// Largest branching factor a section tree may have.
pub const MAX_K: u32 = 16;

/// Parent of `rank`, or None for the root.
pub fn parent(rank: u32, k: u32) -> Option<u32> {
    (rank > 0).then(|| (rank - 1) / k)
}

/// Number of children of `rank` in a tree of `m` ranks (equation 1).
pub fn num_children(rank: u32, m: u32, k: u32) -> u32 {
    let first = u64::from(rank) * u64::from(k) + 1;
    let m = u64::from(m);
    if first >= m {
        0
    } else {
        (m - first).min(u64::from(k)) as u32
    }
}

/// Ranks of the children of `rank` in a tree of `m` ranks (equation 3).
pub fn children(rank: u32, m: u32, k: u32) -> impl Iterator<Item = u32> {
    let first = rank as u64 * k as u64 + 1;
    (0..num_children(rank, m, k)).map(move |i| (first + u64::from(i)) as u32)
}

/// The child of `r` on the way down to `t` in a k-ary tree, if `t` is below `r`.
pub(crate) fn child_towards(r: u32, t: u32, k: u32) -> Option<u32> {
    let mut x = t;
    while let Some(p) = parent(x, k) {
        if p == r {
            return Some(x);
        }
        x = p;
    }
    None
}

/// Number of levels of a tree of `m` ranks, d_{m,k} (equation 4); 0 for an empty tree.
pub fn height(m: u32, k: u32) -> u32 {
    let (mut covered, mut width, mut levels) = (0u64, 1u64, 0u32);
    while covered < u64::from(m) {
        covered += width;
        width = width.saturating_mul(u64::from(k));
        levels += 1;
    }
    levels
}

/// Level of `rank` counted from 1 at the root: d_{rank+1,k}, the paper's generation number.
pub fn generation(rank: u32, k: u32) -> u32 {
    height(rank + 1, k)
}

/// Number of ranks in the subtree rooted at `rank` in a tree of `m` ranks.
pub fn subtree_size(rank: u32, m: u32, k: u32) -> u32 {
    let (m, k) = (u64::from(m), u64::from(k));
    let (mut lo, mut hi, mut size) = (u64::from(rank), u64::from(rank), 0u64);
    while lo < m {
        size += hi.min(m - 1) - lo + 1;
        lo = lo * k + 1;
        hi = hi * k + k;
    }
    size as u32
}

/// Ranks of the subtree rooted at `rank` in a tree of `m` ranks, in increasing order.
pub fn subtree_ranks(rank: u32, m: u32, k: u32) -> Vec<u32> {
    let (m64, k64) = (u64::from(m), u64::from(k));
    let mut out = Vec::with_capacity(subtree_size(rank, m, k) as usize);
    let (mut lo, mut hi) = (u64::from(rank), u64::from(rank));
    while lo < m64 {
        out.extend((lo..=hi.min(m64 - 1)).map(|r| r as u32));
        lo = lo * k64 + 1;
        hi = hi * k64 + k64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn children_and_parent_agree_and_cover_every_rank(m in 1u32..3000, k in MIN_K..=MAX_K) {
            let mut seen = vec![0u8; m as usize];
            seen[0] += 1;
            for r in 0..m {
                for c in children(r, m, k) {
                    prop_assert_eq!(parent(c, k), Some(r));
                    seen[c as usize] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&s| s == 1));
        }

        #[test]
        fn subtree_sizes_add_up(m in 1u32..3000, k in MIN_K..=MAX_K, r in 0u32..3000) {
            let r = r % m;
            let below: u32 = children(r, m, k).map(|c| subtree_size(c, m, k)).sum();
            prop_assert_eq!(subtree_size(r, m, k), 1 + below);
            let ranks = subtree_ranks(r, m, k);
            prop_assert_eq!(ranks.len() as u32, subtree_size(r, m, k));
            prop_assert!(ranks.windows(2).all(|w| w[0] < w[1]));
        }

        #[test]
        fn height_is_the_deepest_generation(m in 1u32..3000, k in MIN_K..=MAX_K) {
            let deepest = (0..m).map(|r| generation(r, k)).max().unwrap();
            prop_assert_eq!(height(m, k), deepest);
        }
    }

    #[test]
    fn equation_4_on_small_trees() {
        assert_eq!(height(0, 3), 0);
        assert_eq!(height(1, 3), 1);
        assert_eq!(height(4, 3), 2);
        assert_eq!(height(5, 3), 3);
        assert_eq!(height(13, 3), 3);
        assert_eq!(height(14, 3), 4);
        assert_eq!(subtree_size(1, 10, 2), 6);
        assert_eq!(subtree_ranks(1, 10, 2), vec![1, 3, 4, 7, 8, 9]);
    }
}
