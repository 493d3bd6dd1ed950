//! Section creation on the chorus runtime: a builder group runs any creation
//! [`crate::creation::protocol::Protocol`] over real chorus messages, from the world or from a
//! section it built, and reports what each creation cost.
//!
//! A creation starts when an application sends [`CreationMsg::Create`] to the builder
//! on its own PE ([`Builder::create_section`]). That PE names it with a token made of
//! its PE number and a local counter ([`crate::section::SectionId::token`]), so any
//! number of creations run at once, from any parents, without agreement. The start
//! reaches every PE of the parent (a group broadcast for the world, a flood of the
//! parent section's tree otherwise; on a PE that has not stored the parent yet it
//! waits until that PE's part of the parent's creation finishes); each PE decides
//! from the request's [`Membership`] whether it joins and runs the algorithm's state
//! machine. From a
//! section, the intermediaries of hash-based neighbour discovery are named by parent
//! rank and reached by routing over the parent's tree, so no PE outside the parent
//! takes part (from the world, they are PEs and are reached directly). Each member
//! gets its [`crate::section::Section`] at the request's member callback. Then the
//! parent's tree adds up the figures twice (finish times and message counts, then
//! state peaks once everyone is done) and the parent's root sends one
//! [`CreationReport`] to the report callback.
//!
//! Beyond one section per creation:
//! - **split by colour** ([`Colouring`]): every PE of the parent names a colour or
//!   none and one pass makes a section per colour: each PE runs one state machine
//!   per colour, and what they send to one PE in one handler travels as one message,
//!   so the upward pass is one wave carrying every colour's counts;
//! - **split by colour and key** ([`Split`], `MPI_Comm_split`): every PE of the
//!   parent calls with its own colour and key ([`SplitMsg::Call`]); the parent's
//!   root starts the split as above, each PE matching the start with its own call;
//!   once a section is made its members rank themselves by (key, PE) over its tree
//!   (`builder/rank.rs`) before anyone hears of it;
//! - **group merge** ([`MergeRequest`], [`Builder::merge_sections`]): two sections
//!   become one with only their members taking part ([`merge`]);
//! - **rebuild after failure** (sim layer): when a member dies, the survivors make
//!   the section again without it, with only the dead member's tree neighbours, a
//!   rendezvous PE and the survivors taking part ([`rebuild`]); the new section goes
//!   to the old creation's callbacks, with its tag.
//!
//! Counting: a creation message is one chorus message of the protocol between two
//! distinct PEs — state-machine messages and announcements to intermediaries counted
//! by their sender, intermediaries' answers by their receiver. The start, the figure
//! sums and messages a PE hands to itself are not counted; a routed announcement
//! counts once per hop. Bytes are bincode bytes of
//! the family's message ([`CreationMsg`], [`MergeMsg`], [`RepairMsg`]: token and sender
//! included; the builder's family tag and the envelope header excluded).

mod algo;
pub mod batch;
pub mod builder;
mod hop;
pub mod merge;
pub mod rebuild;
pub mod spec;
pub mod split;
pub mod tally;

pub use algo::{available, protocol, Proto, ProtoMsg};
pub use builder::{
    Builder, BuilderInit, BuilderMsg, CreationMsg, FreeMsg, Keyed, MergeMsg, Party, Placed,
    RepairMsg, SplitMsg, Then,
};
pub use merge::MergeRequest;
pub use spec::{
    default_algorithm, drawn, Colouring, CreationReport, HostError, Membership, Parent, Request,
    DEFAULT_K, MAX_COLOURS,
};
pub use split::Split;
pub use tally::Tally;

use chorus_core::Registry;

/// Register the builder group's chare type and its failure entry (every process,
/// same order as the rest); create the group with the init this returns:
/// `ctx.create_group::<Builder>(init)`.
pub fn register(reg: &mut Registry) -> BuilderInit {
    reg.chare::<Builder>("chorus_sections::Builder");
    let on_failure = reg.entry::<Builder, chorus_core::Pe>("Builder::failed", BuilderMsg::failed);
    BuilderInit { on_failure }
}
