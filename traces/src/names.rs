//! The name table shared by every PE's recorder.

use std::collections::HashMap;
use std::sync::Mutex;

/// Index of an interned name in [`Names`].
pub type NameId = u32;

/// Interning table for entry, span, event and phase names, shared by all PEs.
///
/// Records carry a 4-byte [`NameId`] instead of a string so they stay 32 bytes; the
/// strings are only looked up again when the Chrome file is written. Interning takes
/// a lock, so the runtime should intern each name once (at registration) and keep the
/// id, not intern on every event.
#[derive(Debug, Default)]
pub struct Names {
    inner: Mutex<NamesInner>,
}

#[derive(Debug, Default)]
struct NamesInner {
    list: Vec<String>,
    index: HashMap<String, NameId>,
}

impl Names {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, adding it if it is new; the same string always gets the same id.
    pub fn intern(&self, name: &str) -> NameId {
        let mut inner = self.lock();
        if let Some(&id) = inner.index.get(name) {
            return id;
        }
        let id = NameId::try_from(inner.list.len()).expect("more than 2^32 distinct names");
        inner.list.push(name.to_owned());
        inner.index.insert(name.to_owned(), id);
        id
    }

    /// The string behind `id`, or `None` if it was never interned here.
    pub fn get(&self, id: NameId) -> Option<String> {
        self.lock().list.get(id as usize).cloned()
    }

    /// How many names are interned.
    pub fn len(&self) -> usize {
        self.lock().list.len()
    }

    /// Whether no name is interned yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every name, indexed by id (what the writer uses, so it locks once).
    pub fn snapshot(&self) -> Vec<String> {
        self.lock().list.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, NamesInner> {
        // A panic while holding this lock cannot leave the table inconsistent (push and
        // insert are the last steps), so a poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_same_id() {
        let n = Names::new();
        let a = n.intern("A::go");
        let b = n.intern("B::go");
        assert_ne!(a, b);
        assert_eq!(n.intern("A::go"), a);
        assert_eq!(n.get(b).as_deref(), Some("B::go"));
        assert_eq!(n.len(), 2);
        assert_eq!(n.get(7), None);
    }
}
