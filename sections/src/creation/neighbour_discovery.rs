//! Hash-based neighbour discovery (langer, section VI-C): a member that knows its rank
//! and the section size finds the ids holding its parent and child ranks through
//! intermediaries, the PEs a fixed hash of a rank picks.
//!
//! The paper's message counts fix the exchange: every member sends two messages —
//! (rank, id, #children) to the intermediary of its own rank, and (rank, id) to the
//! intermediary of its parent's rank — 2m in all; the intermediary of rank r sends
//! each child one message with r's id as soon as it knows both ids, and r one with
//! its children's ids once all have announced: t + m more, t the number of internal
//! ranks. An intermediary receives and sends at most k + 1 messages each (the paper's
//! 2k + 2).

use crate::creation::protocol::{words, Wire};
use crate::hash::permute;
use crate::kary;
// The exchange's messages are part of every protocol's wire vocabulary, so they live
// in `protocol`; re-exported here, where they were first defined.
pub use crate::creation::protocol::{FromIntermediary, ToIntermediary};

/// The intermediary of `rank`: a fixed keyed permutation of the ids 0..world.
pub fn intermediary(rank: u32, world: u32, salt: u64) -> u32 {
    permute(rank, world, salt)
}

/// A member's side: waits for its parent and children ids.
#[derive(Debug, Clone)]
pub struct Discovery {
    rank: u32,
    parent: Option<Option<u32>>,
    children: Option<Vec<u32>>,
}

impl Discovery {
    /// Start discovery for the member `me` holding `rank` of `size` (k-ary tree).
    pub fn start<M>(
        me: u32,
        rank: u32,
        size: u32,
        k: u32,
        world: u32,
        salt: u64,
        out: &mut Vec<(u32, Wire<M>)>,
    ) -> Self {
        let n_children = kary::num_children(rank, size, k);
        // The child-of announcement goes first: the last member to learn its rank
        // holds up both its own parent answer and its parent's children answer with
        // it, while its registration only matters once its children have announced.
        let parent = kary::parent(rank, k);
        if let Some(p) = parent {
            out.push((
                intermediary(p, world, salt),
                Wire::ToIntermediary(ToIntermediary::ChildOf {
                    parent: p,
                    rank,
                    id: me,
                }),
            ));
        }
        out.push((
            intermediary(rank, world, salt),
            Wire::ToIntermediary(ToIntermediary::Register {
                rank,
                id: me,
                children: n_children,
            }),
        ));
        Discovery {
            rank,
            parent: parent.is_none().then_some(None),
            children: (n_children == 0).then(Vec::new),
        }
    }

    /// Take an intermediary's answer; false if it was not expected.
    pub fn receive(&mut self, msg: FromIntermediary) -> bool {
        match msg {
            FromIntermediary::Parent(id) if self.parent.is_none() => {
                self.parent = Some(Some(id));
                true
            }
            FromIntermediary::Children(ids) if self.children.is_none() => {
                self.children = Some(ids);
                true
            }
            _ => false,
        }
    }

    /// The member's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// (parent, children) once both are known.
    pub fn done(&self) -> Option<(Option<u32>, &[u32])> {
        Some((self.parent?, self.children.as_deref()?))
    }

    /// Bytes of state held.
    pub fn state_bytes(&self) -> usize {
        words(3 + self.children.as_ref().map_or(0, Vec::len), 1)
    }
}

#[derive(Debug, Clone)]
struct Slot {
    rank: u32,
    id: Option<u32>,
    expected: Option<u32>,
    children: Vec<(u32, u32)>,
}

impl Slot {
    /// Once every child has announced: the parent's answer, and the slot is done.
    fn complete<M>(&mut self, out: &mut Vec<(u32, Wire<M>)>) -> bool {
        let (Some(id), Some(expected)) = (self.id, self.expected) else {
            return false;
        };
        if self.children.len() as u32 != expected {
            return false;
        }
        if expected > 0 {
            self.children.sort_unstable();
            let ids = self.children.iter().map(|&(_, c)| c).collect();
            out.push((id, Wire::FromIntermediary(FromIntermediary::Children(ids))));
        }
        true
    }
}

/// The ranks this PE is the intermediary of, while their exchange is open.
///
/// A child gets its parent's id as soon as both have announced, not when the last
/// sibling has: the answers are the same messages, sent as early as they can be.
#[derive(Debug, Clone, Default)]
pub struct Intermediaries {
    slots: Vec<Slot>,
    peak: usize,
}

impl Intermediaries {
    /// Take an announcement; answers go out as soon as what they carry is known.
    pub fn handle<M>(&mut self, msg: ToIntermediary, out: &mut Vec<(u32, Wire<M>)>) {
        let rank = match msg {
            ToIntermediary::Register { rank, .. } => rank,
            ToIntermediary::ChildOf { parent, .. } => parent,
        };
        let at = match self.slots.iter().position(|s| s.rank == rank) {
            Some(at) => at,
            None => {
                self.slots.push(Slot {
                    rank,
                    id: None,
                    expected: None,
                    children: Vec::new(),
                });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[at];
        let parent_of =
            |child: u32, id: u32| (child, Wire::FromIntermediary(FromIntermediary::Parent(id)));
        match msg {
            ToIntermediary::Register { id, children, .. } => {
                slot.id = Some(id);
                slot.expected = Some(children);
                out.extend(slot.children.iter().map(|&(_, c)| parent_of(c, id)));
            }
            ToIntermediary::ChildOf { rank, id, .. } => {
                slot.children.push((rank, id));
                out.extend(slot.id.map(|parent| parent_of(id, parent)));
            }
        }
        self.peak = self.peak.max(self.state_bytes());
        let slot = &mut self.slots[at];
        if slot.complete(out) {
            self.slots.swap_remove(at);
        }
    }

    /// True when no exchange is open here.
    pub fn is_idle(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes of state held now.
    pub fn state_bytes(&self) -> usize {
        self.slots
            .iter()
            .map(|s| words(4, 1) + words(s.children.len(), 2))
            .sum()
    }

    /// The most state held at once, in bytes.
    pub fn peak_state_bytes(&self) -> usize {
        self.peak
    }
}
