//! The shape every creation algorithm shares: one state machine per PE of the parent,
//! driven by a local join and by messages, so that the same code runs on chares and
//! in the in-memory harness.

use crate::section::Placement;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use thiserror::Error;

/// How the upward pass fills a hole (a parent-tree vertex that does not join).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Filler {
    /// Holes stay in the tree and only count (Shrink-and-Hash only).
    None,
    /// A joining child takes the hole's place and adopts its siblings.
    Child,
    /// A leaf of the hole's subtree takes its place.
    Leaf,
}

/// A creation algorithm of the langer paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Gather the roster at the root, hand it down (section IV).
    Centralized,
    /// Shrink the parent tree, then move vertices until it is balanced (section V).
    ShrinkAndBalance(Filler),
    /// Count subtrees, hand out rank ranges, find neighbours by hashing (section VI).
    ShrinkAndHash(Filler),
}

impl Algorithm {
    /// Every algorithm and filler combination.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Centralized,
        Algorithm::ShrinkAndBalance(Filler::Child),
        Algorithm::ShrinkAndBalance(Filler::Leaf),
        Algorithm::ShrinkAndHash(Filler::None),
        Algorithm::ShrinkAndHash(Filler::Child),
        Algorithm::ShrinkAndHash(Filler::Leaf),
    ];

    /// Short name, e.g. `shrink-and-hash/leaf`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Centralized => "centralized",
            Algorithm::ShrinkAndBalance(Filler::None) => "shrink-and-balance/none",
            Algorithm::ShrinkAndBalance(Filler::Child) => "shrink-and-balance/child",
            Algorithm::ShrinkAndBalance(Filler::Leaf) => "shrink-and-balance/leaf",
            Algorithm::ShrinkAndHash(Filler::None) => "shrink-and-hash/none",
            Algorithm::ShrinkAndHash(Filler::Child) => "shrink-and-hash/child",
            Algorithm::ShrinkAndHash(Filler::Leaf) => "shrink-and-hash/leaf",
        }
    }
}

/// The phases of a creation, in the order they end; every protocol message belongs
/// to one, so a report can say how long each took and what it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Up the parent tree: Centralized's gather of ids, the shrink (counts, fillers,
    /// relocations) of the others.
    Up,
    /// Down the tree: Centralized's roster scatter (the root's tree computation
    /// included), Shrink-and-Balance's balancing, Shrink-and-Hash's rank ranges.
    Down,
    /// Members' announcements to hash intermediaries (Shrink-and-Hash, merges).
    Announce,
    /// Intermediaries' answers with neighbour ids: the tree's link-up.
    Answer,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 4] = [Phase::Up, Phase::Down, Phase::Announce, Phase::Answer];

    /// Short name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Up => "up",
            Phase::Down => "down",
            Phase::Announce => "announce",
            Phase::Answer => "answer",
        }
    }

    /// Position in [`Phase::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What one PE knows when it joins a creation. Ids are whatever the host addresses
/// PEs by (world PEs on chares, 0..n in the harness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setup {
    /// This PE's id.
    pub me: u32,
    /// Ids 0..world may serve as intermediaries (the hash's range).
    pub world: u32,
    /// True if this PE joins the new section.
    pub member: bool,
    /// Branching factor of the new section's tree.
    pub k: u32,
    /// Parent of this PE in the parent's spanning tree (None at its root).
    pub tree_parent: Option<u32>,
    /// Children of this PE in the parent's spanning tree, in order.
    pub tree_children: Vec<u32>,
    /// This PE's level in the parent's tree, 1 at the root (bounds leaf-filler lists).
    pub generation: u32,
    /// Key of the intermediary hash, the same on every PE of one creation.
    pub salt: u64,
    /// The new section's name, used only where the parent's root runs.
    pub token: u64,
}

