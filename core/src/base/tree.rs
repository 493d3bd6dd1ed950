//! The k-ary spanning tree over all PEs that broadcasts, reductions and quiescence
//! waves follow.

use crate::base::ids::Pe;

/// Parent of `pe` in the k-ary tree rooted at `root`, or None at the root.
pub fn parent(pe: Pe, root: Pe, npes: usize, k: usize) -> Option<Pe> {
    let n = npes as u64;
    let rel = (u64::from(pe) + n - u64::from(root)) % n;
    (rel != 0).then(|| (((rel - 1) / k as u64 + u64::from(root)) % n) as Pe)
}

/// Children of `pe` in the k-ary tree rooted at `root`.
pub fn children(pe: Pe, root: Pe, npes: usize, k: usize) -> impl Iterator<Item = Pe> {
    let n = npes as u64;
    let rel = (u64::from(pe) + n - u64::from(root)) % n;
    let first = rel * k as u64 + 1;
    let last = (first + k as u64).min(n);
    (first.min(last)..last).map(move |c| ((c + u64::from(root)) % n) as Pe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_pe_but_the_root_is_the_child_of_its_parent(npes in 1usize..300, root_seed in 0u32..1000, k in 2usize..17) {
            let root = root_seed % npes as u32;
            let mut seen = vec![0u32; npes];
            seen[root as usize] += 1;
            for pe in 0..npes as Pe {
                for c in children(pe, root, npes, k) {
                    prop_assert_eq!(parent(c, root, npes, k), Some(pe));
                    seen[c as usize] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&s| s == 1));
            prop_assert_eq!(parent(root, root, npes, k), None);
        }
    }
}
