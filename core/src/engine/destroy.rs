//! Deleting array elements (`Ctx::destroy_me`, `ArrayProxy::destroy`), as Charm++'s
//! `ckDestroy` does: the element goes, messages that reach it later are counted
//! and reported, and reductions over the array count only the elements still alive.
//!
//! How reductions stay right: each element carries how many reductions it has
//! contributed to. When it is deleted its home PE keeps that count (a stand-in,
//! `Census::deleted`), and counts the stand-in as contributed to every later
//! reduction, so a reduction an element took part in before it went still waits
//! for its contribution, and later ones do not. A PE whose whole subtree is
//! deleted would send its parent nothing again: it tells the parent once
//! (`Emptied`, with the first reduction its subtree no longer contributes to),
//! and the parent stops waiting for it from that reduction on.
//!
//! Messages: the PE an element left when it was deleted keeps a forwarding pointer
//! to its home, and the home drops what arrives for a deleted index (counted
//! processed, as quiescence needs, and reported in `PeReport::dropped_to_deleted`).

use super::migration::element_name;
use super::{Census, Members, Origin, PeCore, PeRuntime, StandIn, Via};
use crate::base::error::{DestroyError, RuntimeError};
use crate::base::hash::HashMap;
use crate::base::ids::{CollectionId, IndexKey, Pe};
use crate::engine::ledger::Dropped;
use crate::engine::location::{Loc, Route};
use crate::msg::array::ElemAddr;
use crate::msg::envelope::{Dest, SendOpts};
use crate::msg::kind::create::Emptied;
use crate::msg::kind::migrate::{Deleted, Destroy};

impl Census {
    /// The stand-ins of the deleted elements homed here.
    fn stand_ins(&self) -> impl Iterator<Item = &StandIn> {
        self.deleted.get().into_iter().flat_map(HashMap::values)
    }

    /// True if the element `key` homed here was deleted.
    pub(super) fn is_deleted(&self, key: &IndexKey) -> bool {
        self.deleted.get().is_some_and(|d| d.contains_key(key))
    }

    /// Children whose whole subtree was deleted: (child, epoch, first reduction).
    fn emptied(&self) -> impl Iterator<Item = &(Pe, u32, u64)> {
        self.rare.get().into_iter().flat_map(|r| &r.emptied)
    }

    /// True once reduction `seq` has every share it waits for: `members` of this
    /// PE's own and `children` subtrees, with deleted elements and deleted subtrees
    /// standing in from the reduction they stopped at.
    pub(super) fn complete(&self, seq: u64, members: u64, children: usize) -> bool {
        let stand_ins = (self.stand_ins()).filter(|s| s.contributed <= seq).count() as u64;
        let quiet = self
            .emptied()
            .filter(|(ch, e, from)| {
                *e == self.epoch && *from <= seq && self.active_children.contains(ch)
            })
            .count();
        self.done
            && members + stand_ins >= self.local
            && children + quiet >= self.active_children.len()
    }

    /// The first reduction nothing below this PE contributes to, if every member
    /// below it is deleted and it has not said so in this epoch.
    fn emptied_from(&self, live_here: bool) -> Option<u64> {
        let told = self.rare.get().and_then(|r| r.told_empty);
        if !self.done || live_here || told == Some(self.epoch) {
            return None;
        }
        let mut from = self.stand_ins().map(|s| s.contributed).max();
        for ch in &self.active_children {
            let e = self.emptied().find(|(c, e, _)| c == ch && *e == self.epoch);
            from = from.max(Some(e?.2));
        }
        from
    }
}

impl PeCore {
    /// Record the running element's request to be deleted once its handler returns.
    pub(crate) fn request_destroy(&mut self) -> Result<(), DestroyError> {
        let (coll, addr) = self.running_element().map_err(DestroyError::NotAnElement)?;
        let moving = self.moves.iter().any(|r| r.coll == coll && r.addr == addr);
        if self.leaving || moving {
            return Err(DestroyError::Migrating);
        }
        if self.in_step(coll, &addr.key) {
            return Err(DestroyError::InBalancingStep);
        }
        if self.destroys.iter().any(|(c, a)| *c == coll && *a == addr) {
            return Err(DestroyError::AlreadyDeleted);
        }
        self.destroys.push((coll, addr));
        Ok(())
    }