/// A member's announcement to an intermediary (of hash-based neighbour discovery,
/// [`crate::creation::neighbour_discovery`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToIntermediary {
    /// "I hold `rank` and have `children` children" (to the intermediary of `rank`).
    Register {
        /// The rank the sender holds in the new section.
        rank: u32,
        /// The sender's id.
        id: u32,
        /// How many children that rank has in the tree.
        children: u32,
    },
    /// "I hold `rank`, a child of `parent`" (to the intermediary of `parent`).
    ChildOf {
        /// The rank of the sender's parent in the tree.
        parent: u32,
        /// The rank the sender holds in the new section.
        rank: u32,
        /// The sender's id.
        id: u32,
    },
}

/// An intermediary's answer to a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FromIntermediary {
    /// The ids of your children, in rank order.
    Children(Vec<u32>),
    /// The id of your parent.
    Parent(u32),
}

/// A message as it travels: to a creation's state machine, or to an intermediary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Wire<M> {
    /// For the algorithm's state machine on the destination.
    Role(M),
    /// For the destination as the intermediary of a rank.
    ToIntermediary(ToIntermediary),
    /// An intermediary's answer, for the algorithm's state machine.
    FromIntermediary(FromIntermediary),
}

impl<M> Wire<M> {
    /// The phase this message belongs to; `role` names the phase of a state-machine
    /// message (each algorithm's own).
    pub fn phase(&self, role: impl FnOnce(&M) -> Phase) -> Phase {
        match self {
            Wire::Role(m) => role(m),
            Wire::ToIntermediary(_) => Phase::Announce,
            Wire::FromIntermediary(_) => Phase::Answer,
        }
    }
}

/// Messages a handler sends: (destination id, message).
pub type Outbox<M> = Vec<(u32, Wire<M>)>;

/// A message a creation protocol cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The message does not fit the state the PE is in.
    #[error("id {me}: unexpected {what} from {from}")]
    Unexpected {
        /// The id of the PE that got it.
        me: u32,
        /// The id of the sender.
        from: u32,
        /// What the message was.
        what: &'static str,
    },
    /// The counts that must agree between PEs do not.
    #[error("id {me}: inconsistent counts: {detail}")]
    Inconsistent {
        /// The id of the PE that found it.
        me: u32,
        /// Which counts disagree, and how.
        detail: String,
    },
    /// A setup the algorithm cannot run with.
    #[error("{0}")]
    Setup(String),
}

/// One PE's part in creating a section.
pub trait Protocol {
    /// The messages its PEs exchange.
    type Msg: Serialize + DeserializeOwned + Clone + Debug + Send + 'static;

    /// The local PE joins (exactly once; messages may have come before).
    fn start(&mut self, out: &mut Outbox<Self::Msg>) -> Result<(), ProtocolError>;

    /// A message from `from` arrives.
    fn handle(
        &mut self,
        from: u32,
        msg: Self::Msg,
        out: &mut Outbox<Self::Msg>,
    ) -> Result<(), ProtocolError>;

    /// The id of the PE this state belongs to.
    fn id(&self) -> u32;

    /// An intermediary's answer arrives: only hashing algorithms expect one, the
    /// others refuse it.
    fn found(
        &mut self,
        from: u32,
        _msg: FromIntermediary,
        _out: &mut Outbox<Self::Msg>,
    ) -> Result<(), ProtocolError> {
        Err(ProtocolError::Unexpected {
            me: self.id(),
            from,
            what: "intermediary answer",
        })
    }

    /// This member's place, once it is known.
    fn placement(&self) -> Option<&Placement>;

    /// True once this PE has done its whole part (no message for it is still to come).
    fn finished(&self) -> bool;

    /// The most state this PE has held at once, in bytes.
    fn peak_state_bytes(&self) -> usize;
}

/// Put child `from`'s report in its slot of `reports` (one per child of
/// `children`, in order); false when `from` is no child or has reported already.
pub(crate) fn fill_slot<T>(
    children: &[u32],
    reports: &mut [Option<T>],
    from: u32,
    report: T,
) -> bool {
    let slot = children.iter().position(|&c| c == from);
    match slot.and_then(|i| reports.get_mut(i)) {
        Some(slot @ None) => {
            *slot = Some(report);
            true
        }
        _ => false,
    }
}

/// Bytes of the ids and counts in a slice of records of `words` 32-bit words each.
pub(crate) fn words(len: usize, words: usize) -> usize {
    len * words * 4
}
