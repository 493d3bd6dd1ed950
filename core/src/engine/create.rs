//! Creation of chares, groups, arrays and inserted elements, and the census that
//! counts an array's elements for its reductions.

use super::{guarded, Census, Collection, Current, Element, Members, PeRuntime, Pending};
use crate::api::chare::AnyChare;
use crate::api::proxy::SendOpts;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::base::tree;
use crate::msg::array::{ArrayMap, ElemAddr, Shape};
use crate::msg::envelope::Kind;
use crate::msg::payload::Payload;
use std::sync::Arc;

impl PeRuntime {
    pub(super) fn construct(
        &mut self,
        ty: u32,
        init: Payload,
        current: Current,
    ) -> Option<Box<dyn AnyChare>> {
        let Some(ctor) = self.core.reg.chares.get(ty as usize).map(|t| t.construct) else {
            let err =
                RuntimeError::Invalid(format!("chare type {ty} is not registered in this process"));
            self.core.fail(err);
            return None;
        };
        let name = self.core.reg.chares[ty as usize].name.clone();
        guarded(&mut self.core, current, &name, |ctx| ctor(init, ctx))
    }

    pub(super) fn create_chare(&mut self, id: ChareId, ty: u32, init: Payload) {
        self.chares_announced.insert(id.creator, id.seq);
        if let Some(chare) = self.construct(ty, init, Current::Chare(id)) {
            self.chare_slot.insert(id, self.chare_slab.len());
            self.chare_slab.push(chare);
        }
        let waiting = self.waiting_for_chare.remove(&id);
        self.requeue(waiting);
    }

    pub(super) fn announce_collection(&mut self, coll: CollectionId) {
        self.colls_announced.insert(coll.creator, coll.seq);
    }

