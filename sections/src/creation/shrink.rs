//! The upward pass shared by Shrink-and-Balance and Shrink-and-Hash (langer, V-A and
//! VI-A): every vertex of the parent's tree reports its subtree to its parent once all
//! its children have; holes are filled so that each report describes a tree of members
//! only (child-as-filler, leaf-as-filler), or stay and only count (no filler).
//!
//! A hole with a single non-empty child subtree needs no filler: that subtree simply
//! takes its place, whatever the scheme. With no filler this is what keeps the
//! paper's message counts (VII-C: the upward and downward passes of all three schemes
//! send the same number of messages, within one, because the ranges that holes pass
//! on replace the relocations); only holes where two subtrees meet stay in the tree,
//! and a chain of holes costs the downward pass no hop.
//!
//! Relocation messages to fillers travel in parallel with the upward pass, which the
//! hole continues on the filler's behalf; the report says how many relocations the
//! subtree's root will receive, so the downward pass can wait for them.
//!
//! Leaf-as-filler moves a leaf away from its subtree, so the sizes recorded below the
//! hole become stale; as in the paper, the downward pass carries the victims' ids so
//! each vertex can correct its children's sizes. A vertex remembers which child every
//! candidate it forwarded came from (at most its generation many).

use crate::creation::protocol::{fill_slot, words, Filler, ProtocolError, Setup};
use serde::{Deserialize, Serialize};

/// A non-empty subtree as reported upward.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sub {
    /// Its root (a member, or with no filler possibly a hole).
    pub root: u32,
    /// Its number of members.
    pub size: u32,
    /// Relocation messages its root receives during the upward pass.
    pub relocations: u32,
    /// Leaves that may fill holes above (leaf-as-filler only).
    pub candidates: Vec<u32>,
}

impl Sub {
    /// The subtree as a child of the vertex that adopts it.
    fn as_child(&self) -> Child {
        Child {
            root: self.root,
            size: self.size,
            relocations: self.relocations,
            victims: Vec::new(),
        }
    }
}

/// The index of the largest of `subs` (the first of equals).
fn largest(subs: &[Sub]) -> usize {
    let by_size = subs
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.size, std::cmp::Reverse(*i)));
    by_size.map(|(i, _)| i).expect("at least two subtrees")
}

/// A child subtree of a vertex in the shrunk tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Child {
    /// Its root.
    pub root: u32,
    /// Its number of members (corrected for victims once they are applied).
    pub size: u32,
    /// Relocation messages its root receives.
    pub relocations: u32,
    /// Victims taken out of it that its root has not been told of.
    pub victims: Vec<u32>,
}

/// Messages of the upward pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShrinkMsg {
    /// A child's subtree report (None: no member below).
    Up(Option<Sub>),
    /// A filler takes a hole's place: these become its children; `provenance` maps
    /// the candidates the hole forwarded to the index of the child they came from;
    /// `generation` is the hole's, which orders the groups a filler takes.
    Relocate {
        /// The subtrees that become the filler's children.
        children: Vec<Child>,
        /// (candidate, child index) for each candidate the hole forwarded.
        provenance: Vec<(u32, u32)>,
        /// The hole's level in the parent's tree.
        generation: u32,
    },
}

/// One vertex's upward-pass state.
#[derive(Debug, Clone)]
pub struct Shrink {
    filler: Filler,
    me: u32,
    member: bool,
    generation: u32,
    tree_parent: Option<u32>,
    tree_children: Vec<u32>,
    reports: Vec<Option<Option<Sub>>>,
    received: usize,
    joined: bool,
    reported: bool,
    children: Vec<Child>,
    provenance: Vec<(u32, u32)>,
    own: usize,
    groups: Vec<(u32, usize)>,
    relocations: u32,
    kept: bool,
    result: Option<Option<Sub>>,
    degree: usize,
}

impl Shrink {
    /// The upward-pass state of the vertex `setup` describes.
    pub fn new(setup: &Setup, filler: Filler) -> Self {
        Shrink {
            filler,
            me: setup.me,
            member: setup.member,
            generation: setup.generation,
            tree_parent: setup.tree_parent,
            tree_children: setup.tree_children.clone(),
            reports: vec![None; setup.tree_children.len()],
            received: 0,
            joined: false,
            reported: false,
            children: Vec::new(),
            provenance: Vec::new(),
            own: 0,
            groups: Vec::new(),
            relocations: 0,
            kept: false,
            result: None,
            degree: 0,
        }
    }

    /// The local PE joins; sends its report if its children have all reported.
    pub fn join(&mut self, out: &mut Vec<(u32, ShrinkMsg)>) {
        self.joined = true;
        self.try_report(out);
    }

