//! Reductions: contributions made during handlers, partial results climbing the
//! spanning tree, and completion at the root.

use super::{LocalContribution, Members, Origin, PeRuntime};
use crate::base::error::RuntimeError;
use crate::base::ids::CollectionId;
use crate::msg::callback::Callback;
use crate::msg::envelope::SendOpts;
use crate::msg::kind::reduce::{Contribute, HomeContribute, ReduceMsg};
use crate::msg::reduction::{self, Partial, Reducer};

/// Per-collection reduction progress on this PE.
pub(super) struct PendingReduction {
    pub(super) reducer: Reducer,
    pub(super) callback: Callback,
    pub(super) partial: Option<Partial>,
    pub(super) local: u64,
    pub(super) children: usize,
}

/// Reductions in progress on this PE, by sequence number. Rarely more than a few, so
/// a sorted vector, freed when empty: idle PEs (10^5 and more on the sim layer) keep
/// no memory for them.
#[derive(Default)]
pub(super) struct Pending(Vec<(u64, PendingReduction)>);

impl Pending {
    pub(super) fn seqs(&self) -> Vec<u64> {
        self.0.iter().map(|(s, _)| *s).collect()
    }

    pub(super) fn get(&self, seq: u64) -> Option<&PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        Some(&self.0[i].1)
    }

    pub(super) fn get_mut(&mut self, seq: u64) -> Option<&mut PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        Some(&mut self.0[i].1)
    }

    pub(super) fn get_or_insert_with(
        &mut self,
        seq: u64,
        make: impl FnOnce() -> PendingReduction,
    ) -> &mut PendingReduction {
        let i = match self.0.binary_search_by_key(&seq, |(s, _)| *s) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (seq, make()));
                i
            }
        };
        &mut self.0[i].1
    }

    pub(super) fn remove(&mut self, seq: u64) -> Option<PendingReduction> {
        let i = self.0.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        let (_, p) = self.0.remove(i);
        if self.0.is_empty() {
            self.0 = Vec::new();
        }
        Some(p)
    }
}

/// Whose share of a reduction a partial result is.
#[derive(Debug, Clone, Copy)]
pub(super) enum Share {
    /// A member this PE counts: one of its own, or an element homed here and away.
    Member,
    /// A child's whole subtree.
    Subtree,
}

impl PeRuntime {
    pub(super) fn apply_deferred(&mut self) {
        while !self.core.deferred.is_empty() {
            let batch = std::mem::take(&mut self.core.deferred);
            for c in batch {
                self.local_contribution(c);
            }
        }
    }

    pub(super) fn local_contribution(&mut self, lc: LocalContribution) {
        let mut away_home = None;
        let Some(c) = self.colls.get_mut(&lc.coll) else {
            return;
        };
        let seq = match (&mut c.members, &lc.member) {
            (Members::Group { contributed, .. }, None) => {
                *contributed += 1;
                *contributed - 1
            }
            (Members::Array { elements, .. }, Some(key)) => match elements.get_mut(key) {
                Some(e) => {
                    e.contributed += 1;
                    if e.home != self.core.me {
                        away_home = Some(e.home);
                    }
                    e.contributed - 1
                }
                None => return,
            },
            _ => return,
        };
        if let Err(what) = reduction::check_value(lc.reducer, &lc.value) {
            return self.core.fail(RuntimeError::ReducerMismatch {
                coll: lc.coll,
                seq,
                what,
            });
        }
        let partial = reduction::partial_of(lc.reducer, lc.key, lc.value);
        if let Some(home) = away_home {
            // The home counts its elements in reductions wherever they are.
            let kind = HomeContribute {
                coll: lc.coll,
                seq,
                reducer: lc.reducer,
                body: Box::new((lc.callback, partial)),
            };
            let env = self.core.envelope(kind, SendOpts::default());
            return self.core.post(home, env);
        }
        self.add_partial(
            lc.coll,
            seq,
            lc.reducer,
            lc.callback,
            partial,
            Share::Member,
        );
    }

    /// Run a contribution from another PE.
    pub(super) fn on_reduce(&mut self, m: ReduceMsg, _from: Origin) {
        let (coll, seq, reducer, body, share) = match m {
            ReduceMsg::Contribute(Contribute {
                coll,
                seq,
                reducer,
                body,
            }) => (coll, seq, reducer, body, Share::Subtree),
            // The home counts an element away as one of its own.
            ReduceMsg::HomeContribute(HomeContribute {
                coll,
                seq,
                reducer,
                body,
            }) => (coll, seq, reducer, body, Share::Member),
        };
        let (callback, partial) = *body;
        self.add_partial(coll, seq, reducer, callback, partial, share);
    }

    /// Merge a member's contribution or a child's partial into reduction `seq`, and
    /// finish the reduction here if it can.
    pub(super) fn add_partial(
        &mut self,
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        callback: Callback,
        partial: Partial,
        share: Share,
    ) {
        if self.merge(coll, seq, reducer, callback, partial) {
            if let Some(p) = self
                .colls
                .get_mut(&coll)
                .and_then(|c| c.reductions.get_mut(seq))
            {
                match share {
                    Share::Member => p.local += 1,
                    Share::Subtree => p.children += 1,
                }
            }
            self.try_complete(coll, seq);
        }
    }

    /// Merge a partial into reduction `seq`; false (with the error reported) on mismatch.
    pub(super) fn merge(
        &mut self,
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        callback: Callback,
        partial: Partial,
    ) -> bool {
        let reg = self.core.reg.clone();
        let Some(c) = self.colls.get_mut(&coll) else {
            return false;
        };
        let pending = c.reductions.get_or_insert_with(seq, || PendingReduction {
            reducer,
            callback,
            partial: None,
            local: 0,
            children: 0,
        });
        if pending.reducer != reducer {
            let what = format!(
                "members used different reducers ({:?} and {:?})",
                pending.reducer, reducer
            );
            self.core
                .fail(RuntimeError::ReducerMismatch { coll, seq, what });
            return false;
        }
        let merged = match pending.partial.take() {
            None => Ok(partial),
            Some(acc) => {
                reduction::merge_partials(reducer, acc, partial, &|id| reg.custom_reducer(id))
            }
        };
        match merged {
            Ok(p) => {
                pending.partial = Some(p);
                true
            }
            Err(what) => {
                self.core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what });
                false
            }
        }
    }

    pub(super) fn try_complete(&mut self, coll: CollectionId, seq: u64) {
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let parent = match c.members {
            Members::Group { per_node: true, .. } => self.core.node_parent(0),
            _ => self.core.tree_parent(),
        };
        let Some(p) = c.reductions.get(seq) else {
            return;
        };
        if !c.census.complete(seq, p.local, p.children) {
            return;
        }
        let Some(p) = c.reductions.remove(seq) else {
            return;
        };
        if let Members::Array { seq_floor, .. } = &mut c.members {
            *seq_floor = (*seq_floor).max(seq + 1);
        }
        let Some(partial) = p.partial else { return };
        match parent {
            Some(parent) => {
                let kind = Contribute {
                    coll,
                    seq,
                    reducer: p.reducer,
                    body: Box::new((p.callback, partial)),
                };
                let env = self.core.envelope(kind, SendOpts::default());
                self.core.post(parent, env);
            }
            None => match reduction::finish(p.reducer, partial) {
                Ok(value) => self.core.fire(&p.callback, value),
                Err(what) => self
                    .core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what }),
            },
        }
    }
}
