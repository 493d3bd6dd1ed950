//! Why a collective cannot start, or why its members' contributions do not fit.

use crate::section::SectionId;
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
    /// The root of a broadcast or scatter started without the value.
    #[error("the root of a broadcast or scatter must give the value (a scatter's root: one block per member)")]
    MissingValue,
    /// An alltoall member gave a number of blocks other than the section's size.
    #[error("an alltoall needs one block per member: {got} blocks for a section of {size}")]
    BlockCount {
        /// Blocks given.
        got: usize,
        /// Members of the section.
        size: u32,
    },
    /// The k-port exchange needs at least one port.
    #[error("a k-port exchange needs k >= 1, got {0}")]
    BadPorts(u32),
    /// A member's view of its section is not a place in a k-ary tree (a forged or
    /// corrupted `Section`): the collective is refused before it starts.
    #[error("the view of rank {rank} of {size} members (k {k}, parent: {has_parent}, {children} children) is not a place in a k-ary tree: a rank below the size, k in {min_k}..={max_k}, a parent unless rank 0 and {want_children} children are needed; pass the Section its creation gave", min_k = crate::kary::MIN_K, max_k = crate::kary::MAX_K)]
    BadSection {
        /// The member's rank.
        rank: u32,
        /// Number of members.
        size: u32,
        /// Branching factor.
        k: u32,
        /// True if the view names a parent.
        has_parent: bool,
        /// How many children the view names.
        children: usize,
        /// How many children that rank has in the k-ary tree (0 if the rank or k is bad).
        want_children: u32,
    },
    /// Members' values cannot be combined: they differ in kind (say `u64` and `i64`,
    /// or `f64` and an integer) or, for an element-wise reducer, in length.
    #[error("members' values do not combine: {0}; every member must give the same kind of value, and the same length for an element-wise reducer")]
    Mismatch(String),
    /// A message does not fit this member's part of a running collective.
    #[error("{0}; every member must start the section's collectives in the same order, with the same algorithm, kind of value and view of the section")]
    Protocol(String),
    /// Another member's part of the collective failed, and told this member, which
    /// would otherwise wait for it forever.
    #[error("rank {rank} (PE {pe}) failed it {}: {cause}", when(*.before_start))]
    Aborted {
        /// The member whose part failed.
        rank: u32,
        /// That member's PE.
        pe: Pe,
        /// What it found wrong.
        cause: String,
        /// True if the news came before this member started the collective.
        before_start: bool,
    },
    /// A PE of the section failed (`Ctx::on_pe_failure`): the collective cannot
    /// complete, at this member or at any other that waits on it. Survivors make a
    /// section without it (a rebuild, or `TreeMember::of_roster`) and run it again.
    #[error("PE {pe}, which holds a rank of the section, failed")]
    PeFailed {
        /// The failed PE.
        pe: Pe,
    },
    /// A collective was started on, or a free asked again for, a section this member
    /// has freed.
    #[error("section {section} was freed on PE {pe}: no collective can start on it and it cannot be freed again")]
    Freed {
        /// The section.
        section: SectionId,
        /// The PE that freed it.
        pe: Pe,
    },
    /// A message of a collective came after this member freed its section (the message
    /// is dropped): the sender started a collective this member never did.
    #[error("a message of collective #{seq} on section {section} from rank {from} reached PE {pe} after it freed the section; every member must start the same collectives on a section before freeing it")]
    AfterFree {
        /// The section.
        section: SectionId,
        /// The collective's number on the section.
        seq: u64,
        /// The sender's rank.
        from: u32,
        /// The PE that freed the section.
        pe: Pe,
    },
    /// A running collective ended at this member without a result (reported through
    /// the job's `--on-error` policy). Under `drop` the other members hear of it and
    /// fail too, with `Aborted` as the cause.
    #[error("{collective} #{seq} on section {section} failed at rank {rank} (PE {pe}): {cause}")]
    Failed {
        /// The collective as the member started it (e.g. `allreduce`, `allgather (ring)`).
        collective: String,
        /// The section it ran on.
        section: SectionId,
        /// Its number among the section's collectives, from 0.
        seq: u64,
        /// The rank that found the problem.
        rank: u32,
        /// That member's PE.
        pe: Pe,
        /// What was wrong: a `Mismatch`, a `Protocol` error, or `Aborted` by another
        /// member.
        cause: Box<CollectiveError>,
    },
}

/// How an `Aborted` member heard of the failure, in words.
fn when(before_start: bool) -> &'static str {
    if before_start {
        "before this member started"
    } else {
        "first"
    }
}
