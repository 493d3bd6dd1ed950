//! The reference centralized algorithm (langer, section IV): the parent's tree gathers
//! the ids of the members to its root, which then holds the whole roster (O(m) state)
//! and hands it down the new section's k-ary tree, each member passing every child
//! the ids of that child's subtree.
//!
//! Ranks follow the gather order: a PE lists itself before its children's lists, so
//! rank order is the preorder of the members in the parent's tree (the order
//! Shrink-and-Hash with no filler also produces). Messages: n-1 gathers, m-1 roster
//! parts, and one hand-over when the parent's root is not a member.

use crate::creation::protocol::{fill_slot, words, Outbox, Protocol, ProtocolError, Setup, Wire};
use crate::kary;
use crate::section::Placement;
use serde::{Deserialize, Serialize};

/// Messages of the centralized algorithm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Upward: the members of the sender's parent-tree subtree, in preorder.
    Gather(Vec<u32>),
    /// Downward: take `rank` of `m` under `parent`; `ids` hold the ranks of the
    /// receiver's subtree in increasing rank order (`ids[0]` is the receiver).
    Roster {
        /// The receiver's rank in the new section.
        rank: u32,
        /// The number of members of the new section.
        m: u32,
        /// The creation's token.
        token: u64,
        /// The id of the receiver's parent in the new tree, None at rank 0.
        parent: Option<u32>,
        /// The ids holding the ranks of the receiver's subtree, in rank order.
        ids: Vec<u32>,
    },
}

/// One PE's state in the centralized algorithm.
#[derive(Debug, Clone)]
pub struct Centralized {
    setup: Setup,
    reports: Vec<Option<Vec<u32>>>,
    received: usize,
    joined: bool,
    reported: bool,
    empty: bool,
    placement: Option<Placement>,
    peak: usize,
}

impl Centralized {
    /// The state of the PE `setup` describes.
    pub fn new(setup: Setup) -> Self {
        Centralized {
            reports: vec![None; setup.tree_children.len()],
            setup,
            received: 0,
            joined: false,
            reported: false,
            empty: false,
            placement: None,
            peak: 0,
        }
    }

    fn state_bytes(&self, held: usize) -> usize {
        let reports: usize = self.reports.iter().flatten().map(Vec::len).sum();
        let placed = self.placement.as_ref().map_or(0, |p| p.children.len());
        words(8 + self.reports.len() + reports + placed + held, 1)
    }

    fn note_peak(&mut self, held: usize) {
        self.peak = self.peak.max(self.state_bytes(held));
    }

    fn try_report(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        if self.reported || !self.joined || self.received < self.reports.len() {
            return Ok(());
        }
        self.reported = true;
        let mut ids: Vec<u32> = Vec::new();
        if self.setup.member {
            ids.push(self.setup.me);
        }
        for r in self.reports.drain(..) {
            ids.extend(r.expect("every child reported"));
        }
        self.note_peak(ids.len());
        match self.setup.tree_parent {
            Some(p) => out.push((p, Wire::Role(Msg::Gather(ids)))),
            None if ids.is_empty() => self.empty = true,
            None => {
                let m = ids.len() as u32;
                let roster = Msg::Roster {
                    rank: 0,
                    m,
                    token: self.setup.token,
                    parent: None,
                    ids,
                };
                if self.setup.member {
                    // A member root lists itself first, so it holds rank 0.
                    self.handle(self.setup.me, roster, out)?;
                } else {
                    let Msg::Roster { ids, .. } = &roster else {
                        unreachable!("built above")
                    };
                    out.push((ids[0], Wire::Role(roster)));
                }
            }
        }
        Ok(())
    }

    fn place(
        &mut self,
        rank: u32,
        m: u32,
        token: u64,
        parent: Option<u32>,
        ids: Vec<u32>,
        out: &mut Outbox<Msg>,
    ) -> Result<(), ProtocolError> {
        let k = self.setup.k;
        let ranks = kary::subtree_ranks(rank, m, k);
        if ranks.len() != ids.len() || ids.first() != Some(&self.setup.me) {
            return Err(ProtocolError::Inconsistent {
                me: self.setup.me,
                detail: format!(
                    "rank {rank} of {m}: {} ids for a subtree of {}",
                    ids.len(),
                    ranks.len()
                ),
            });
        }
        self.note_peak(ids.len());
        let mut children = Vec::new();
        for c in kary::children(rank, m, k) {
            let theirs: Vec<u32> = kary::subtree_ranks(c, m, k)
                .into_iter()
                .map(|r| ids[ranks.binary_search(&r).expect("a subtree rank")])
                .collect();
            children.push(theirs[0]);
            out.push((
                theirs[0],
                Wire::Role(Msg::Roster {
                    rank: c,
                    m,
                    token,
                    parent: Some(self.setup.me),
                    ids: theirs,
                }),
            ));
        }
        self.placement = Some(Placement {
            token,
            rank,
            size: m,
            k,
            parent,
            children,
        });
        Ok(())
    }
}

impl Protocol for Centralized {
    type Msg = Msg;

    fn id(&self) -> u32 {
        self.setup.me
    }

    fn start(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        self.joined = true;
        self.note_peak(0);
        self.try_report(out)
    }

    fn handle(&mut self, from: u32, msg: Msg, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let me = self.setup.me;
        match msg {
            Msg::Gather(ids) => {
                if !fill_slot(&self.setup.tree_children, &mut self.reports, from, ids) {
                    return Err(ProtocolError::Unexpected {
                        me,
                        from,
                        what: "gather",
                    });
                }
                self.received += 1;
                self.note_peak(0);
                self.try_report(out)
            }
            Msg::Roster {
                rank,
                m,
                token,
                parent,
                ids,
            } => {
                if !self.setup.member || self.placement.is_some() {
                    return Err(ProtocolError::Unexpected {
                        me,
                        from,
                        what: "roster",
                    });
                }
                self.place(rank, m, token, parent, ids, out)
            }
        }
    }

    fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    fn finished(&self) -> bool {
        self.reported && (self.empty || !self.setup.member || self.placement.is_some())
    }

    fn peak_state_bytes(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::creation::driver::{drive, world_setups};
    use crate::section::check;

    #[test]
    fn builds_a_valid_section_with_the_formula_message_count() {
        for (n, k, seed) in [(1u32, 2u32, 1u64), (40, 3, 2), (100, 4, 3), (77, 2, 4)] {
            for stride in [1u32, 2, 3, 7] {
                let members: Vec<bool> = (0..n)
                    .map(|i| (i * 31 + 5).is_multiple_of(stride))
                    .collect();
                let m = members.iter().filter(|&&b| b).count() as u64;
                let out = drive(world_setups(&members, k, 9, 77), Centralized::new, seed).unwrap();
                check(&members, &out.placed, 77, k).unwrap();
                let handover = u64::from(m > 0 && !members[0]);
                let want = u64::from(n) - 1 + m.saturating_sub(1) + handover;
                assert_eq!(out.messages, want, "n {n} k {k} stride {stride}");
                let order: Vec<u32> = (0..n).filter(|&i| members[i as usize]).collect();
                let mut preorder = Vec::new();
                let mut stack = vec![0u32];
                while let Some(v) = stack.pop() {
                    if members[v as usize] {
                        preorder.push(v);
                    }
                    stack.extend(
                        kary::children(v, n, k)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev(),
                    );
                }
                assert_eq!(preorder.len(), order.len());
                for (r, id) in preorder.iter().enumerate() {
                    assert_eq!(out.placed[*id as usize].as_ref().unwrap().rank, r as u32);
                }
            }
        }
    }
}
