//! Asynchronous collectives over sections, on the runtime.
//!
//! One group chare, [`CollectivesHost`], is created once per job
//! ([`Collectives::create`]) and hosts, on every PE, the state machines of the
//! collectives that PE's members run. A member starts a collective from any handler
//! on its own PE: the call returns at once, and the result arrives later at the
//! member's [`Callback`] (a chare, a group member, an array element — never a
//! closure; a callback naming a whole group reaches its member on this member's PE,
//! once: [`crate::callback`]). Values are chorus-core's neutral [`RedData`], so any `Reducible` goes in
//! and any entry taking a `Reducible` receives the result.
//!
//! Every member of a section must start that section's collectives in the same order
//! (the MPI rule): a collective is named by (section id, the member's running count
//! of collectives on that section), so any number may be in flight on one section and
//! on overlapping sections at once; messages that arrive before the local start wait
//! for it. A built section is freed with `Sections::free` (or, if the builder does
//! not keep it, [`Collectives::free`]), which waits on each member for its running
//! collectives on it; a collective started on it afterwards is
//! [`CollectiveError::Freed`] and a message for it is dropped (reported as
//! [`CollectiveError::AfterFree`] when its sender broke the order rule). Range
//! sections are values that recur, and are not freed. Starting checks what it can locally and returns a [`CollectiveError`].
//! Members whose values do not combine (different kinds, or different lengths for an
//! element-wise reducer) or whose collectives do not match end the collective with
//! [`CollectiveError::Failed`], reported with `ctx.fail` by "section collectives"
//! under the job's `--on-error` policy (the run returns it, or logs it and lists it in
//! the report). Under `drop` the failing member also tells the others (every member
//! when it has a roster, else those still running or not yet started, along the
//! tree), which end their part with `Failed` caused by [`CollectiveError::Aborted`]
//! instead of waiting forever (members that already finished keep their result). A scan
//! whose members mix `f64` and integer values fails the same way, although members
//! with a roster choose its algorithm by the kind of their own value: where the kind
//! decides, tree members exchange probes with their rank neighbours, so the two
//! algorithms always meet (`scan`).
//!
//! | collective | result | needs |
//! | --- | --- | --- |
//! | broadcast | the root's value, at every member | tree |
//! | multicast (one-sided: only the root calls) | the root's value, at each member's group or array element | range section |
//! | reduce / allreduce | the reduction, at the root / every member | tree |
//! | barrier | `()` (an empty list) at every member, after all started | tree |
//! | scan / exscan | the inclusive / exclusive prefix by rank | tree |
//! | gather | the concatenation of every member's vector, in rank order, at the root | tree |
//! | gatherv | one item per rank (lengths may differ), at the root | tree |
//! | allgather | the concatenation, at every member | tree (`Tree`) or roster (Bruck, standard exchange, ring) |
//! | scatter / scatterv | at rank j, block j of the root's blocks | tree |
//! | reduce-scatter | at rank j, block j (`counts[j]` elements) of the element-wise reduction | tree (reduce, then scatter) |
//! | alltoall / alltoallv | at member j, the blocks every member gave for rank j, concatenated in rank order | roster (pairwise exchange, Bruck) |
//!
//! "Tree" collectives only talk to tree neighbours, so they run on any section;
//! sections built by an algorithm need a rank→PE table ([`TreeMember::with_roster`])
//! for the roster allgathers (give it to all members or to none). With a roster
//! (always, on range sections) rooted collectives run on the tree re-rooted at their
//! root, and scans with order-free reducers use recursive doubling instead of the tree.
//! A group created with a tuning profile ([`Collectives::create_tuned`]) runs each call
//! as the profile chooses (the default or a mock-up of `crate::tune`); a handle
//! [`Collectives::pinned`] to one implementation ignores the profile. Built-in reducers only: a `Reducer::Custom` lives in
//! core's registry, which is not reachable from here ([`CollectiveError::CustomReducer`]).

pub mod allgather_bruck;
pub mod allgather_kport;
pub mod allgather_ring;
pub mod alltoall;
pub mod broadcast;
pub mod choice;
pub mod error;
#[cfg(test)]
mod harness;
pub mod host;
pub mod machine;
pub mod multicast;
mod op;
pub mod reduce;
mod reduce_scatter;
mod rounds;
pub mod scan;
pub mod scan_doubling;
pub mod scatter;
pub mod topology;
pub(crate) mod tuned;
pub mod value;

