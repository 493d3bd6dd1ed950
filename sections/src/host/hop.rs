//! The step every routed message of a merge or a rebuild takes: on to a neighbour in
//! the old trees, or here. Both ways ([`crate::host::merge::Route`] and
//! [`crate::host::rebuild::Patched`]) answer with it, so it sits below both.

use chorus_core::Pe;

/// Where a routed message goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// This PE holds the destination rank.
    Here,
    /// Forward to this PE.
    To(Pe),
}

impl Hop {
    /// The hop from rank `r` of a k-ary tree down to its child of rank `c`, whose PE
    /// stands in `children` (the member's view of its children, in order).
    pub fn to_child(children: &[Pe], r: u32, k: u32, c: u32) -> Option<Hop> {
        let at = (c - (k * r + 1)) as usize;
        children.get(at).map(|&pe| Hop::To(pe))
    }
}