    /// Take an upward-pass message.
    pub fn handle(
        &mut self,
        from: u32,
        msg: ShrinkMsg,
        out: &mut Vec<(u32, ShrinkMsg)>,
    ) -> Result<(), ProtocolError> {
        match msg {
            ShrinkMsg::Up(report) => {
                if !fill_slot(&self.tree_children, &mut self.reports, from, report) {
                    return Err(ProtocolError::Unexpected {
                        me: self.me,
                        from,
                        what: "upward report",
                    });
                }
                self.received += 1;
                self.try_report(out);
            }
            ShrinkMsg::Relocate {
                children,
                provenance,
                generation,
            } => {
                if !self.member || self.filler == Filler::None {
                    return Err(ProtocolError::Unexpected {
                        me: self.me,
                        from,
                        what: "relocation",
                    });
                }
                // A leaf filler had no children and forwarded only itself; a child
                // filler keeps its own children and adds the hole's. Groups from
                // several holes (a chain of holes promoting one child) go deepest
                // hole first, whatever order they arrive in, so ranks do not depend
                // on the schedule.
                let at = self.groups.iter().take_while(|g| g.0 > generation).count();
                let base = self.own + self.groups[..at].iter().map(|g| g.1).sum::<usize>();
                let len = children.len();
                self.groups.insert(at, (generation, len));
                self.children.splice(base..base, children);
                for p in &mut self.provenance {
                    if p.1 as usize >= base {
                        p.1 += len as u32;
                    }
                }
                let base = base as u32;
                self.provenance
                    .extend(provenance.into_iter().map(|(c, i)| (c, i + base)));
                self.relocations += 1;
                self.degree = self.degree.max(self.children.len());
            }
        }
        Ok(())
    }

    fn try_report(&mut self, out: &mut Vec<(u32, ShrinkMsg)>) {
        if self.reported || !self.joined || self.received < self.tree_children.len() {
            return;
        }
        self.reported = true;
        let subs: Vec<Sub> = self.reports.drain(..).flatten().flatten().collect();
        // The report goes before the relocation: each send costs the sender its
        // overhead, and only the report is on the upward pass's critical path.
        let mut relocation = Vec::new();
        let report = match (self.filler, self.member) {
            (_, false) if subs.len() <= 1 => subs.into_iter().next().map(|mut s| {
                s.candidates.truncate(self.generation as usize);
                s
            }),
            (Filler::None, _) => {
                self.adopt_as_children(&subs);
                let size = u32::from(self.member) + subs.iter().map(|s| s.size).sum::<u32>();
                Some(Sub {
                    root: self.me,
                    size,
                    relocations: 0,
                    candidates: Vec::new(),
                })
            }
            (_, true) => {
                self.adopt_as_children(&subs);
                let candidates = if subs.is_empty() {
                    // A member leaf offers itself (leaf-as-filler only).
                    vec![self.me]
                } else {
                    self.forward_candidates(&subs, None)
                };
                Some(Sub {
                    root: self.me,
                    size: 1 + subs.iter().map(|s| s.size).sum::<u32>(),
                    relocations: 0,
                    candidates: if self.filler == Filler::Leaf {
                        candidates
                    } else {
                        Vec::new()
                    },
                })
            }
            (Filler::Child, false) => Some(self.fill_with_child(subs, &mut relocation)),
            (Filler::Leaf, false) => Some(self.fill_with_leaf(subs, &mut relocation)),
        };
        self.kept = report.as_ref().is_some_and(|s| s.root == self.me);
        match self.tree_parent {
            Some(p) => out.push((p, ShrinkMsg::Up(report))),
            None => self.result = Some(report),
        }
        out.append(&mut relocation);
    }

    fn adopt_as_children(&mut self, subs: &[Sub]) {
        self.children = subs.iter().map(Sub::as_child).collect();
        self.own = self.children.len();
        self.degree = self.degree.max(self.children.len());
    }

    /// Up to `generation` candidates from `subs` (skipping `victim`), recording at this
    /// vertex which of its children each came from.
    fn forward_candidates(&mut self, subs: &[Sub], victim: Option<(usize, u32)>) -> Vec<u32> {
        let mut forwarded = Vec::new();
        let mut provenance = Vec::new();
        let cap = self.generation as usize;
        // With a victim the children are the subs minus a vanished one; map indices.
        let mut child_index = 0u32;
        for (i, s) in subs.iter().enumerate() {
            let vanished = victim.is_some_and(|(vi, v)| vi == i && s.root == v);
            for &c in &s.candidates {
                if forwarded.len() < cap && victim.is_none_or(|(_, v)| v != c) {
                    forwarded.push(c);
                    provenance.push((c, child_index));
                }
            }
            if !vanished {
                child_index += 1;
            }
        }
        self.provenance = provenance;
        forwarded
    }

    /// The message that moves `to` into a hole, with its new children.
    fn relocate(
        &self,
        to: u32,
        children: Vec<Child>,
        provenance: Vec<(u32, u32)>,
    ) -> (u32, ShrinkMsg) {
        let msg = ShrinkMsg::Relocate {
            children,
            provenance,
            generation: self.generation,
        };
        (to, msg)
    }