pub use alltoall::Alltoall;
pub use choice::Allgather;
pub use error::CollectiveError;
pub use host::{CollectivesHost, FailedCollective, REPORTER};
pub use multicast::PerMember;
pub use topology::{Member, RangeMember, Rerooted, Topology, TreeMember};

use chorus_core::{Callback, Ctx, GroupProxy, Pe, RedData, Reducer, Reducible, Registry};
use host::{HostMsg, Start};
use op::Op;
use reduce::Delivery;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tuned::{Impl, Profile};
use value::Fold;

/// Name of the host's entry that the runtime reports failed PEs to.
const PE_FAILED_ENTRY: &str = "CollectivesHost::pe_failed";

/// Handle to the job's collectives group: start collectives through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collectives {
    group: GroupProxy<CollectivesHost>,
    /// The implementation every collective started through this handle runs; None
    /// lets the job's tuning profile choose.
    pin: Option<Impl>,
}

fn check_root(member: &Member, root: u32) -> Result<(), CollectiveError> {
    if root < member.size() {
        Ok(())
    } else {
        Err(CollectiveError::BadRoot {
            root,
            size: member.size(),
        })
    }
}

impl Collectives {
    /// Register the host chare type (every process, in the same place of the order).
    pub fn register(reg: &mut Registry) {
        reg.chare::<CollectivesHost>("chorus_sections::collectives::CollectivesHost");
        if reg
            .find_entry::<CollectivesHost, Pe>(PE_FAILED_ENTRY)
            .is_none()
        {
            reg.entry::<CollectivesHost, Pe>(PE_FAILED_ENTRY, HostMsg::PeFailed);
        }
    }

    /// Have `callback` (on this PE) receive, as `Encoded<FailedCollective>`, every
    /// collective of a member on this PE that ends without a result from now on: a
    /// PE of its section failed, or members' values or calls did not fit. Under
    /// `--on-error drop` this is how a member learns to make its section again
    /// without the failed PE and run the collective again.
    pub fn watch_failures(&self, ctx: &mut Ctx, callback: Callback) {
        let me = ctx.my_pe();
        self.group.send(ctx, me, HostMsg::Watch(callback));
    }

    /// Create the group (once per job, from any PE).
    pub fn create(ctx: &mut Ctx) -> Self {
        Self::create_tuned(ctx, None)
    }

    /// Create the group with a tuning profile (`crate::tune`): each call of a tuned
    /// collective (allgather with `Auto`, allreduce, gather, reduce, scan) runs the
    /// implementation the profile chooses for its section size and message size. The
    /// members of a tuned call must give values of the same size (regular calls, as in
    /// MPI), or they might choose differently.
    pub fn create_tuned(ctx: &mut Ctx, profile: Option<Arc<Profile>>) -> Self {
        Collectives {
            group: ctx.create_group::<CollectivesHost>(profile),
            pin: None,
        }
    }

    /// This handle with every collective pinned to `choice` (the default or a mock-up
    /// of the tuner), whatever the profile says; mock-ups of another collective are
    /// ignored.
    pub fn pinned(self, choice: Impl) -> Self {
        Collectives {
            pin: Some(choice),
            ..self
        }
    }

    /// The group's proxy.
    pub fn group(&self) -> GroupProxy<CollectivesHost> {
        self.group
    }

    fn start(
        &self,
        ctx: &mut Ctx,
        member: Member,
        op: Op,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        self.start_as(ctx, member, op, callback, self.pin)
    }

    fn start_as(
        &self,
        ctx: &mut Ctx,
        member: Member,
        op: Op,
        callback: Callback,
        pin: Option<Impl>,
    ) -> Result<(), CollectiveError> {
        let (mine, caller) = (member.my_pe(), ctx.my_pe());
        if mine != caller {
            return Err(CollectiveError::NotMyPe {
                member: mine,
                caller,
            });
        }
        topology::check_view(&member)?;
        let start = Start {
            member,
            op,
            callback,
            pin,
        };
        self.group
            .send(ctx, caller, HostMsg::Start(Box::new(start)));
        Ok(())
    }

