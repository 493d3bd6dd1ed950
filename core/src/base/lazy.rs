//! A part of a struct built on first use: the sim layer holds 10^6 PEs and more,
//! most of which never use their quiescence, flow-control, balancing or checkpoint
//! state, and each then keeps a null pointer instead of the whole part.

/// A `T` boxed on first mutable use.
#[derive(Debug)]
pub(crate) struct Lazy<T>(Option<Box<T>>);

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Lazy(None)
    }
}

impl<T> From<T> for Lazy<T> {
    fn from(value: T) -> Self {
        Lazy(Some(Box::new(value)))
    }
}

impl<T: Default> Lazy<T> {
    /// The value, built now if it never was.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<T> Lazy<T> {
    /// The value, if it was ever built.
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_deref()
    }

    /// The value to change, if it was ever built (a use that finds nothing to do in
    /// a default value builds none).
    pub(crate) fn built_mut(&mut self) -> Option<&mut T> {
        self.0.as_deref_mut()
    }

    /// The value, if it was ever built, leaving none.
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take().map(|b| *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_on_first_mutable_use_only() {
        let mut l: Lazy<Vec<u8>> = Lazy::default();
        assert!(l.get().is_none() && l.built_mut().is_none());
        l.get_mut().push(7);
        assert_eq!(l.get(), Some(&vec![7]));
        l.built_mut().expect("built").push(8);
        assert_eq!(l.get_mut().as_slice(), &[7, 8]);
        assert_eq!(l.take(), Some(vec![7, 8]));
        assert!(l.get().is_none());
        assert_eq!(std::mem::size_of::<Lazy<[u64; 16]>>(), 8, "a pointer");
    }
}