    fn fill_with_child(&mut self, subs: Vec<Sub>, out: &mut Vec<(u32, ShrinkMsg)>) -> Sub {
        let size = subs.iter().map(|s| s.size).sum();
        // The filler: the root of the largest subtree. It moves up a level with its
        // subtree, so the downward pass's longest path, most likely through the
        // largest subtree, loses a hop.
        let mut subs = subs;
        let filler = subs.remove(largest(&subs));
        let siblings = subs.iter().map(Sub::as_child).collect();
        out.push(self.relocate(filler.root, siblings, Vec::new()));
        Sub {
            root: filler.root,
            size,
            relocations: filler.relocations + 1,
            candidates: Vec::new(),
        }
    }

    fn fill_with_leaf(&mut self, subs: Vec<Sub>, out: &mut Vec<(u32, ShrinkMsg)>) -> Sub {
        let size = subs.iter().map(|s| s.size).sum();
        // The victim: the first candidate of the largest subtree, so that a lone leaf
        // subtree vanishes only when every subtree is a lone leaf.
        let vi = largest(&subs);
        let victim = subs[vi].candidates[0];
        let children: Vec<Child> = subs
            .iter()
            .enumerate()
            .filter(|(i, s)| !(*i == vi && s.root == victim))
            .map(|(i, s)| Child {
                root: s.root,
                size: s.size - u32::from(i == vi),
                relocations: s.relocations,
                victims: if i == vi { vec![victim] } else { Vec::new() },
            })
            .collect();
        let candidates = self.forward_candidates(&subs, Some((vi, victim)));
        // The provenance belongs to the filler, which stands where this hole stood.
        let provenance = std::mem::take(&mut self.provenance);
        out.push(self.relocate(victim, children, provenance));
        Sub {
            root: victim,
            size,
            relocations: 1,
            candidates,
        }
    }

    /// Take out the victims an ancestor used as fillers: correct the sizes of the
    /// children they came from and note them for those children's roots.
    pub fn apply_victims(&mut self, victims: &[u32]) -> Result<(), ProtocolError> {
        for &v in victims {
            let at = self
                .provenance
                .iter()
                .position(|&(c, _)| c == v)
                .ok_or_else(|| ProtocolError::Inconsistent {
                    me: self.me,
                    detail: format!("victim {v} was never forwarded from here"),
                })?;
            let (_, ci) = self.provenance.swap_remove(at);
            let child = &mut self.children[ci as usize];
            child.size -= 1;
            if child.root != v {
                child.victims.push(v);
            }
        }
        if !victims.is_empty() {
            // Re-index provenance once vanished children are dropped.
            let keep: Vec<bool> = self.children.iter().map(|c| c.size > 0).collect();
            let mut new_index = Vec::with_capacity(keep.len());
            let mut next = 0u32;
            for &k in &keep {
                new_index.push(next);
                next += u32::from(k);
            }
            for p in &mut self.provenance {
                p.1 = new_index[p.1 as usize];
            }
            self.children.retain(|c| c.size > 0);
        }
        Ok(())
    }

    /// The hole-filling scheme.
    pub fn filler(&self) -> Filler {
        self.filler
    }

    /// The most children this vertex has had in the shrunk tree.
    pub fn degree(&self) -> usize {
        self.degree
    }

    /// True once this vertex has sent (or, at the root, kept) its report.
    pub fn reported(&self) -> bool {
        self.reported
    }

    /// Relocations received so far.
    pub fn relocations(&self) -> u32 {
        self.relocations
    }

    /// True if this vertex roots the subtree it reported (so the downward pass comes
    /// here); false for a vertex that reported nothing or stood aside for a subtree.
    pub fn kept(&self) -> bool {
        self.kept
    }

    /// At the parent's root, once the pass is over: the whole shrunk tree.
    pub fn result(&self) -> Option<&Option<Sub>> {
        self.result.as_ref()
    }

    /// The vertex's children in the shrunk tree.
    pub fn children(&self) -> &[Child] {
        &self.children
    }

    /// Hand the children over (the vertex keeps none).
    pub fn take_children(&mut self) -> Vec<Child> {
        self.provenance.clear();
        std::mem::take(&mut self.children)
    }

    /// Bytes of state held now.
    pub fn state_bytes(&self) -> usize {
        let reports: usize = self
            .reports
            .iter()
            .map(|r| match r {
                Some(Some(s)) => words(4 + s.candidates.len(), 1),
                _ => words(1, 1),
            })
            .sum();
        let children: usize = self
            .children
            .iter()
            .map(|c| words(3 + c.victims.len(), 1))
            .sum();
        words(8, 1) + reports + children + words(self.provenance.len(), 2)
    }
}
