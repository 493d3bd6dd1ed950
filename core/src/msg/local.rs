//! A message value moved within a process, type-erased, with small values stored
//! inline: the one module of chorus-core outside the mpi layer that uses `unsafe`.
//!
//! Why: a boxed value costs its receiver, on another core, a second dependent cache
//! miss (the envelope, then the box it points to), about 90 ns per hop of a
//! ping-pong. A value of at most `INLINE_BYTES` (and alignment at most 8) travels
//! inside the envelope instead; a larger one is boxed, its box stored in the same
//! slot. Each message type gets a table of four functions, monomorphised for it,
//! that know which of the two it is.
//!
//! The invariant every `unsafe` block below relies on: a `LocalMsg`'s `slot` holds
//! exactly one initialised value of the type its `table` was made for, stored as
//! `Stored::<T>::INLINE` says (the value itself, or a `Box<T>`), until `drop` or
//! `take` moves it out, after which the `LocalMsg` is never used again.

use super::message::{AnyMsg, Message};
use std::any::TypeId;
use std::mem::{ManuallyDrop, MaybeUninit};

/// Bytes of a value stored inline; larger values are boxed.
pub(crate) const INLINE_BYTES: usize = 32;

/// Storage for one value, or the box of one: eight-byte aligned.
type Slot = MaybeUninit<[u64; INLINE_BYTES / 8]>;

/// What a `LocalMsg` knows of its value's type.
struct Table {
    type_id: fn() -> TypeId,
    /// The value, as the trait the encoders use.
    view: unsafe fn(&Slot) -> &dyn AnyMsg,
    /// A copy of the value, in a new slot.
    clone: unsafe fn(&Slot) -> Slot,
    /// Drop the value in place.
    drop: unsafe fn(&mut Slot),
}

/// How values of type `T` are stored, and their table.
struct Stored<T>(std::marker::PhantomData<T>);

impl<T: Message> Stored<T> {
    /// True if a `T` lives in the slot itself.
    const INLINE: bool = std::mem::size_of::<T>() <= std::mem::size_of::<Slot>()
        && std::mem::align_of::<T>() <= std::mem::align_of::<Slot>();

    const TABLE: Table = Table {
        type_id: TypeId::of::<T>,
        view: Self::view,
        clone: Self::clone,
        drop: Self::drop,
    };

    fn store(value: T) -> Slot {
        let mut slot = Slot::uninit();
        if Self::INLINE {
            // SAFETY: `INLINE` checked that a `T` fits the slot's size and alignment;
            // the slot is fresh, so nothing is overwritten.
            unsafe { slot.as_mut_ptr().cast::<T>().write(value) };
        } else {
            // SAFETY: a `Box<T>` (T: Sized) is one pointer, which fits the slot.
            unsafe { slot.as_mut_ptr().cast::<Box<T>>().write(Box::new(value)) };
        }
        slot
    }

    /// # Safety
    /// `slot` holds a `T` stored by `store` (the module's invariant).
    unsafe fn value(slot: &Slot) -> &T {
        if Self::INLINE {
            // SAFETY: the caller's guarantee: an initialised `T` is at the slot's start.
            unsafe { &*slot.as_ptr().cast::<T>() }
        } else {
            // SAFETY: the caller's guarantee: a live `Box<T>` is at the slot's start.
            unsafe { &*slot.as_ptr().cast::<Box<T>>() }
        }
    }

    /// # Safety
    /// As `value`.
    unsafe fn view(slot: &Slot) -> &dyn AnyMsg {
        // SAFETY: passed on from the caller.
        unsafe { Self::value(slot) }
    }

    /// # Safety
    /// As `value`.
    unsafe fn clone(slot: &Slot) -> Slot {
        // SAFETY: passed on from the caller.
        Self::store(unsafe { Self::value(slot) }.clone())
    }

    /// # Safety
    /// `slot` holds a `T` stored by `store`, which is not used again.
    unsafe fn drop(slot: &mut Slot) {
        // SAFETY: the caller's guarantee; the value (or its box) is dropped once.
        unsafe { Self::take(slot) };
    }

    /// # Safety
    /// As `drop`: the value is moved out, and the slot must not be read again.
    unsafe fn take(slot: &mut Slot) -> T {
        if Self::INLINE {
            // SAFETY: the caller's guarantee; reading moves the value out.
            unsafe { slot.as_ptr().cast::<T>().read() }
        } else {
            // SAFETY: the caller's guarantee; reading moves the box out.
            *unsafe { slot.as_ptr().cast::<Box<T>>().read() }
        }
    }
}