    pub(super) fn create_group(&mut self, coll: CollectionId, ty: u32, root: Pe, init: Payload) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let kind = Kind::CreateGroup {
                coll,
                ty,
                root,
                init: init.duplicate(),
            };
            self.core.create(c, kind);
        }
        self.announce_collection(coll);
        if let Some(member) = self.construct(ty, init, Current::Group(coll)) {
            let census = Census {
                local: 1,
                active_children: self.core.tree_children().collect(),
                done: true,
                ..Census::default()
            };
            self.colls.insert(
                coll,
                Box::new(Collection {
                    ty,
                    members: Members::Group {
                        member,
                        contributed: 0,
                    },
                    census,
                    reductions: Pending::default(),
                }),
            );
        }
        let waiting = self.waiting_for_coll.remove(&coll);
        self.requeue(waiting);
    }

    pub(super) fn create_array(
        &mut self,
        coll: CollectionId,
        ty: u32,
        root: Pe,
        init: Payload,
        shape: Arc<Shape>,
        map: ArrayMap,
    ) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let kind = Kind::CreateArray {
                coll,
                ty,
                root,
                init: init.duplicate(),
                shape: shape.clone(),
                map,
            };
            self.core.create(c, kind);
        }
        self.announce_collection(coll);
        self.core.register_array(coll, ty, shape.clone(), map);
        let me = self.core.me;
        let mut elements = HashMap::default();
        for addr in shape.addresses() {
            match self.core.locate(coll, &addr) {
                Ok(pe) if pe == me => {
                    let order = addr.order;
                    let key = addr.key.clone();
                    if let Some(chare) =
                        self.construct(ty, init.duplicate(), Current::Element(coll, addr))
                    {
                        elements.insert(
                            key,
                            Element {
                                chare,
                                order,
                                contributed: 0,
                                home: me,
                                moves: 0,
                            },
                        );
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    self.core.fail(e);
                    break;
                }
            }
        }
        let census = Census {
            local: elements.len() as u64,
            ..Census::default()
        };
        self.colls.insert(
            coll,
            Box::new(Collection {
                ty,
                members: Members::Array {
                    elements,
                    seq_floor: 0,
                },
                census,
                reductions: Pending::default(),
            }),
        );
        self.advance_census(coll);
        let waiting = self.waiting_for_coll.remove(&coll);
        self.requeue(waiting);
    }

    pub(super) fn insert(&mut self, coll: CollectionId, addr: ElemAddr, init: Payload, hops: u8) {
        let me = self.core.me;
        let Some(c) = self.colls.get(&coll) else {
            return;
        };
        let ty = c.ty;
        let home = match self.core.locate(coll, &addr) {
            Ok(home) => home,
            Err(e) => return self.core.fail(e),
        };
        if home != me {
            // Sent by a PE that did not know the array yet, so to its creator: an
            // element living off its home would be missed by broadcasts and censuses.
            if hops >= MAX_INSERT_HOPS {
                return self.core.fail(RuntimeError::Invalid(format!(
                    "PE {me}: insert of index {} of {coll} was forwarded {hops} times without reaching its home PE {home}",
                    describe_index(&addr)
                )));
            }
            let kind = Kind::Insert {
                coll,
                addr,
                init,
                hops: hops + 1,
            };
            let env = self.core.envelope(kind, SendOpts::expedited());
            return self.core.post(home, env);
        }
        let resident = match &c.members {
            Members::Array { elements, .. } => elements.contains_key(&addr.key),
            Members::Group { .. } => false,
        };
        // An element that moved away is still homed here: a second one would be a twin.
        let away = self
            .core
            .loc
            .get(coll, &addr.key)
            .filter(|l| l.homed_here && l.pe != me)
            .map(|l| l.pe);
        if resident || away.is_some() {
            return self.core.fail(RuntimeError::DuplicateIndex {
                pe: me,
                coll,
                index: describe_index(&addr),
                on: away.unwrap_or(me),
            });
        }
        let order = addr.order;
        let key = addr.key.clone();
        let Some(chare) = self.construct(ty, init, Current::Element(coll, addr)) else {
            return;
        };
        if let Some(Collection {
            members:
                Members::Array {
                    elements,
                    seq_floor,
                },
            ..
        }) = self.colls.get_mut(&coll).map(|b| &mut **b)
        {
            elements.insert(
                key,
                Element {
                    chare,
                    order,
                    contributed: *seq_floor,
                    home,
                    moves: 0,
                },
            );
        }
    }

    pub(super) fn recount(&mut self, coll: CollectionId, root: Pe) {
        for ch in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let env = self
                .core
                .envelope(Kind::DoneInserting { coll, root }, SendOpts::default());
            self.core.post(ch, env);
        }
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if let Members::Array { elements, .. } = &c.members {
            // A PE counts the elements it is home to, here or away (see `location.rs`).
            let me = self.core.me;
            let homed = elements.values().filter(|e| e.home == me).count() as u64;
            c.census.epoch += 1;
            c.census.local = homed + self.core.loc.away_count(coll, me);
            c.census.done = false;
            self.advance_census(coll);
        }
    }

    /// Finish this PE's census once every child has reported its subtree count.
    pub(super) fn advance_census(&mut self, coll: CollectionId) {
        let children: Vec<Pe> = self.core.tree_children().collect();
        let parent = self.core.tree_parent();
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if c.census.done {
            return;
        }
        let epoch = c.census.epoch;
        let reports = c.census.reports.get(&epoch).map_or(0, Vec::len);
        if reports < children.len() {
            return;
        }
        let reports = c.census.reports.remove(&epoch).unwrap_or_default();
        let subtree = c.census.local + reports.iter().map(|r| r.1).sum::<u64>();
        c.census.active_children = reports.iter().filter(|r| r.1 > 0).map(|r| r.0).collect();
        c.census.done = true;
        if let Some(p) = parent {
            let env = self.core.envelope(
                Kind::Census {
                    coll,
                    epoch,
                    count: subtree,
                },
                SendOpts::expedited(),
            );
            self.core.post(p, env);
        }
        let seqs: Vec<u64> = self.colls[&coll].reductions.seqs();
        for seq in seqs {
            self.try_complete(coll, seq);
        }
    }
}

/// Forwards an insert may take to its element's home (one is all a correct map needs).
pub(super) const MAX_INSERT_HOPS: u8 = 4;

pub(super) fn describe_index(addr: &ElemAddr) -> String {
    format!("with order key {} ({} bytes)", addr.order, addr.key.0.len())
}
