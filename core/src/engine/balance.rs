//! Load balancing of chare arrays on one PE: elements that called `at_sync` and wait
//! for their `resume_from_sync`.

use super::{guarded, Current, Members, PeCore, PeRuntime};
use crate::base::error::SyncError;
use crate::base::hash::HashSet;
use crate::base::ids::{CollectionId, IndexKey};
use crate::msg::array::ElemAddr;

/// Elements of this PE in a balancing step.
#[derive(Default)]
pub(crate) struct Syncs {
    /// `at_sync` calls of the running handler, taken once it returns.
    asked: Vec<(CollectionId, ElemAddr)>,
    /// Elements here that called `at_sync` and have not been resumed; at most one
    /// entry per element on this PE.
    waiting: HashSet<(CollectionId, IndexKey)>,
}

impl PeCore {
    /// Record the running element's `at_sync`, acted on once its handler returns.
    pub(crate) fn at_sync(&mut self) -> Result<(), SyncError> {
        let (coll, addr) = match &self.current {
            Current::Element(coll, addr) => (*coll, addr.clone()),
            Current::Main => return Err(SyncError::NotAnElement("the main function".into())),
            Current::Chare(id) => return Err(SyncError::NotAnElement(id.to_string())),
            Current::Group(c) => {
                return Err(SyncError::NotAnElement(format!("a member of group {c}")))
            }
        };
        if let Err(e) = self.migrator(coll) {
            let chare = match e {
                crate::base::error::MigrateError::NotMigratable { chare } => chare,
                other => other.to_string(),
            };
            return Err(SyncError::NotMigratable { chare });
        }
        if !self.syncs.waiting.insert((coll, addr.key.clone())) {
            return Err(SyncError::Twice);
        }
        self.syncs.asked.push((coll, addr));
        Ok(())
    }
}

impl PeRuntime {
    /// Act on the `at_sync` calls of the handler that just ran.
    pub(super) fn apply_syncs(&mut self) {
        while !self.core.syncs.asked.is_empty() {
            for (coll, addr) in std::mem::take(&mut self.core.syncs.asked) {
                self.resume(coll, addr);
            }
        }
    }

    /// Run an element's `resume_from_sync` here; an element no longer here has
    /// nothing to resume.
    fn resume(&mut self, coll: CollectionId, addr: ElemAddr) {
        self.core.syncs.waiting.remove(&(coll, addr.key.clone()));
        let Ok((m, name)) = self.core.migrator(coll) else {
            return;
        };
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return;
        };
        guarded(&mut self.core, Current::Element(coll, addr), &name, |ctx| {
            (m.resume)(e.chare.as_mut(), ctx);
            Ok(())
        });
    }
}
