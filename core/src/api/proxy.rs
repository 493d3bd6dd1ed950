//! Typed handles for sending to chares, groups and arrays.

use crate::api::chare::Chare;
use crate::api::ctx::Ctx;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::array::{ArrayIndex, ElemAddr};
use crate::msg::envelope::{Dest, GroupMember};
use crate::msg::payload::Payload;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

pub use crate::msg::envelope::SendOpts;

macro_rules! proxy_common {
    ($name:ident <$($g:ident),*>) => {
        impl<$($g),*> Clone for $name<$($g),*> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($g),*> Copy for $name<$($g),*> {}
        impl<$($g),*> PartialEq for $name<$($g),*> {
            fn eq(&self, other: &Self) -> bool {
                self.key() == other.key()
            }
        }
        impl<$($g),*> Eq for $name<$($g),*> {}
        impl<$($g),*> std::fmt::Debug for $name<$($g),*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.key())
            }
        }
    };
}

/// Handle to a singleton chare.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ChareProxy<C> {
    pub(crate) id: ChareId,
    #[serde(skip)]
    _p: PhantomData<fn() -> C>,
}

impl<C> ChareProxy<C> {
    pub(crate) fn new(id: ChareId) -> Self {
        ChareProxy {
            id,
            _p: PhantomData,
        }
    }
    fn key(&self) -> ChareId {
        self.id
    }
    /// PE the chare was created on (a restart on fewer PEs places it on this PE
    /// modulo the new count, where its proxies then send).
    pub fn pe(&self) -> Pe {
        self.id.pe
    }
}
proxy_common!(ChareProxy<C>);

impl<C: Chare> ChareProxy<C> {
    /// Send a message to the chare.
    pub fn send(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.send_with(ctx, msg, SendOpts::default());
    }

    /// Send with a priority or expedited.
    pub fn send_with(&self, ctx: &mut Ctx, msg: C::Msg, opts: SendOpts) {
        ctx.core
            .send_typed(ctx.core.chare_pe(self.id), self.id, msg, opts);
    }
}

/// Handle to a group: one member on every PE.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct GroupProxy<C> {
    pub(crate) coll: CollectionId,
    #[serde(skip)]
    _p: PhantomData<fn() -> C>,
}

impl<C> GroupProxy<C> {
    pub(crate) fn new(coll: CollectionId) -> Self {
        GroupProxy {
            coll,
            _p: PhantomData,
        }
    }
    fn key(&self) -> CollectionId {
        self.coll
    }
    /// The group's identity.
    pub fn id(&self) -> CollectionId {
        self.coll
    }
}
proxy_common!(GroupProxy<C>);

impl<C: Chare> GroupProxy<C> {
    /// Send to the member on `pe`.
    pub fn send(&self, ctx: &mut Ctx, pe: Pe, msg: C::Msg) {
        self.send_with(ctx, pe, msg, SendOpts::default());
    }

    /// Send to the member on `pe` with options.
    pub fn send_with(&self, ctx: &mut Ctx, pe: Pe, msg: C::Msg, opts: SendOpts) {
        ctx.core.send_typed(pe, GroupMember(self.coll), msg, opts);
    }

    /// Send to every member, along a spanning tree of the PEs.
    pub fn broadcast(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast_with(ctx, msg, SendOpts::default());
    }

    /// Broadcast with options.
    pub fn broadcast_with(&self, ctx: &mut Ctx, msg: C::Msg, opts: SendOpts) {
        ctx.core
            .broadcast(Dest::Group(self.coll), Payload::new(msg), opts);
    }
}

/// Handle to a chare array with index type `I`.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ArrayProxy<C, I> {
    pub(crate) coll: CollectionId,
    #[serde(skip)]
    _p: PhantomData<fn() -> (C, I)>,
}

impl<C, I> ArrayProxy<C, I> {
    pub(crate) fn new(coll: CollectionId) -> Self {
        ArrayProxy {
            coll,
            _p: PhantomData,
        }
    }
    fn key(&self) -> CollectionId {
        self.coll
    }
    /// The array's identity.
    pub fn id(&self) -> CollectionId {
        self.coll
    }
}
proxy_common!(ArrayProxy<C, I>);

impl<C: Chare, I: ArrayIndex> ArrayProxy<C, I> {
    /// Send to the element at `index`.
    pub fn send(&self, ctx: &mut Ctx, index: &I, msg: C::Msg) {
        self.send_with(ctx, index, msg, SendOpts::default());
    }

    /// Send to the element at `index` with options.
    pub fn send_with(&self, ctx: &mut Ctx, index: &I, msg: C::Msg, opts: SendOpts) {
        let addr = ElemAddr::of(index);
        // The in-memory size stands for the bytes: encoding only to count them
        // would cost more than the send.
        let bytes = std::mem::size_of::<C::Msg>() as u64;
        ctx.core.note_element_send(self.coll, &addr.key, bytes);
        if let Some((pe, dest)) = ctx.core.route_element(self.coll, addr) {
            ctx.core.send_typed(pe, dest, msg, opts);
        }
    }

    /// Send to every element.
    pub fn broadcast(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast_with(ctx, msg, SendOpts::default());
    }

    /// Broadcast with options.
    pub fn broadcast_with(&self, ctx: &mut Ctx, msg: C::Msg, opts: SendOpts) {
        ctx.core
            .broadcast(Dest::Array(self.coll), Payload::new(msg), opts);
    }

    /// Create a new element at `index` on the PE the array's map chooses. Reductions
    /// count it once `done_inserting` has been called and has reached every PE.
    /// Called by an element inside a balancing step, the insert (and its
    /// `done_inserting`) waits for the step's resume: the new element joins from the
    /// next step.
    pub fn insert(&self, ctx: &mut Ctx, index: I, init: C::Init) {
        ctx.core
            .insert_element(self.coll, ElemAddr::of(&index), Payload::new(init));
    }

    /// Delete the element at `index` wherever it is (see `Ctx::destroy_me`); a
    /// second delete, or one that finds it in a balancing step, is reported as
    /// `RuntimeError::Destroy` under the job's `--on-error` policy.
    pub fn destroy(&self, ctx: &mut Ctx, index: &I) {
        ctx.core.destroy_element(self.coll, ElemAddr::of(index));
    }

    /// Close a round of insertions: every PE recounts its elements for reductions.
    pub fn done_inserting(&self, ctx: &mut Ctx) {
        ctx.core.done_inserting(self.coll);
    }
}
