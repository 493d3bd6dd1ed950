//! Where an entry method's message goes: the destinations the proxy methods that
//! `#[chare]` generates send to and build callbacks for.
//!
//! A [`Target`] is a singleton chare, a whole group or array (a send is a broadcast,
//! as in Charm++'s `groupProxy.entry()`), one group member ([`GroupProxy::at`]) or
//! array element ([`ArrayProxy::at`], Charm++'s `arrayProxy[i].entry()`), or
//! [`This`]: the running chare's own chare, group or array (`thisProxy`).

use crate::api::chare::Chare;
use crate::api::ctx::Ctx;
use crate::api::proxy::{ArrayProxy, ChareProxy, GroupProxy};
use crate::api::registry::Entry;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::Current;
use crate::msg::array::ArrayIndex;
use crate::msg::callback::Callback;
use crate::msg::envelope::Dest;
use crate::msg::payload::Payload;
use crate::msg::reduction::Reducible;
use std::marker::PhantomData;

/// A destination of chare type `C`'s messages and callbacks.
pub trait Target<C: Chare> {
    /// Send `msg` there (to every member of a whole group or array).
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg);

    /// A callback delivering to `entry` there.
    fn callback<T: Reducible>(&self, ctx: &mut Ctx, entry: Entry<C, T>) -> Callback;
}

impl<C: Chare> Target<C> for ChareProxy<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.send(ctx, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::chare(self, entry)
    }
}

impl<C: Chare> Target<C> for GroupProxy<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast(ctx, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::group_all(self, entry)
    }
}

impl<C: Chare, I: ArrayIndex> Target<C> for ArrayProxy<C, I> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast(ctx, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::array_all(self, entry)
    }
}

/// One member of a group: `group.at(pe)`.
pub struct MemberProxy<C> {
    group: GroupProxy<C>,
    pe: Pe,
}

impl<C> GroupProxy<C> {
    /// The member on `pe`, for the entry methods `#[chare]` generates.
    pub fn at(&self, pe: Pe) -> MemberProxy<C> {
        MemberProxy { group: *self, pe }
    }
}

impl<C: Chare> Target<C> for MemberProxy<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.group.send(ctx, self.pe, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::group_member(&self.group, self.pe, entry)
    }
}

/// One element of an array: `array.at(index)`.
pub struct ElementProxy<C, I> {
    array: ArrayProxy<C, I>,
    index: I,
}

impl<C, I> ArrayProxy<C, I> {
    /// The element at `index`, for the entry methods `#[chare]` generates.
    pub fn at(&self, index: I) -> ElementProxy<C, I> {
        ElementProxy {
            array: *self,
            index,
        }
    }
}

impl<C: Chare, I: ArrayIndex> Target<C> for ElementProxy<C, I> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.array.send(ctx, &self.index, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::array_element(&self.array, &self.index, entry)
    }
}

/// The running chare's own singleton chare, whole group, nodegroup or array
/// (Charm++'s `thisProxy`): a send from a group member or array element is a broadcast.
pub struct This<C>(PhantomData<fn() -> C>);

impl<C> This<C> {
    /// The running chare's chare, group or array.
    pub fn new() -> Self {
        This(PhantomData)
    }
}

impl<C> Default for This<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Chare> This<C> {
    /// Where the running chare lives, or an error reported (a call from `main`).
    fn current(ctx: &mut Ctx) -> Option<Current> {
        match ctx.core.current() {
            Current::Main => {
                let pe = ctx.my_pe();
                ctx.core.fail(RuntimeError::BadInput {
                    pe,
                    what: format!(
                        "This::<{}> used from the main function, which is no chare: use a proxy",
                        std::any::type_name::<C>()
                    ),
                });
                None
            }
            current => Some(current.clone()),
        }
    }
}

impl<C: Chare> Target<C> for This<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        let opts = Default::default();
        match Self::current(ctx) {
            Some(Current::Chare(id)) => ctx.core.send_typed(ctx.core.chare_pe(id), id, msg, opts),
            Some(Current::Group(coll)) if ctx.core.is_node_group(coll) => {
                ctx.core.node_broadcast(coll, Payload::new(msg), opts)
            }
            Some(Current::Group(coll)) => {
                ctx.core
                    .broadcast(Dest::Group(coll), Payload::new(msg), opts)
            }
            Some(Current::Element(coll, _)) => {
                ctx.core
                    .broadcast(Dest::Array(coll), Payload::new(msg), opts)
            }
            Some(Current::Main) | None => {}
        }
    }

    fn callback<T: Reducible>(&self, ctx: &mut Ctx, entry: Entry<C, T>) -> Callback {
        let entry = entry.id;
        match Self::current(ctx) {
            Some(Current::Chare(id)) => Callback::Chare { id, entry },
            Some(Current::Group(coll)) if ctx.core.is_node_group(coll) => {
                Callback::NodeGroupAll { coll, entry }
            }
            Some(Current::Group(coll)) => Callback::GroupAll { coll, entry },
            Some(Current::Element(coll, _)) => Callback::ArrayAll { coll, entry },
            Some(Current::Main) | None => Callback::Ignore,
        }
    }
}

/// What an entry method declared with `#[chare]` may return: nothing, or a
/// `Result<(), E>` whose error is reported under the job's `--on-error` policy
/// (as `Ctx::fail` reports it, naming the entry).
#[diagnostic::on_unimplemented(
    message = "an #[entry] method returns nothing or a Result<(), E> with E: Display, not `{Self}`",
    label = "returned here; send results on with a callback or a proxy"
)]
pub trait EntryResult {
    /// Report an error, if this is one, for the entry `entry`.
    fn report(self, ctx: &mut Ctx, entry: &str);
}

impl EntryResult for () {
    fn report(self, _: &mut Ctx, _: &str) {}
}

impl<E: std::fmt::Display> EntryResult for Result<(), E> {
    fn report(self, ctx: &mut Ctx, entry: &str) {
        if let Err(e) = self {
            ctx.fail(entry, e);
        }
    }
}

/// The callback to the entry of `C` taking a `T` registered as `name`, at `target`
/// (what `#[chare]`'s `<entry>_callback` methods call); when no such entry is
/// registered, the error is reported and the callback ignores what it gets.
#[doc(hidden)]
pub fn named_callback<C: Chare, T: Reducible>(
    target: &impl Target<C>,
    ctx: &mut Ctx,
    name: &str,
) -> Callback {
    match ctx.find_entry::<C, T>(name) {
        Some(entry) => target.callback(ctx, entry),
        None => {
            let pe = ctx.my_pe();
            ctx.core.fail(RuntimeError::EntryNotRegistered {
                pe,
                name: name.to_string(),
                chare: std::any::type_name::<C>(),
                takes: std::any::type_name::<T>(),
            });
            Callback::Ignore
        }
    }
}