/// A message value of a type known only at run time, stored inline when small.
pub struct LocalMsg {
    slot: Slot,
    table: &'static Table,
}

// SAFETY: a `LocalMsg` owns one value of a `Message` type, and `Message: Send`.
unsafe impl Send for LocalMsg {}

impl LocalMsg {
    /// Erase `value`'s type.
    #[inline]
    pub fn new<T: Message>(value: T) -> Self {
        LocalMsg {
            slot: Stored::<T>::store(value),
            table: &Stored::<T>::TABLE,
        }
    }

    /// True if the value is a `T`.
    #[inline]
    pub fn is<T: Message>(&self) -> bool {
        (self.table.type_id)() == TypeId::of::<T>()
    }

    /// The value, if it is a `T`; the message back otherwise.
    #[inline]
    pub fn take<T: Message>(self) -> Result<T, Self> {
        if !self.is::<T>() {
            return Err(self);
        }
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the table is `T`'s, so the slot holds a `T` (the invariant);
        // `ManuallyDrop` keeps `drop` from running on the moved-out slot.
        Ok(unsafe { Stored::<T>::take(&mut this.slot) })
    }

    /// The value as the trait that encodes it.
    pub fn msg(&self) -> &dyn AnyMsg {
        // SAFETY: the table was made for the type the slot holds (the invariant).
        unsafe { (self.table.view)(&self.slot) }
    }
}

impl Clone for LocalMsg {
    fn clone(&self) -> Self {
        LocalMsg {
            // SAFETY: the table was made for the type the slot holds (the invariant).
            slot: unsafe { (self.table.clone)(&self.slot) },
            table: self.table,
        }
    }
}

impl Drop for LocalMsg {
    fn drop(&mut self) {
        // SAFETY: the slot holds the table's type (the invariant), and a dropped
        // `LocalMsg` is never used again.
        unsafe { (self.table.drop)(&mut self.slot) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its live copies, so a test sees every value dropped exactly once.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Counted<P> {
        #[serde(skip)]
        live: Arc<AtomicUsize>,
        pad: P,
    }

    impl<P> Counted<P> {
        fn new(live: &Arc<AtomicUsize>, pad: P) -> Self {
            live.fetch_add(1, Ordering::Relaxed);
            Counted {
                live: live.clone(),
                pad,
            }
        }
    }

    impl<P: Clone> Clone for Counted<P> {
        fn clone(&self) -> Self {
            Counted::new(&self.live, self.pad.clone())
        }
    }

    impl<P> Drop for Counted<P> {
        fn drop(&mut self) {
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn round_trip<P: Message + PartialEq + std::fmt::Debug>(pad: P, inline: bool) {
        assert_eq!(Stored::<Counted<P>>::INLINE, inline);
        let live = Arc::new(AtomicUsize::new(0));
        let m = LocalMsg::new(Counted::new(&live, pad.clone()));
        let copy = m.clone();
        assert_eq!(live.load(Ordering::Relaxed), 2);
        assert!(m.is::<Counted<P>>() && !m.is::<u8>());
        assert_eq!(m.msg().type_name(), std::any::type_name::<Counted<P>>());
        let m = m.take::<u8>().expect_err("not a u8");
        let value = m.take::<Counted<P>>().ok().expect("the value");
        assert_eq!(value.pad, pad);
        drop(value);
        assert_eq!(live.load(Ordering::Relaxed), 1, "taken and dropped once");
        drop(copy);
        assert_eq!(live.load(Ordering::Relaxed), 0, "the copy dropped in place");
    }

    #[test]
    fn small_values_live_inline_and_large_ones_boxed_each_dropped_once() {
        round_trip(7u64, true);
        round_trip((1u64, 2u64), true);
        round_trip([9u64; 16], false);
        round_trip(vec![String::from("heap"); 3], true);
        round_trip(String::from("moved by value"), true);
    }

    #[test]
    fn zero_sized_and_over_aligned_values_round_trip() {
        let unit = LocalMsg::new(());
        assert!(unit.clone().take::<()>().is_ok());
        assert!(unit.take::<()>().is_ok());
        let big = LocalMsg::new(u128::MAX);
        assert_eq!(big.clone().take::<u128>().ok(), Some(u128::MAX));
    }

    #[test]
    fn the_value_encodes_as_itself() {
        let m = LocalMsg::new((3u32, String::from("abc")));
        let expected = bincode::serialize(&(3u32, String::from("abc"))).expect("encodes");
        assert_eq!(m.msg().encode().expect("encodes"), expected);
        assert_eq!(m.msg().encoded_len(), expected.len() as u64);
    }
}
