//! Shrink-and-Hash (langer, section VI): the upward pass counts (and, with a filler,
//! shrinks) subtrees; the downward pass hands every subtree a range of ranks, in
//! order, from the sizes its root knows; each member then finds the ids holding its
//! tree neighbours' ranks through hash-chosen intermediaries. O(k) state per PE with
//! no filler.

use crate::creation::neighbour_discovery::Discovery;
use crate::creation::protocol::{
    words, Filler, FromIntermediary, Outbox, Protocol, ProtocolError, Setup, Wire,
};
use crate::creation::shrink::{Child, Shrink, ShrinkMsg};
use crate::section::Placement;
use serde::{Deserialize, Serialize};

/// Messages of Shrink-and-Hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Upward pass.
    Shrink(ShrinkMsg),
    /// Downward pass: the subtree rooted here (of `size` members) takes ranks
    /// start..start+size of `m`; `victims` were taken out of it as fillers.
    Rank {
        /// The first rank of the subtree's range.
        start: u32,
        /// The number of members of the subtree.
        size: u32,
        /// The number of members of the new section.
        m: u32,
        /// The creation's token.
        token: u64,
        /// Relocation messages the receiver gets in the upward pass.
        relocations: u32,
        /// Leaf-filler victims taken out of the subtree.
        victims: Vec<u32>,
    },
}

/// One PE's Shrink-and-Hash state.
#[derive(Debug, Clone)]
pub struct ShrinkAndHash {
    setup: Setup,
    shrink: Shrink,
    deferred: Option<(u32, Msg)>,
    ranked: bool,
    token: u64,
    size: u32,
    discovery: Option<Discovery>,
    placement: Option<Placement>,
    peak: usize,
}

impl ShrinkAndHash {
    /// The state of the PE `setup` describes, with the given upward-pass filler.
    pub fn new(setup: Setup, filler: Filler) -> Self {
        ShrinkAndHash {
            shrink: Shrink::new(&setup, filler),
            setup,
            deferred: None,
            ranked: false,
            token: 0,
            size: 0,
            discovery: None,
            placement: None,
            peak: 0,
        }
    }

    fn wrap(shrink_out: Vec<(u32, ShrinkMsg)>, out: &mut Outbox<Msg>) {
        out.extend(
            shrink_out
                .into_iter()
                .map(|(to, m)| (to, Wire::Role(Msg::Shrink(m)))),
        );
    }

    /// At the parent's root, once the upward pass is over: start the downward pass.
    fn after_upward(&mut self, out: &mut Outbox<Msg>) {
        if let Some(Some(tree)) = self.shrink.result() {
            if !self.ranked && self.deferred.is_none() && self.shrink.reported() {
                let msg = Msg::Rank {
                    start: 0,
                    size: tree.size,
                    m: tree.size,
                    token: self.setup.token,
                    relocations: tree.relocations,
                    victims: Vec::new(),
                };
                if tree.root == self.setup.me {
                    self.deferred = Some((self.setup.me, msg));
                } else {
                    out.push((tree.root, Wire::Role(msg)));
                    // The root handed its part on; it takes no rank unless it is the
                    // shrunk tree's root.
                    self.ranked = !self.setup.member;
                }
            }
        }
    }