    /// True if the running element asked to be deleted in this handler.
    pub(super) fn destroying(&self, coll: CollectionId, addr: &ElemAddr) -> bool {
        self.destroys.iter().any(|(c, a)| *c == coll && a == addr)
    }

    /// Send a request to delete element `addr` of array `coll` where it is.
    pub(crate) fn destroy_element(&mut self, coll: CollectionId, addr: ElemAddr) {
        let (to, addr, moves) = match self.route_element(coll, addr) {
            Some((to, Dest::ElementAt(_, addr, moves))) => (to, addr, moves),
            Some((to, Dest::Element(_, addr))) => (to, addr, 0),
            _ => return,
        };
        let env = self.envelope(Destroy { coll, addr, moves }, SendOpts::default());
        self.post(to, env);
    }

    fn fail_destroy(&mut self, coll: CollectionId, addr: &ElemAddr, reason: DestroyError) {
        let err = RuntimeError::Destroy {
            pe: self.me,
            element: element_name(coll, addr),
            reason,
        };
        self.fail(err);
    }
}

impl PeRuntime {
    /// Delete the elements whose handlers asked to be.
    pub(super) fn apply_destroys(&mut self) {
        for (coll, addr) in std::mem::take(&mut self.core.destroys) {
            self.delete(coll, addr);
        }
    }

    /// True if `addr` was deleted and this PE is its home.
    fn deleted_here(&self, coll: CollectionId, addr: &ElemAddr) -> bool {
        self.colls
            .get(&coll)
            .is_some_and(|c| c.census.is_deleted(&addr.key))
    }

    /// True (with the messages counted and reported) if `addr` was deleted and this
    /// PE is its home: the `weight` messages that arrived for it are not run.
    pub(super) fn drop_if_deleted(
        &mut self,
        coll: CollectionId,
        addr: &ElemAddr,
        weight: u64,
    ) -> bool {
        let deleted = self.deleted_here(coll, addr);
        if deleted {
            self.core.ledger.undelivered(weight, Dropped::ToDeleted);
        }
        deleted
    }

    /// Run a request to delete an element: here, or routed on as its messages are.
    pub(super) fn on_destroy(&mut self, d: Destroy, from: Origin) {
        let Destroy { coll, addr, moves } = d;
        let me = self.core.me;
        let here = match self.colls.get(&coll).map(|c| &c.members) {
            Some(Members::Array { elements, .. }) => elements.contains_key(&addr.key),
            _ => false,
        };
        if here {
            if self.core.in_step(coll, &addr.key) {
                return self
                    .core
                    .fail_destroy(coll, &addr, DestroyError::InBalancingStep);
            }
            return self.delete(coll, addr);
        }
        if self.deleted_here(coll, &addr) {
            return self
                .core
                .fail_destroy(coll, &addr, DestroyError::AlreadyDeleted);
        }
        let to = match self.core.loc.route(coll, &addr.key, moves, me) {
            Route::Forward { pe, moves } => Some((pe, moves)),
            Route::NoNews if moves > 0 => {
                // On its way here: the request waits for it as its messages do.
                let kind = Destroy {
                    coll,
                    addr: addr.clone(),
                    moves,
                };
                let env = Via::new(from, 0).waiting(kind.into());
                self.core.loc.wait(coll, addr.key.clone(), env);
                None
            }
            Route::NoNews => match self.core.locate(coll, &addr) {
                Ok(home) if home != me => Some((home, 0)),
                Ok(_) => {
                    let index = super::describe_index(&addr);
                    let err = RuntimeError::UnknownArrayIndex {
                        pe: me,
                        coll,
                        index,
                    };
                    self.core.fail(err);
                    None
                }
                Err(e) => {
                    self.core.fail(e);
                    None
                }
            },
        };
        if let Some((pe, moves)) = to {
            let env = self
                .core
                .envelope(Destroy { coll, addr, moves }, from.opts());
            self.core.post(pe, env);
        }
    }

