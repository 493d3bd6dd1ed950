//! Rebuild after failure (dinan, section V: noncollective creation lets survivors
//! make a group without a failed process): when a member of a section dies, its tree
//! neighbours meet at a rendezvous PE, patch the tree around the hole (the dead
//! rank's parent adopts its children; a dead root's first child adopts its siblings),
//! tell every survivor which rank died, and the survivors — and no one else but the
//! rendezvous — find their places in the new section: ranks above the dead one move
//! down by one, and hash-based neighbour discovery runs through member
//! intermediaries reached by routing over the patched tree.

use crate::hash::mix64;
use crate::host::hop::Hop;
use crate::host::spec::HostError;
use crate::kary;
use crate::section::{Section, SectionId};
use chorus_core::Pe;
use std::collections::BTreeSet;

/// What a surviving neighbour of the dead rank does in the repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The dead rank's parent: it adopts the dead rank's children.
    Parent,
    /// A child of the dead rank.
    Child,
}

/// This member's role if `dead_pe` was one of its tree neighbours in `view`: (role,
/// the dead rank).
pub fn role(view: &Section, dead_pe: Pe) -> Option<(Role, u32)> {
    if view.parent == Some(dead_pe) {
        return kary::parent(view.rank, view.k).map(|d| (Role::Child, d));
    }
    let at = view.children.iter().position(|&c| c == dead_pe)?;
    Some((Role::Parent, view.k * view.rank + 1 + at as u32))
}

/// How many neighbours of `dead` meet at the rendezvous: its parent (if any) and its
/// children.
pub fn parties(dead: u32, size: u32, k: u32) -> u32 {
    u32::from(dead > 0) + kary::num_children(dead, size, k)
}

/// The rendezvous of the repair of `id` around `dead`: a PE chosen by a fixed hash,
/// skipping PEs known to have failed.
pub fn rendezvous(id: SectionId, dead: u32, npes: u32, failed: &BTreeSet<Pe>) -> Option<Pe> {
    let key = mix64(u64::from(id.creator) << 32 | u64::from(id.counter)) ^ u64::from(dead);
    (0..u64::from(npes) * 4)
        .map(|i| (mix64(key ^ mix64(i)) % u64::from(npes)) as Pe)
        .find(|pe| !failed.contains(pe))
}

/// A survivor's way through the patched tree, by new rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patched {
    /// The survivor's view of the old section.
    pub old: Section,
    /// The dead rank.
    pub dead: u32,
    /// Ranks adopted across the hole, with their PEs: the dead rank's children (at
    /// its parent) or the dead root's other children (at its first child).
    pub adopted: Vec<(u32, Pe)>,
    /// For a child of the dead rank: its new parent (the dead rank's parent, or the
    /// dead root's first child); None otherwise.
    pub across: Option<Pe>,
}

impl Patched {
    /// The survivor's new rank.
    pub fn rank(&self) -> u32 {
        self.old.rank - u32::from(self.old.rank > self.dead)
    }

    /// Members of the new section.
    pub fn size(&self) -> u32 {
        self.old.size - 1
    }

    fn adopted_pe(&self, rank: u32) -> Option<Pe> {
        self.adopted.iter().find(|a| a.0 == rank).map(|a| a.1)
    }

    /// The survivor's parent in the patched tree.
    pub fn up(&self) -> Option<Pe> {
        match kary::parent(self.old.rank, self.old.k) {
            Some(p) if p == self.dead => self.across,
            _ => self.old.parent,
        }
    }

    /// The survivor's children in the patched tree.
    pub fn down(&self) -> Vec<Pe> {
        let (r, k) = (self.old.rank, self.old.k);
        let mut out: Vec<Pe> = kary::children(r, self.old.size, k)
            .zip(&self.old.children)
            .filter(|(c, _)| *c != self.dead)
            .map(|(_, &pe)| pe)
            .collect();
        out.extend(self.adopted.iter().map(|a| a.1));
        out
    }

