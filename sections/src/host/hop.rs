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
