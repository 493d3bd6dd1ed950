//! Noncollective group merge (dinan, section IV): two sections become one with only
//! their members taking part. Section A keeps ranks 0..|A| and B's members follow,
//! ranks |A|..|A|+|B|; each member then finds its new tree neighbours by hash-based
//! neighbour discovery whose intermediaries are members too (the holder of a merged
//! rank), reached by routing through the two old trees, joined at their roots. No
//! PE outside the two sections hears of the merge.

use crate::creation::neighbour_discovery::Discovery;
use crate::creation::protocol::{FromIntermediary, ToIntermediary, Wire};
// Hop was first defined here; re-exported so its public path stays valid.
pub use crate::host::hop::Hop;
use crate::host::rebuild::Patched;
use crate::host::spec::HostError;
use crate::kary;
use crate::section::{Placement, Section, SectionId};
use chorus_core::{Callback, Pe};
use serde::{Deserialize, Serialize};

/// A request to merge section `a` with section `b`, sent to the builder on a member
/// of `a`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRequest {
    /// The section whose members keep their ranks.
    pub a: SectionId,
    /// The section whose members follow them.
    pub b: SectionId,
    /// Any member of `b` (its root is found from there).
    pub b_contact: Pe,
    /// Branching factor of the merged tree, 2..=16.
    pub k: u32,
    /// Each member's new `Section` goes here (as for a creation).
    pub on_member: Callback,
    /// The `CreationReport` goes here, once.
    pub on_report: Callback,
    /// A number of the caller's choosing, echoed in the report.
    pub tag: u64,
}

/// A member's way through the two joined trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The member's view of its old section.
    pub old: Section,
    /// Merged rank of the old section's rank 0.
    pub offset: u32,
    /// At an old root: the other old root (None elsewhere).
    pub link: Option<Pe>,
}

/// How a member reaches the holder of a new rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Way {
    /// Through two old trees joined at their roots (a merge).
    Joined(Route),
    /// Through an old tree patched around a dead rank (a rebuild).
    Patched(Patched),
}

impl Way {
    /// The member's new rank.
    pub fn rank(&self) -> u32 {
        match self {
            Way::Joined(r) => r.rank(),
            Way::Patched(p) => p.rank(),
        }
    }

    /// The next hop towards the holder of new rank `dest`.
    pub fn next_hop(&self, dest: u32) -> Result<Hop, HostError> {
        match self {
            Way::Joined(r) => r.next_hop(dest),
            Way::Patched(p) => p.next_hop(dest),
        }
    }
}

impl Route {
    /// This member's merged rank.
    pub fn rank(&self) -> u32 {
        self.offset + self.old.rank
    }

    /// The next hop towards the holder of merged rank `dest`.
    pub fn next_hop(&self, dest: u32) -> Result<Hop, HostError> {
        let stuck = || HostError::Route {
            id: self.old.id,
            rank: self.old.rank,
            dest,
        };
        let (lo, hi) = (self.offset, self.offset + self.old.size);
        let (r, k) = (self.old.rank, self.old.k);
        if (lo..hi).contains(&dest) {
            let t = dest - lo;
            if t == r {
                return Ok(Hop::Here);
            }
            if let Some(c) = kary::child_towards(r, t, k) {
                return Hop::to_child(&self.old.children, r, k, c).ok_or_else(stuck);
            }
        }
        self.old.parent.or(self.link).map(Hop::To).ok_or_else(stuck)
    }
}

/// One member's state in a merge or a rebuild: its neighbour discovery (its host
/// routes the announcements along a [`Way`]).
#[derive(Debug, Clone)]
pub struct MergeState {
    token: u64,
    size: u32,
    k: u32,
    discovery: Option<Discovery>,
    placement: Option<Placement>,
    peak: usize,
}

impl MergeState {
    /// Start: the member `me` learns the merged size; returns its announcements as
    /// (merged rank of the intermediary, message).
    pub fn start(
        me: Pe,
        way: &Way,
        size: u32,
        k: u32,
        salt: u64,
        token: u64,
    ) -> (Self, Vec<(u32, ToIntermediary)>) {
        let mut out: Vec<(u32, Wire<()>)> = Vec::new();
        let d = Discovery::start(me, way.rank(), size, k, size, salt, &mut out);
        let sends = out
            .into_iter()
            .filter_map(|(to, w)| match w {
                Wire::ToIntermediary(m) => Some((to, m)),
                _ => None,
            })
            .collect();
        let mut s = MergeState {
            token,
            size,
            k,
            discovery: Some(d),
            placement: None,
            peak: 0,
        };
        s.try_finish();
        (s, sends)
    }

    /// An intermediary's answer; false if it was not expected.
    pub fn found(&mut self, msg: FromIntermediary) -> bool {
        let ok = self.discovery.as_mut().is_some_and(|d| d.receive(msg));
        self.try_finish();
        ok
    }

    fn try_finish(&mut self) {
        let Some(d) = &self.discovery else { return };
        self.peak = self.peak.max(d.state_bytes() + 6 * 4);
        if let Some((parent, children)) = d.done() {
            self.placement = Some(Placement {
                token: self.token,
                rank: d.rank(),
                size: self.size,
                k: self.k,
                parent,
                children: children.to_vec(),
            });
            self.discovery = None;
        }
    }

    /// The member's place once known.
    pub fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    /// Most bytes of state held at once (discovery plus route and sizes).
    pub fn peak_state_bytes(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kary;

    fn view(id: SectionId, rank: u32, size: u32, k: u32, pe_of: impl Fn(u32) -> Pe) -> Section {
        Section {
            id,
            rank,
            size,
            k,
            parent: kary::parent(rank, k).map(&pe_of),
            children: kary::children(rank, size, k).map(&pe_of).collect(),
        }
    }

    /// Route from every member to every merged rank over two small trees and check
    /// that each walk ends at the right PE within the height bound.
    #[test]
    fn routes_reach_every_rank_of_both_trees() {
        let (a_size, b_size, ka, kb) = (11u32, 7u32, 3u32, 2u32);
        let a_pe = |r: u32| 100 + r;
        let b_pe = |r: u32| 200 + r;
        let a = SectionId::created(1, 0, a_size);
        let b = SectionId::created(2, 0, b_size);
        let route_of = |pe: Pe| -> Route {
            if pe >= 200 {
                let r = pe - 200;
                Route {
                    old: view(b, r, b_size, kb, b_pe),
                    offset: a_size,
                    link: (r == 0).then_some(a_pe(0)),
                }
            } else {
                let r = pe - 100;
                Route {
                    old: view(a, r, a_size, ka, a_pe),
                    offset: 0,
                    link: (r == 0).then_some(b_pe(0)),
                }
            }
        };
        let pes: Vec<Pe> = (0..a_size).map(a_pe).chain((0..b_size).map(b_pe)).collect();
        let bound = 2 * (kary::height(a_size, ka) + kary::height(b_size, kb));
        for &start in &pes {
            for dest in 0..a_size + b_size {
                let want = if dest < a_size {
                    a_pe(dest)
                } else {
                    b_pe(dest - a_size)
                };
                let mut at = start;
                let mut hops = 0;
                while let Hop::To(next) = route_of(at).next_hop(dest).unwrap() {
                    at = next;
                    hops += 1;
                    assert!(hops <= bound, "{start} -> {dest} loops");
                }
                assert_eq!(at, want, "{start} -> {dest}");
                assert_eq!(route_of(at).rank(), dest);
            }
        }
    }
}
