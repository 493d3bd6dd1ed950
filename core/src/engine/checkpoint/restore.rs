//! A restarted PE rebuilds its collections from the checkpoint its layer read
//! (`api/checkpoint/files.rs`, `Restart`): every collection's id and type, its array
//! map, its group member (the one this PE saved, or one the type's `restore` builds
//! when the PE count changed), the array elements the map places here, and this PE's
//! sequence numbers.

use super::files::{
    address, PeRestore, PeState, Restart, SavedCollection, SavedDeleted, SavedElement, SavedKind,
    SavedSingleton,
};
use super::Resumed;
use crate::base::bytes::Bytes;
use crate::base::checkpoint_error::CheckpointError;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::base::ids::{CollectionId, Pe};
use crate::engine::{Census, Collection, Element, Members, PeRuntime, Pending, Singleton, StandIn};
use std::sync::Arc;

impl PeRuntime {
    /// Rebuild this PE from `restart` (before its layer drives it).
    pub(in crate::engine) fn restore(&mut self, restart: &Restart) {
        let me = self.core.me;
        let PeRestore {
            collections,
            placed,
            states,
        } = restart.for_pe(me);
        if let Some(s) = states.get(me as usize) {
            self.core.next_coll_seq = s.next_coll_seq;
            *self.core.next_chare_seq.get_mut() = s.next_chare_seq.iter().copied().collect();
            self.core.next_section_seq = s.next_section_seq;
        }
        let mut mine: HashMap<CollectionId, (Vec<_>, Vec<_>)> = HashMap::default();
        for (id, e) in placed.elements {
            mine.entry(id).or_default().0.push(e);
        }
        for (id, d) in placed.deleted {
            mine.entry(id).or_default().1.push(d);
        }
        let mut listed = Vec::with_capacity(collections.len());
        for c in collections {
            listed.push((c.id, c.ty));
            self.announce_collection(c.id);
            let result = match &c.kind {
                SavedKind::Group { .. } => self.restore_group(c, states),
                SavedKind::Array { .. } => {
                    let (elements, deleted) = mine.remove(&c.id).unwrap_or_default();
                    self.restore_array(c, states, elements, deleted)
                }
            };
            if let Err(e) = result {
                // Never a partial restart, whatever the --on-error policy.
                return self.core.abort(RuntimeError::Checkpoint(e));
            }
        }
        if let Err(e) = self.restore_singletons(placed.singletons) {
            return self.core.abort(RuntimeError::Checkpoint(e));
        }
        self.core.resumed = Some(Box::new(Resumed {
            info: restart.info.clone(),
            collections: listed,
            callback: restart.resume.as_ref().map(|r| r.callback.clone()),
            chares: restart.singletons.clone(),
        }));
        self.core.port.flush();
    }

    /// This PE's member of group `c`.
    fn restore_group(
        &mut self,
        c: &SavedCollection,
        states: &[PeState],
    ) -> Result<(), CheckpointError> {
        let (me, npes) = (self.core.me, self.core.npes);
        let reg = self.core.reg.clone();
        let ty = reg.chares.get(c.ty as usize);
        let fail = failing(me, c, ty.map(|t| t.name.as_str()));
        let k = ty
            .and_then(|t| t.checkpoint)
            .ok_or_else(|| fail("the type is not registered as checkpointable".into()))?;
        // Every saved PE's member, in PE order.
        let saved: Vec<(&Bytes, u64)> = saved_parts(states, c.id)
            .filter_map(|kind| match kind {
                SavedKind::Group { state, contributed } => Some((state, *contributed)),
                SavedKind::Array { .. } => None,
            })
            .collect();
        if saved.len() != states.len() {
            return Err(fail("a saved PE holds no member of it".into()));
        }
        let (member, contributed) = if saved.len() == npes {
            let (bytes, contributed) = saved[me as usize];
            (bytes.decode_in_place(k.load).map_err(fail)?, contributed)
        } else {
            let states: Vec<&[u8]> = saved.iter().map(|s| s.0.as_slice()).collect();
            // Members agree on their reduction count between reductions (a checkpoint
            // refuses one in progress), so PE 0's stands for all.
            ((k.restore)(&states, me, npes).map_err(fail)?, saved[0].1)
        };
        let census = Census {
            local: 1,
            active_children: self.core.tree_children().collect(),
            done: true,
            ..Census::default()
        };
        let members = Members::Group {
            member,
            contributed,
            per_node: false,
        };
        self.colls.insert(
            c.id,
            Box::new(Collection {
                ty: c.ty,
                members,
                census,
                reductions: Pending::default(),
            }),
        );
        Ok(())
    }

