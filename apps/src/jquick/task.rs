//! Tasks: the positions a..b of the sorted order that one recursion level of one
//! group sorts, and how a member's part of a task is routed to the two subtasks.

use super::key::Elem;
use super::layout::Layout;
use serde::{Deserialize, Serialize};

/// Names a task: its positions a..b and its recursion depth (tasks of one depth are
/// disjoint, so the triple is unique).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskKey {
    /// First position.
    pub a: u64,
    /// One past the last position.
    pub b: u64,
    /// Recursion depth (0 for the whole input).
    pub depth: u32,
}

impl TaskKey {
    /// The three words collectives carry to name the task.
    pub fn words(&self) -> [u64; 3] {
        [self.a, self.b, u64::from(self.depth)]
    }

    /// The task named by the first three words of a collective's result.
    pub fn from_words(v: &[u64]) -> Option<Self> {
        match v {
            [a, b, d, ..] => Some(TaskKey {
                a: *a,
                b: *b,
                depth: u32::try_from(*d).ok()?,
            }),
            _ => None,
        }
    }

    /// The subtasks after `small` elements fell below the pivot (either may be empty).
    pub fn children(&self, small: u64) -> [TaskKey; 2] {
        let cut = self.a + small;
        let d = self.depth + 1;
        [
            TaskKey {
                a: self.a,
                b: cut,
                depth: d,
            },
            TaskKey {
                a: cut,
                b: self.b,
                depth: d,
            },
        ]
    }

    /// True if the task holds no position.
    pub fn is_empty(&self) -> bool {
        self.a >= self.b
    }
}

/// One message of the data exchange: elements for `pe`'s part of `child`.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Destination PE.
    pub pe: u32,
    /// The subtask the elements belong to.
    pub child: TaskKey,
    /// The elements.
    pub elems: Vec<Elem>,
}

/// What a member knows after the level's collectives: its elements split by the
/// pivot, the number of small elements on lower ranks, and the task's total.
pub struct Partitioned {
    /// This member's elements below the pivot.
    pub small: Vec<Elem>,
    /// This member's elements at or above the pivot.
    pub large: Vec<Elem>,
    /// Small elements on the members before this one.
    pub small_before: u64,
    /// Small elements in the whole task.
    pub small_total: u64,
}

/// The greedy assignment of the paper: small elements fill the left subtask's
/// positions in member order, large ones the right subtask's; each run of
/// positions goes to the PE owning it. `me` holds positions from `first` on.
pub fn routes(layout: &Layout, key: TaskKey, me_first: u64, part: Partitioned) -> Vec<Route> {
    let [left, right] = key.children(part.small_total);
    let before = me_first - key.a;
    let large_before = before - part.small_before;
    let mut out = Vec::new();
    let mut send = |child: TaskKey, start: u64, elems: Vec<Elem>| {
        let mut rest = elems.into_iter();
        for (pe, _, count) in layout.pieces(start, start + rest.len() as u64) {
            out.push(Route {
                pe,
                child,
                elems: rest.by_ref().take(count as usize).collect(),
            });
        }
    };
    send(left, key.a + part.small_before, part.small);
    send(right, left.b + large_before, part.large);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_position_of_the_children_is_filled_once() {
        // 3 PEs of 4 positions; a task over 2..11 with members holding 2, 4 and 3.
        let l = Layout::new(12, 3);
        let key = TaskKey {
            a: 2,
            b: 11,
            depth: 0,
        };
        let parts = [(2u64, 1usize), (4, 3), (8, 1)];
        let small_total = 5;
        let mut before = 0;
        let mut got: Vec<(u32, TaskKey, usize)> = Vec::new();
        for (i, &(first, small)) in parts.iter().enumerate() {
            let len = (l.overlap(i as u32, key.a, key.b)) as usize;
            let elems: Vec<Elem> = (0..len as u64).map(|x| (x, x)).collect();
            let part = Partitioned {
                small: elems[..small].to_vec(),
                large: elems[small..].to_vec(),
                small_before: before,
                small_total,
            };
            before += small as u64;
            for r in routes(&l, key, first, part) {
                got.push((r.pe, r.child, r.elems.len()));
            }
        }
        let [left, right] = key.children(small_total);
        for child in [left, right] {
            for pe in 0..3 {
                let n: usize = got
                    .iter()
                    .filter(|g| g.0 == pe && g.1 == child)
                    .map(|g| g.2)
                    .sum();
                assert_eq!(
                    n as u64,
                    l.overlap(pe, child.a, child.b),
                    "{child:?} pe {pe}"
                );
            }
        }
        assert_eq!(TaskKey::from_words(&key.words()), Some(key));
    }
}
