//! The tuned runtime's choice for one collective call: which tuned collective the call
//! is, its section size and its message size (this member's value; tuned calls are
//! regular, as in PGMPITuneLib: every member gives the same length), looked up in the
//! job's profile.

use super::mockups::{Collective, Impl};
use super::profile::Profile;
use crate::collectives::op::Op;
use crate::collectives::value::approx_bytes;

/// The implementation the profile chooses for `op` on a section of `size` (the
/// default without a profile or for a collective that is not tuned).
pub(crate) fn choose(profile: Option<&Profile>, op: &Op, size: u32) -> Impl {
    let (Some(profile), Some(collective)) = (profile, Collective::of(op)) else {
        return Impl::Default;
    };
    let value = match op {
        Op::Reduce { value, .. } | Op::Scan { value, .. } | Op::Allgather { value, .. } => value,
        // An alltoall's message size is its block's (the profile's sizes are per block).
        Op::Alltoall { blocks, .. } => match blocks.first() {
            Some(block) => block,
            None => return Impl::Default,
        },
        _ => return Impl::Default,
    };
    profile.choose(collective, size, approx_bytes(value) as u64)
}
