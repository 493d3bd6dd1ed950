//! The one rule for callbacks given to this crate.
//!
//! Every result this crate delivers belongs to one member of a section (its place in
//! a new section, its share of a collective) and is delivered on that member's PE.
//! So a callback naming a whole collection means **that collection's element on the
//! member's own PE**: `Callback::group_all(&g, e)` reaches `g`'s member on the PE of
//! the member the result is for, once — never every PE of the group. `array_all`
//! is used as given (an array has no element per PE). Any other callback (a chare,
//! one group member, one array element, `Ignore`) is used as given, so a result
//! every member gets (an allreduce) reaches that one target once per member.

use chorus_core::{Callback, Pe};

/// Where a result for the member on `pe` goes, by the rule above.
pub fn for_member(cb: &Callback, pe: Pe) -> Callback {
    match cb {
        Callback::GroupAll { .. } => cb.with_pe(pe),
        other => other.clone(),
    }
}