    /// Free `member`'s section in the collectives host on its PE only, for a section
    /// the builder does not keep (created with `Request::keep(false)`); a kept
    /// section is freed with `Sections::free`, which frees the builder's state too.
    /// Every member calls it after starting the same collectives on the section; it
    /// waits for the member's running ones, then `on_freed` gets the section's id.
    /// Afterwards a collective on it, or a second free, is [`CollectiveError::Freed`]
    /// and a message for it is dropped ([`CollectiveError::AfterFree`]). Range
    /// sections are values that recur, and are not freed.
    pub fn free(
        &self,
        ctx: &mut Ctx,
        member: TreeMember,
        on_freed: Callback,
    ) -> Result<(), CollectiveError> {
        let member = Member::from(member);
        let (mine, caller) = (member.my_pe(), ctx.my_pe());
        if mine != caller {
            return Err(CollectiveError::NotMyPe {
                member: mine,
                caller,
            });
        }
        topology::check_view(&member)?;
        let free = HostMsg::Free {
            section: member.id(),
            on_freed,
        };
        CollectivesHost::send_here(&self.group, ctx, free);
        Ok(())
    }

    /// One-sided multicast from `member` (the root; the other members start nothing)
    /// of a range section: each member delivers `value` to its `target` element.
    pub fn multicast<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: RangeMember,
        value: T,
        target: PerMember,
    ) -> Result<(), CollectiveError> {
        let (mine, caller) = (member.my_pe(), ctx.my_pe());
        if mine != caller {
            return Err(CollectiveError::NotMyPe {
                member: mine,
                caller,
            });
        }
        let msg = HostMsg::Multicast {
            section: member.section(),
            root: member.rank(),
            value: value.into_data(),
            target,
        };
        self.group.send(ctx, caller, msg);
        Ok(())
    }

    /// Broadcast the root's `value` (None elsewhere) to every member's `callback`.
    pub fn broadcast<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        root: u32,
        value: Option<T>,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = member.into();
        check_root(&member, root)?;
        let value = value.map(Reducible::into_data);
        if member.rank() == root && value.is_none() {
            return Err(CollectiveError::MissingValue);
        }
        self.start(ctx, member, Op::Broadcast { root, value }, callback)
    }

    fn reduction(
        &self,
        ctx: &mut Ctx,
        member: Member,
        value: RedData,
        reducer: Reducer,
        delivery: Delivery,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        if let Delivery::Root(root) = delivery {
            check_root(&member, root)?;
        }
        let fold = Fold::new(reducer, &value)?;
        let op = Op::Reduce {
            fold,
            value,
            delivery,
        };
        self.start(ctx, member, op, callback)
    }

    /// Reduce every member's `value` with `reducer`; the root's `callback` gets the
    /// result (the others' callbacks get nothing).
    pub fn reduce<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        root: u32,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let d = Delivery::Root(root);
        self.reduction(ctx, member.into(), value.into_data(), reducer, d, callback)
    }

    /// Reduce every member's `value`; every member's `callback` gets the result.
    pub fn allreduce<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let d = Delivery::All;
        self.reduction(ctx, member.into(), value.into_data(), reducer, d, callback)
    }

    /// Every member's `callback` gets `()` once every member has started the barrier.
    pub fn barrier(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let (v, d) = (RedData::U64(Vec::new()), Delivery::Barrier);
        self.reduction(ctx, member.into(), v, Reducer::Sum, d, callback)
    }

    fn scan_op<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: Member,
        value: T,
        reducer: Reducer,
        exclusive: bool,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let value = value.into_data();
        let fold = Fold::new(reducer, &value)?;
        let op = Op::Scan {
            fold,
            value,
            exclusive,
        };
        self.start(ctx, member, op, callback)
    }

    /// Inclusive prefix: rank r's `callback` gets value_0 ⊕ .. ⊕ value_r.
    pub fn scan<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        self.scan_op(ctx, member.into(), value, reducer, false, callback)
    }

    /// Exclusive prefix: rank r gets value_0 ⊕ .. ⊕ value_{r-1}; rank 0 gets the
    /// reducer's identity shaped like its own value.
    pub fn exscan<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        self.scan_op(ctx, member.into(), value, reducer, true, callback)
    }

    /// Gather: the root's `callback` gets every member's vector concatenated in rank order.
    pub fn gather<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        root: u32,
        value: T,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let d = Delivery::Root(root);
        self.reduction(
            ctx,
            member.into(),
            value.into_data(),
            Reducer::Concat,
            d,
            callback,
        )
    }

    /// Gatherv: the root's `callback` gets a list with one item per rank, in rank order
    /// (any value, any length: `Encoded` values too).
    pub fn gatherv<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        root: u32,
        value: T,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let d = Delivery::Root(root);
        self.reduction(
            ctx,
            member.into(),
            value.into_data(),
            Reducer::Gather,
            d,
            callback,
        )
    }

    /// Allgather: every member's `callback` gets every member's vector concatenated in
    /// rank order, by `algorithm` (`Allgather::Auto` chooses, or the tuning profile
    /// does; every member must resolve to the same algorithm, so give `Auto` equal
    /// block lengths or pick one).
    pub fn allgather<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        value: T,
        algorithm: Allgather,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = member.into();
        let value = value.into_data();
        if algorithm == Allgather::Auto {
            return self.allgather_auto(ctx, member, value, callback);
        }
        let algorithm = algorithm.resolve(member.size(), member.has_roster())?;
        let pin = self.pin.or(Some(Impl::Default));
        if algorithm == Allgather::Tree {
            let fold = Fold::new(Reducer::Concat, &value)?;
            let op = Op::Reduce {
                fold,
                value,
                delivery: Delivery::All,
            };
            return self.start_as(ctx, member, op, callback, pin);
        }
        // Checks the value concatenates, as the tree allgather's fold does.
        Fold::new(Reducer::Concat, &value)?;
        let op = Op::Allgather { algorithm, value };
        self.start_as(ctx, member, op, callback, pin)
    }

    /// Scatter (`MPI_Scatter`, or `MPI_Scatterv` with blocks of different lengths):
    /// the root gives `blocks` (one per rank, `Some` at the root, `None` elsewhere) and
    /// every member's `callback` gets its block, down the section's tree.
    pub fn scatter<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        root: u32,
        blocks: Option<Vec<T>>,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = member.into();
        check_root(&member, root)?;
        let blocks = blocks.map(|b| b.into_iter().map(T::into_data).collect::<Vec<_>>());
        match &blocks {
            Some(b) => alltoall::check_blocks(b.len(), member.size())?,
            None if member.rank() == root => return Err(CollectiveError::MissingValue),
            None => {}
        }
        self.start(ctx, member, Op::Scatter { root, blocks }, callback)
    }

    /// Reduce-scatter (`MPI_Reduce_scatter`): every member gives a vector of the same
    /// length, `counts[j]` elements for rank j (the same `counts` at every member);
    /// every member's `callback` gets its block of the element-wise reduction.
    pub fn reduce_scatter<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        value: T,
        counts: Vec<u32>,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = member.into();
        let value = value.into_data();
        reduce_scatter::check(reducer, &value, &counts, member.size())?;
        let fold = Fold::new(reducer, &value)?;
        let op = Op::ReduceScatter {
            fold,
            value,
            counts,
        };
        self.start(ctx, member, op, callback)
    }

    /// Alltoall (`MPI_Alltoall`, or `MPI_Alltoallv` with blocks of different
    /// lengths): `blocks[j]` goes to rank j, and every member's `callback` gets the
    /// blocks addressed to it concatenated in the senders' rank order, by `algorithm`
    /// (`Alltoall::Auto` takes Bruck for blocks of at most
    /// [`alltoall::BRUCK_MAX_BLOCK_BYTES`], the pairwise exchange otherwise; every
    /// member must resolve to the same algorithm, so give `Auto` equal block lengths
    /// or pick one). Needs a roster.
    pub fn alltoall<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        member: impl Into<Member>,
        blocks: Vec<T>,
        algorithm: Alltoall,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = member.into();
        alltoall::check_blocks(blocks.len(), member.size())?;
        let blocks: Vec<RedData> = blocks.into_iter().map(T::into_data).collect();
        for block in &blocks {
            // Checks each block concatenates, as the result is their concatenation.
            Fold::new(Reducer::Concat, block)?;
        }
        let block_bytes = blocks.iter().map(value::approx_bytes).max().unwrap_or(0);
        let auto = algorithm == Alltoall::Auto;
        let algorithm = algorithm.resolve(block_bytes, member.has_roster())?;
        let op = Op::Alltoall { algorithm, blocks };
        if auto {
            // The tuning profile may choose another algorithm.
            return self.start(ctx, member, op, callback);
        }
        self.start_as(ctx, member, op, callback, self.pin.or(Some(Impl::Default)))
    }

    /// Allgather by the algorithm `Allgather::Auto` picks, or by the tuning profile's
    /// choice (an explicit algorithm in `allgather` is never overridden).
    fn allgather_auto(
        &self,
        ctx: &mut Ctx,
        member: Member,
        value: RedData,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let algorithm = Allgather::Auto.resolve(member.size(), member.has_roster())?;
        let fold = Fold::new(Reducer::Concat, &value)?;
        let op = if algorithm == Allgather::Tree {
            Op::Reduce {
                fold,
                value,
                delivery: Delivery::All,
            }
        } else {
            Op::Allgather { algorithm, value }
        };
        self.start(ctx, member, op, callback)
    }
}