    /// The next hop towards the holder of new rank `dest`.
    pub fn next_hop(&self, dest: u32) -> Result<Hop, HostError> {
        let stuck = || HostError::Route {
            id: self.old.id,
            rank: self.old.rank,
            dest,
        };
        let (r, k, d) = (self.old.rank, self.old.k, self.dead);
        let t = dest + u32::from(dest >= d);
        if t == r {
            return Ok(Hop::Here);
        }
        if t >= self.old.size {
            return Err(stuck());
        }
        if let Some(c) = kary::child_towards(r, t, k) {
            if c == d {
                let c2 = kary::child_towards(d, t, k).ok_or_else(stuck)?;
                return self.adopted_pe(c2).map(Hop::To).ok_or_else(stuck);
            }
            return Hop::to_child(&self.old.children, r, k, c).ok_or_else(stuck);
        }
        match kary::parent(r, k) {
            Some(p) if p == d => match self.across {
                Some(pe) => Ok(Hop::To(pe)),
                // The dead root's first child: the target is below a sibling.
                None => {
                    let s = kary::child_towards(d, t, k).ok_or_else(stuck)?;
                    self.adopted_pe(s).map(Hop::To).ok_or_else(stuck)
                }
            },
            Some(_) => self.old.parent.map(Hop::To).ok_or_else(stuck),
            None => Err(stuck()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Patch every possible hole of a few trees and route from every survivor to
    /// every new rank; the walks end at the right PE and the patched tree's parent and
    /// child links agree.
    #[test]
    fn patched_trees_route_everywhere_and_link_both_ways() {
        for (size, k) in [(1u32, 2u32), (2, 2), (13, 3), (20, 2), (9, 4)] {
            let id = SectionId::created(0, 0, size);
            let pe_of = |r: u32| 1000 + r;
            let view = |r: u32| Section {
                id,
                rank: r,
                size,
                k,
                parent: kary::parent(r, k).map(pe_of),
                children: kary::children(r, size, k).map(pe_of).collect(),
            };
            for dead in 0..size {
                let kids: Vec<u32> = kary::children(dead, size, k).collect();
                let patched = |r: u32| -> Patched {
                    let v = view(r);
                    let (mut adopted, mut across) = (Vec::new(), None);
                    match role(&v, pe_of(dead)) {
                        Some((Role::Parent, _)) => {
                            adopted = kids.iter().map(|&c| (c, pe_of(c))).collect()
                        }
                        Some((Role::Child, _)) if dead > 0 => {
                            across = kary::parent(dead, k).map(pe_of)
                        }
                        Some((Role::Child, _)) if r == kids[0] => {
                            adopted = kids[1..].iter().map(|&c| (c, pe_of(c))).collect()
                        }
                        Some((Role::Child, _)) => across = Some(pe_of(kids[0])),
                        None => {}
                    }
                    Patched {
                        old: v,
                        dead,
                        adopted,
                        across,
                    }
                };
                let alive: Vec<u32> = (0..size).filter(|&r| r != dead).collect();
                assert_eq!(
                    parties(dead, size, k) as usize,
                    kids.len() + usize::from(dead > 0)
                );
                for &r in &alive {
                    let p = patched(r);
                    for c in p.down() {
                        assert_eq!(
                            patched(c - 1000).up(),
                            Some(pe_of(r)),
                            "size {size} dead {dead}"
                        );
                    }
                    for dest in 0..size - 1 {
                        let want = pe_of(dest + u32::from(dest >= dead));
                        let (mut at, mut hops) = (pe_of(r), 0);
                        while let Hop::To(next) = patched(at - 1000).next_hop(dest).unwrap() {
                            at = next;
                            hops += 1;
                            assert!(hops <= 4 * kary::height(size, k) + 2, "loop");
                        }
                        assert_eq!(at, want, "size {size} k {k} dead {dead}: {r} -> {dest}");
                        assert_eq!(patched(at - 1000).rank(), dest);
                    }
                }
                let roots = alive.iter().filter(|&&r| patched(r).up().is_none()).count();
                assert_eq!(roots, usize::from(!alive.is_empty()));
            }
        }
    }
}
