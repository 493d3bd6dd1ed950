//! The k-ary spanning tree over all PEs that broadcasts, reductions and quiescence
//! waves follow.

use crate::base::ids::Pe;

/// A tree that cannot be built over the job's PEs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The root named (in an envelope, or by a caller) is not a PE of the job.
    #[error("tree root {root} is not a PE of this job of {npes} PEs (0..{npes})")]
    RootOutOfRange {
        /// The root named.
        root: Pe,
        /// PEs in the job.
        npes: usize,
    },
}

/// Check that a tree rooted at `root` over `npes` PEs exists; `parent` and
/// `children` answer "none" for one that does not, so check first where the root
/// came from outside (the wire).
pub fn check_root(root: Pe, npes: usize) -> Result<(), TreeError> {
    if (root as usize) < npes {
        Ok(())
    } else {
        Err(TreeError::RootOutOfRange { root, npes })
    }
}

/// Position of `pe` relative to `root`, or None for a root or PE outside the job
/// (subtracting such a root underflowed).
fn relative(pe: Pe, root: Pe, npes: usize) -> Option<u64> {
    check_root(root, npes).ok()?;
    check_root(pe, npes).ok()?;
    let n = npes as u64;
    Some((u64::from(pe) + n - u64::from(root)) % n)
}

/// Parent of `pe` in the k-ary tree rooted at `root`, or None at the root (and for a
/// root or PE that is not in the job).
pub fn parent(pe: Pe, root: Pe, npes: usize, k: usize) -> Option<Pe> {
    let n = npes as u64;
    let rel = relative(pe, root, npes)?;
    (rel != 0).then(|| (((rel - 1) / k.max(1) as u64 + u64::from(root)) % n) as Pe)
}

/// `pe`, its parent, and so on up to `root`, in the k-ary tree rooted at `root`
/// (just `pe` for a root or PE that is not in the job).
pub fn path_up(pe: Pe, root: Pe, npes: usize, k: usize) -> impl Iterator<Item = Pe> {
    std::iter::successors(Some(pe), move |&at| parent(at, root, npes, k))
}

/// Children of `pe` in the k-ary tree rooted at `root` (none for a root or PE that is
/// not in the job).
pub fn children(pe: Pe, root: Pe, npes: usize, k: usize) -> impl Iterator<Item = Pe> {
    let n = npes as u64;
    let (first, last) = match relative(pe, root, npes) {
        Some(rel) => {
            let first = rel.saturating_mul(k as u64).saturating_add(1);
            (first, first.saturating_add(k as u64).min(n))
        }
        None => (0, 0),
    };
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

        #[test]
        fn every_path_up_climbs_parent_by_parent_to_the_root(npes in 1usize..300, seeds in (0u32..1000, 0u32..1000), k in 2usize..17) {
            let (root, pe) = (seeds.0 % npes as u32, seeds.1 % npes as u32);
            let path: Vec<Pe> = path_up(pe, root, npes, k).collect();
            prop_assert_eq!(path.first(), Some(&pe));
            prop_assert_eq!(path.last(), Some(&root));
            for w in path.windows(2) {
                prop_assert_eq!(parent(w[0], root, npes, k), Some(w[1]));
            }
        }
    }

    #[test]
    fn a_root_outside_the_job_is_an_error_not_an_underflow() {
        // Envelopes carry roots: a bad one once underflowed `pe + n - root`.
        assert_eq!(children(0, 10, 4, 2).count(), 0);
        assert_eq!(parent(1, u32::MAX, 4, 2), None);
        assert_eq!(
            children(0, 0, 0, 2).count(),
            0,
            "no PEs, no division by zero"
        );
        assert_eq!(
            check_root(10, 4),
            Err(TreeError::RootOutOfRange { root: 10, npes: 4 })
        );
        assert_eq!(check_root(3, 4), Ok(()));
    }
}