    fn try_rank(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let Some((_, Msg::Rank { relocations, .. })) = &self.deferred else {
            return Ok(());
        };
        if self.shrink.relocations() < *relocations || !self.shrink.reported() {
            return Ok(());
        }
        let Some((
            _,
            Msg::Rank {
                start,
                size,
                m,
                token,
                victims,
                ..
            },
        )) = self.deferred.take()
        else {
            unreachable!("checked above")
        };
        self.shrink.apply_victims(&victims)?;
        self.peak = self.peak.max(self.state_bytes());
        let below: u32 = self.shrink.children().iter().map(|c| c.size).sum();
        let mine = u32::from(self.setup.member);
        if mine + below != size {
            return Err(ProtocolError::Inconsistent {
                me: self.setup.me,
                detail: format!("subtree of {size} but {mine} + {below} below"),
            });
        }
        self.ranked = true;
        self.token = token;
        self.size = m;
        let mut next = start + mine;
        let mut ranged: Vec<(u32, Child)> = Vec::new();
        for c in self.shrink.take_children() {
            let size = c.size;
            ranged.push((next, c));
            next += size;
        }
        // Each send costs the sender its overhead before the next leaves, so the
        // largest subtree, likely the deepest and the one the pass waits for, goes
        // first. The ranges themselves are fixed above, in child order.
        ranged.sort_by_key(|(_, c)| std::cmp::Reverse(c.size));
        for (first, c) in ranged {
            out.push((
                c.root,
                Wire::Role(Msg::Rank {
                    start: first,
                    size: c.size,
                    m,
                    token,
                    relocations: c.relocations,
                    victims: c.victims,
                }),
            ));
        }
        if self.setup.member {
            self.discovery = Some(Discovery::start(
                self.setup.me,
                start,
                m,
                self.setup.k,
                self.setup.world,
                self.setup.salt,
                out,
            ));
            self.try_finish();
        }
        Ok(())
    }

    fn try_finish(&mut self) {
        if let Some((parent, children)) = self.discovery.as_ref().and_then(|d| d.done()) {
            self.placement = Some(Placement {
                token: self.token,
                rank: self.discovery.as_ref().expect("discovering").rank(),
                size: self.size,
                k: self.setup.k,
                parent,
                children: children.to_vec(),
            });
            self.discovery = None;
        }
    }

    fn state_bytes(&self) -> usize {
        self.shrink.state_bytes()
            + self.discovery.as_ref().map_or(0, Discovery::state_bytes)
            + words(6, 1)
    }

    /// Whether this PE takes part in the downward pass.
    fn expects_rank(&self) -> bool {
        // With a filler, a hole leaves the shrunk tree; with none, a hole where two
        // subtrees with members meet stays in it and passes ranges on.
        self.setup.member
            || (self.shrink.filler() == Filler::None
                && self.shrink.kept()
                && self.setup.tree_parent.is_some())
    }
}

impl Protocol for ShrinkAndHash {
    type Msg = Msg;

    fn id(&self) -> u32 {
        self.setup.me
    }

    fn start(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let mut up = Vec::new();
        self.shrink.join(&mut up);
        Self::wrap(up, out);
        self.after_upward(out);
        self.try_rank(out)?;
        self.peak = self.peak.max(self.state_bytes());
        Ok(())
    }

    fn handle(&mut self, from: u32, msg: Msg, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        match msg {
            Msg::Shrink(m) => {
                let mut up = Vec::new();
                self.shrink.handle(from, m, &mut up)?;
                Self::wrap(up, out);
                self.after_upward(out);
            }
            rank @ Msg::Rank { .. } => {
                if self.ranked || self.deferred.is_some() {
                    return Err(ProtocolError::Unexpected {
                        me: self.setup.me,
                        from,
                        what: "second rank range",
                    });
                }
                self.deferred = Some((from, rank));
            }
        }
        self.try_rank(out)?;
        self.peak = self.peak.max(self.state_bytes());
        Ok(())
    }

    fn found(
        &mut self,
        from: u32,
        msg: FromIntermediary,
        _out: &mut Outbox<Msg>,
    ) -> Result<(), ProtocolError> {
        let accepted = self.discovery.as_mut().is_some_and(|d| d.receive(msg));
        if !accepted {
            return Err(ProtocolError::Unexpected {
                me: self.setup.me,
                from,
                what: "intermediary answer",
            });
        }
        self.try_finish();
        Ok(())
    }

    fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    fn finished(&self) -> bool {
        if !self.shrink.reported() {
            return false;
        }
        if self.setup.tree_parent.is_none() {
            // The parent's root starts the downward pass (or finds no member at all).
            let empty = matches!(self.shrink.result(), Some(None));
            return empty || (self.ranked && (!self.setup.member || self.placement.is_some()));
        }
        !self.expects_rank() || (self.ranked && (!self.setup.member || self.placement.is_some()))
    }

    fn peak_state_bytes(&self) -> usize {
        self.peak
    }
}

impl ShrinkAndHash {
    /// The most children this PE had in the shrunk tree.
    pub fn degree(&self) -> usize {
        self.shrink.degree()
    }
}