    /// Delete an element that is here, and tell its home (or stand in for it here).
    fn delete(&mut self, coll: CollectionId, addr: ElemAddr) {
        let me = self.core.me;
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        let Some(e) = elements.remove(&addr.key) else {
            return self
                .core
                .fail_destroy(coll, &addr, DestroyError::AlreadyDeleted);
        };
        self.core
            .moves
            .retain(|r| !(r.coll == coll && r.addr.key == addr.key));
        let moves = e.moves.saturating_add(1);
        let addr = ElemAddr {
            order: e.order,
            ..addr
        };
        if e.home == me {
            return self.stand_in(coll, addr, moves, e.contributed);
        }
        // Messages that still come here go home, where they are counted.
        let pointer = Loc {
            pe: e.home,
            moves,
            order: addr.order,
            homed_here: false,
        };
        self.core.loc.learn(coll, &addr.key, pointer);
        let kind = Deleted {
            coll,
            addr,
            moves,
            contributed: e.contributed,
        };
        let env = self.core.envelope(kind, SendOpts::expedited());
        self.core.post(e.home, env);
    }

    /// An element homed away from here was deleted where it was.
    pub(super) fn on_deleted(&mut self, d: Deleted) {
        let Deleted {
            coll,
            addr,
            moves,
            contributed,
        } = d;
        self.stand_in(coll, addr, moves, contributed);
    }

    /// Keep a deleted element's place in reductions here, at its home, and deliver
    /// (as drops) what waited for it.
    fn stand_in(&mut self, coll: CollectionId, addr: ElemAddr, moves: u32, contributed: u64) {
        let me = self.core.me;
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let stand_in = StandIn {
            contributed,
            order: addr.order,
        };
        c.census
            .deleted
            .get_mut()
            .insert(addr.key.clone(), stand_in);
        if self.core.loc.get(coll, &addr.key).is_some() {
            // It had moved: the home no longer passes it broadcasts or counts it away.
            let here = Loc {
                pe: me,
                moves,
                order: addr.order,
                homed_here: true,
            };
            self.core.loc.learn(coll, &addr.key, here);
        }
        let waiting = self.core.loc.arrived(coll, &addr.key);
        self.requeue(waiting);
        self.recheck(coll);
    }

    /// A child's whole subtree was deleted.
    pub(super) fn child_emptied(&mut self, e: Emptied, src: Pe) {
        let Emptied { coll, epoch, from } = e;
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let census = &mut c.census;
        if !census
            .emptied()
            .any(|(ch, ep, _)| *ch == src && *ep == epoch)
        {
            census.rare.get_mut().emptied.push((src, epoch, from));
        }
        self.recheck(coll);
    }

    /// After the census or its stand-ins changed: finish what can finish, and tell
    /// the parent if every member below this PE is now deleted.
    pub(super) fn recheck(&mut self, coll: CollectionId) {
        let me = self.core.me;
        let parent = self.core.tree_parent();
        let live_away = self.core.loc.away_count(coll, me) > 0;
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let epoch = c.census.epoch;
        if let Some(r) = c.census.rare.built_mut() {
            r.emptied.retain(|(_, e, _)| *e >= epoch);
        }
        let live_here = live_away
            || match &c.members {
                Members::Array { elements, .. } => elements.values().any(|e| e.home == me),
                Members::Group { .. } => true,
            };
        if let Some(from) = c.census.emptied_from(live_here) {
            c.census.rare.get_mut().told_empty = Some(epoch);
            if let Some(p) = parent {
                let env = self
                    .core
                    .envelope(Emptied { coll, epoch, from }, SendOpts::expedited());
                self.core.post(p, env);
            }
        }
        for seq in self.colls[&coll].reductions.seqs() {
            self.try_complete(coll, seq);
        }
        self.recheck_steps(coll);
    }
}
