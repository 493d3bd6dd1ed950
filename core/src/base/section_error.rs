//! What can go wrong making or using an array section.

use crate::base::ids::CollectionId;
use thiserror::Error;

/// An array section that cannot be made, or a section call that cannot be made here.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SectionError {
    /// No index was given, or the predicate kept none.
    #[error("a section of array {coll} needs at least one member; none was given or kept")]
    Empty {
        /// The array.
        coll: CollectionId,
    },
    /// This PE has not heard of the array yet, so it cannot place the members.
    #[error("array {coll} is not known on this PE yet: make its sections on the PE that created it, or after one of its elements has run here")]
    UnknownArray {
        /// The array.
        coll: CollectionId,
    },
    /// A predicate section needs the array's indices, and elements inserted one by
    /// one are known only where they live.
    #[error("array {coll} was not created with a shape (its elements were inserted): list the section's indices instead of a predicate")]
    NoShape {
        /// The array.
        coll: CollectionId,
    },
    /// The array's map failed to place a member.
    #[error("array {coll}'s map could not place a section member: {what}")]
    Placement {
        /// The array.
        coll: CollectionId,
        /// What the map said.
        what: String,
    },
    /// `contribute` was called by something other than a member of the section.
    #[error("section contribute from {from}, which is not a member of the section of array {coll}: only its members contribute")]
    NotAMember {
        /// The section's array.
        coll: CollectionId,
        /// Who called.
        from: String,
    },
    /// The value does not fit the reducer.
    #[error("section reduction of array {coll}: {what}")]
    BadValue {
        /// The section's array.
        coll: CollectionId,
        /// What the reducer said.
        what: String,
    },
}
