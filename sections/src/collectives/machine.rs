//! The shape of every collective: a state machine per member, started locally and
//! driven by messages from other members (the RBC paper's nonblocking collectives),
//! plus routing on the section tree for members that only know their neighbours.

use super::error::CollectiveError;
use super::topology::Topology;
use super::value::Piece;
use crate::kary;
use chorus_core::{Pe, RedData};

/// Messages a step wants sent: (destination PE, tag, data).
#[derive(Debug, Default)]
pub struct Out {
    /// The sends, in order.
    pub sends: Vec<(Pe, u32, Piece)>,
}

impl Out {
    /// Queue a send.
    pub(crate) fn send(&mut self, pe: Pe, tag: u32, piece: Piece) {
        self.sends.push((pe, tag, piece));
    }
}

/// Where a member's part of a collective stands after a step.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// More messages are due to this member.
    Pending,
    /// This member's part is over; deliver the value to its callback, if any.
    Done(Option<RedData>),
}

/// What a step of a machine gives: where the member stands, or why its part of the
/// collective cannot go on (members' values that do not combine, a message that does
/// not fit); the host reports the error, with the collective's name, under the job's
/// error policy.
pub type Stepped = Result<Step, CollectiveError>;

/// One member's state machine of one collective. It is done only once every message
/// addressed to it has arrived, so nothing is left over for a finished key.
pub trait Machine: Send {
    /// Run the member's local start.
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped;
    /// Take a message from another member.
    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped;
}

/// A message one member's machine gets from another's.
#[derive(Debug)]
pub struct Received {
    /// The sender's rank.
    pub from: u32,
    /// The collective's tag: which step of the machine it is for.
    pub tag: u32,
    /// The data.
    pub piece: Piece,
}

// The routing helpers below `expect` PEs the member's view always has: collectives
// start only on views `Collectives` checked (a rank below the size, k in range, a
// parent unless rank 0, every tree child; a roster of every rank's PE is checked when
// the member is made), and the targets are ranks of the section.

/// PEs of all of this member's tree children, in rank order.
pub(crate) fn children(me: &dyn Topology) -> Vec<Pe> {
    (0..kary::num_children(me.rank(), me.size(), me.k()))
        .map(|i| me.child_pe(i).expect("a tree child's PE is known"))
        .collect()
}

/// The child of `rank` whose subtree holds `target`, as a child index; None if
/// `target` is `rank` itself or outside its subtree.
pub(crate) fn child_toward(rank: u32, target: u32, k: u32) -> Option<u32> {
    let mut t = target;
    while t > rank {
        let p = (t - 1) / k;
        if p == rank {
            return Some(t - (k * rank + 1));
        }
        t = p;
    }
    None
}

/// True if `rank` is a proper ancestor of `target` in the tree.
pub(crate) fn is_ancestor(rank: u32, target: u32, k: u32) -> bool {
    child_toward(rank, target, k).is_some()
}

/// Send toward rank 0 (from a member that is not rank 0): straight there when the
/// member knows rank 0's PE through a roster, else to the tree parent.
pub(crate) fn send_up_to_root(me: &dyn Topology, tag: u32, piece: Piece, out: &mut Out) {
    let to = if me.has_roster() {
        me.pe_of(0)
    } else {
        me.parent_pe()
    };
    out.send(to.expect("rank 0 is reachable"), tag, piece);
}

/// True if this member relays an upward message from `origin` to rank 0.
pub(crate) fn relays_up(me: &dyn Topology, origin: u32) -> bool {
    !me.has_roster() && me.rank() != 0 && is_ancestor(me.rank(), origin, me.k())
}

/// Send from this member toward `target` in its subtree: straight there with a
/// roster, else to the child on the path.
pub(crate) fn send_down_to(me: &dyn Topology, target: u32, tag: u32, piece: Piece, out: &mut Out) {
    let to = if me.has_roster() {
        me.pe_of(target)
    } else {
        child_toward(me.rank(), target, me.k()).and_then(|i| me.child_pe(i))
    };
    out.send(to.expect("the target is reachable"), tag, piece);
}

/// True if this member relays a downward message from rank 0 to `target`.
pub(crate) fn relays_down(me: &dyn Topology, target: u32) -> bool {
    !me.has_roster() && me.rank() != 0 && is_ancestor(me.rank(), target, me.k())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_kary_tree() {
        // k = 3: 0 -> 1,2,3; 1 -> 4,5,6; 4 -> 13,14,15.
        assert_eq!(child_toward(0, 14, 3), Some(0));
        assert_eq!(child_toward(1, 14, 3), Some(0));
        assert_eq!(child_toward(4, 14, 3), Some(1));
        assert_eq!(child_toward(2, 14, 3), None);
        assert_eq!(child_toward(14, 14, 3), None);
        assert!(is_ancestor(0, 5, 2) && !is_ancestor(5, 5, 2) && !is_ancestor(2, 3, 2));
        for k in 2..6u32 {
            for t in 1..200u32 {
                let mut chain = vec![];
                let mut r = t;
                while let Some(p) = kary::parent(r, k) {
                    chain.push(p);
                    r = p;
                }
                for a in 0..t {
                    assert_eq!(
                        is_ancestor(a, t, k),
                        chain.contains(&a),
                        "k {k} a {a} t {t}"
                    );
                }
            }
        }
    }
}
