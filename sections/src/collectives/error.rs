//! Why a collective cannot start, or why its members' contributions do not fit.

use chorus_core::Pe;
use thiserror::Error;

/// An error of a section collective.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CollectiveError {
    /// The PE is not a member of the range section.
    #[error("PE {pe} is not a member of the section")]
    NotAMember {
        /// The PE that asked.
        pe: Pe,
    },
    /// A collective was started on another PE than the member's own.
    #[error("the member on PE {member} must start its collectives itself, not PE {caller}")]
    NotMyPe {
        /// The member's PE.
        member: Pe,
        /// The PE that tried to start it.
        caller: Pe,
    },
    /// The root is not a rank of the section.
    #[error("root {root} is not a rank of a section of {size}")]
    BadRoot {
        /// The requested root.
        root: u32,
        /// Number of members.
        size: u32,
    },
    /// A rank→PE table does not fit the member's view.
    #[error("a roster of {len} PEs does not fit a section of {size} where rank {rank} is PE {pe}")]
    BadRoster {
        /// Length of the table.
        len: usize,
        /// Number of members.
        size: u32,
        /// The member's rank.
        rank: u32,
        /// The member's PE.
        pe: Pe,
    },
    /// The algorithm needs rank→PE for every rank, and the member only knows its tree.
    #[error("{algorithm} needs a rank-to-PE table; this section only knows its tree neighbours")]
    NeedsRoster {
        /// The algorithm that was asked for.
        algorithm: &'static str,
    },
    /// Registered custom reducers live in core's registry, which sections cannot reach.
    #[error("custom reducer {0} cannot be applied outside chorus-core")]
    CustomReducer(u32),
    /// The value does not suit the reducer (e.g. `Sum` over booleans).
    #[error("{0}")]
    Value(String),
    /// The root of a broadcast started without the value.
    #[error("the root of a broadcast must give the value")]
    MissingValue,
    /// The k-port exchange needs at least one port.
    #[error("a k-port exchange needs k >= 1, got {0}")]
    BadPorts(u32),
}
