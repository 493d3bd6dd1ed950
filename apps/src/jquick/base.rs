//! Base cases: a task on one PE is sorted locally; a task on two PEs is sorted by
//! both, each with the other's elements: the left PE keeps the smallest elements it
//! has room for, the right one the largest (a quickselect, then a local sort).

use super::key::Elem;
use super::task::TaskKey;

/// A base case this PE takes part in.
#[derive(Debug, Clone)]
pub struct BaseCase {
    /// The task.
    pub key: TaskKey,
    /// This PE's elements of it (as many as it holds positions of the task).
    pub mine: Vec<Elem>,
    /// The other PE of a two-PE base case, and its elements once they arrived.
    pub partner: Option<(u32, Option<Vec<Elem>>)>,
    /// True if this PE is the left (lower) one of a two-PE base case.
    pub left: bool,
}

impl BaseCase {
    /// True once every element the case needs is here.
    pub fn ready(&self) -> bool {
        !matches!(self.partner, Some((_, None)))
    }

    /// This PE's sorted share of the task (needs `ready`); also the number of
    /// elements it sorted.
    pub fn solve(self) -> (Vec<Elem>, usize) {
        let keep = self.mine.len();
        let mut all = self.mine;
        if let Some((_, Some(theirs))) = self.partner {
            all.extend(theirs);
        }
        let work = all.len();
        if keep < all.len() {
            if self.left {
                all.select_nth_unstable(keep);
                all.truncate(keep);
            } else {
                let cut = all.len() - keep;
                all.select_nth_unstable(cut);
                all.drain(..cut);
            }
        }
        all.sort_unstable();
        (all, work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_pe_cases_keep_the_right_halves() {
        let key = TaskKey {
            a: 0,
            b: 5,
            depth: 2,
        };
        let left = BaseCase {
            key,
            mine: vec![(9, 0), (1, 1)],
            partner: Some((1, Some(vec![(5, 2), (3, 3), (7, 4)]))),
            left: true,
        };
        assert!(left.ready());
        assert_eq!(left.solve().0, vec![(1, 1), (3, 3)]);
        let right = BaseCase {
            key,
            mine: vec![(5, 2), (3, 3), (7, 4)],
            partner: Some((0, Some(vec![(9, 0), (1, 1)]))),
            left: false,
        };
        assert_eq!(right.solve().0, vec![(5, 2), (7, 4), (9, 0)]);
        let waiting = BaseCase {
            key,
            mine: vec![],
            partner: Some((0, None)),
            left: false,
        };
        assert!(!waiting.ready());
    }
}