    /// Array `c` with the saved `elements` its map places here.
    fn restore_array(
        &mut self,
        c: &SavedCollection,
        states: &[PeState],
        elements: Vec<SavedElement>,
        deleted: Vec<SavedDeleted>,
    ) -> Result<(), CheckpointError> {
        let SavedKind::Array { shape, map, .. } = &c.kind else {
            return Ok(());
        };
        let me = self.core.me;
        let reg = self.core.reg.clone();
        let ty = reg.chares.get(c.ty as usize);
        let fail = failing(me, c, ty.map(|t| t.name.as_str()));
        let m = ty
            .and_then(|t| t.migrate)
            .ok_or_else(|| fail("the type is not registered as migratable".into()))?;
        self.core
            .register_array(c.id, c.ty, Arc::new(shape.clone()), *map);
        let seq_floor = saved_parts(states, c.id)
            .filter_map(|kind| match kind {
                SavedKind::Array { seq_floor, .. } => Some(*seq_floor),
                SavedKind::Group { .. } => None,
            })
            .max()
            .unwrap_or(0);
        let mut restored = HashMap::default();
        for e in elements {
            let chare = e.state.decode_in_place(m.load).map_err(&fail)?;
            let addr = address(&e);
            let element = Element {
                chare,
                order: addr.order,
                contributed: e.contributed,
                home: me,
                moves: 0,
                load: 0.0,
                syncs: e.syncs,
            };
            restored.insert(addr.key, element);
        }
        // Each deleted element homed here stands in for it again (`destroy.rs`).
        let deleted: HashMap<_, _> = (deleted.into_iter())
            .map(|d| {
                let s = StandIn {
                    contributed: d.contributed,
                    order: d.order,
                };
                (d.key, s)
            })
            .collect();
        let census = Census {
            local: (restored.len() + deleted.len()) as u64,
            deleted: deleted.into(),
            ..Census::default()
        };
        let members = Members::Array {
            elements: restored,
            seq_floor,
        };
        self.colls.insert(
            c.id,
            Box::new(Collection {
                ty: c.ty,
                members,
                census,
                reductions: Pending::default(),
            }),
        );
        self.advance_census(c.id);
        Ok(())
    }
}

impl PeRuntime {
    /// The singletons placed on this PE, through their type's `Checkpointer` or else
    /// its `Migrator` (as `save_singletons` chose).
    fn restore_singletons(&mut self, saved: Vec<SavedSingleton>) -> Result<(), CheckpointError> {
        let me = self.core.me;
        let reg = self.core.reg.clone();
        for s in saved {
            let ty = reg.chares.get(s.ty as usize);
            let fail = |reason: String| CheckpointError::Restore {
                pe: me,
                collection: s.id.to_string(),
                chare: ty.map_or_else(|| format!("#{}", s.ty), |t| t.name.clone()),
                reason,
            };
            let load = ty
                .and_then(|t| t.checkpoint.map(|k| k.load).or(t.migrate.map(|m| m.load)))
                .ok_or_else(|| fail("the type is not registered as checkpointable".into()))?;
            let chare = load(s.state.as_slice()).map_err(fail)?;
            let c = self.chares.get_mut();
            // Creations are numbered per creator and PE created on: one created on
            // another PE (placed here by a restart on fewer PEs) is not one of this
            // PE's, whose later creations may reuse its number.
            if s.id.pe == me {
                c.announced.insert(s.id.creator, s.id.seq);
            }
            c.slot.insert(s.id, c.slab.len());
            c.slab.push(Singleton { ty: s.ty, chare });
        }
        Ok(())
    }
}

/// The words of a failure to restore collection `c` of type `name` on PE `pe`.
fn failing(pe: Pe, c: &SavedCollection, name: Option<&str>) -> impl Fn(String) -> CheckpointError {
    let collection = c.id.to_string();
    let chare = name.map_or_else(|| format!("#{}", c.ty), str::to_string);
    move |reason| CheckpointError::Restore {
        pe,
        collection: collection.clone(),
        chare: chare.clone(),
        reason,
    }
}

/// Collection `id`'s part in every saved PE's state, in PE order.
fn saved_parts(states: &[PeState], id: CollectionId) -> impl Iterator<Item = &SavedKind> {
    states
        .iter()
        .filter_map(move |s| s.collections.iter().find(|x| x.id == id))
        .map(|x| &x.kind)
}
