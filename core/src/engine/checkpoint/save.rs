//! A PE's state, written as it is gathered: the bincode of a `PeState` (the type a
//! restart decodes) produced piece by piece into one writer, each chare's state
//! serialized straight into it by its type's `Saver`, so a checkpoint makes no
//! buffer per chare and no `PeState` of its own (`encodes_as_a_pe_state` checks the
//! bytes are those of the `PeState` they stand for).

use super::files::{SavedDeleted, SavedSingleton};
use super::{Census, Members, PeRuntime};
use crate::api::chare::AnyChare;
use crate::api::migration::Saver;
use crate::base::checkpoint_error::CheckpointError;
use crate::base::ids::{ChareId, CollectionId, Pe};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// `SavedKind`'s variant numbers, as bincode writes them (a `u32`).
const GROUP_VARIANT: u32 = 0;
const ARRAY_VARIANT: u32 = 1;

/// Where a PE's state goes: a PE file's writer or an in-memory copy's, and the name
/// its I/O errors carry.
pub(super) struct Out<'a> {
    pub(super) to: &'a mut dyn Write,
    pub(super) what: &'a Path,
}

impl Out<'_> {
    /// The bincode of `v`.
    fn put<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CheckpointError> {
        bincode::serialize_into(&mut *self.to, v).map_err(|e| CheckpointError::io(self.what, e))
    }

    /// A chare's state as a length-prefixed byte string (how bincode writes the
    /// `Bytes` a restart decodes it as), serialized by `saver` into the writer. A
    /// failure of the writer is an I/O error on the file; one of the state's own
    /// `Serialize`, or a state that is not the length it said, is `unsaveable`.
    fn put_state(
        &mut self,
        saver: Saver,
        chare: &mut dyn AnyChare,
        unsaveable: impl Fn(String) -> CheckpointError,
    ) -> Result<(), CheckpointError> {
        let bad = |e: String| unsaveable(format!("its state does not serialize: {e}"));
        let len = (saver.size)(chare).map_err(bad)?;
        self.put(&len)?;
        let mut counted = Counted {
            to: &mut *self.to,
            bytes: 0,
            failed: None,
        };
        let saved = (saver.into)(chare, &mut counted);
        if let Some(e) = counted.failed.take() {
            return Err(CheckpointError::io(self.what, e));
        }
        saved.map_err(bad)?;
        if counted.bytes != len {
            let why = format!("its encoding was {} bytes where its size said {len}: its Serialize is not deterministic", counted.bytes);
            return Err(unsaveable(why));
        }
        Ok(())
    }
}

/// A writer that counts what passes and keeps the error of the writer under it, so
/// a full disk is told from a state that does not serialize.
struct Counted<'a> {
    to: &'a mut dyn Write,
    bytes: u64,
    failed: Option<std::io::Error>,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.to.write(buf) {
            Ok(n) => {
                self.bytes += n as u64;
                Ok(n)
            }
            Err(e) => {
                let kept = std::io::Error::new(e.kind(), e.to_string());
                self.failed.get_or_insert(kept);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.to.flush()
    }
}

impl PeRuntime {
    /// Write this PE's state into `out`, as `files::decode_state` reads it.
    pub(super) fn write_pe_state(&mut self, out: &mut Out<'_>) -> Result<(), CheckpointError> {
        let pe = self.core.me;
        if let Some((id, red)) = self.sections.get().and_then(|s| s.in_progress()) {
            return Err(CheckpointError::Unsaveable {
                pe,
                what: format!("reduction {red} of array section {id:#x}"),
                why: "some members contributed to it and others not: checkpoint between section reductions".into(),
            });
        }
        self.refuse_pending_tasks()?;
        let mut next_chare_seq: Vec<(Pe, u32)> =
            (self.core.next_chare_seq.get().into_iter().flatten())
                .map(|(&p, &s)| (p, s))
                .collect();
        next_chare_seq.sort_unstable();
        let head = (
            pe,
            self.core.next_coll_seq,
            next_chare_seq,
            self.core.next_section_seq,
        );
        out.put(&head)?;
        let mut ids: Vec<CollectionId> = self.colls.keys().copied().collect();
        ids.sort();
        out.put(&(ids.len() as u64))?;
        for id in ids {
            self.write_collection(id, out)?;
        }
        self.write_singletons(out)
    }

    /// The singleton chares living here, by id, each through its type's
    /// `Checkpointer` or else its `Migrator` (both save the serde state).
    fn write_singletons(&mut self, out: &mut Out<'_>) -> Result<(), CheckpointError> {
        let pe = self.core.me;
        let reg = self.core.reg.clone();
        let Some(c) = self.chares.built_mut() else {
            return out.put(&Vec::<SavedSingleton>::new());
        };
        let mut ids: Vec<(ChareId, usize)> = c.slot.iter().map(|(&id, &i)| (id, i)).collect();
        ids.sort_unstable_by_key(|(id, _)| (id.pe, id.creator, id.seq));
        out.put(&(ids.len() as u64))?;
        for (id, i) in ids {
            let single = &mut c.slab[i];
            let ty = reg.chares.get(single.ty as usize);
            let name = ty.map_or("?", |t| t.name.as_str());
            let unsaveable = |why: String| CheckpointError::Unsaveable {
                pe,
                what: format!("singleton {id} of type {name}"),
                why,
            };
            let saver = ty
                .and_then(|t| t.checkpoint.map(|k| k.save).or(t.migrate.map(|m| m.save)))
                .ok_or_else(|| {
                    unsaveable("register the type with Registry::checkpointable".into())
                })?;
            out.put(&(id, single.ty))?;
            out.put_state(saver, single.chare.as_mut(), unsaveable)?;
        }
        Ok(())
    }

    /// Collection `id`'s part on this PE, as a `SavedCollection`.
    fn write_collection(
        &mut self,
        id: CollectionId,
        out: &mut Out<'_>,
    ) -> Result<(), CheckpointError> {
        let pe = self.core.me;
        let reg = self.core.reg.clone();
        let meta = self.core.array_meta(id).cloned();
        let Some(c) = self.colls.get_mut(&id) else {
            return Err(CheckpointError::Unsaveable {
                pe,
                what: id.to_string(),
                why: "it vanished while being saved".into(),
            });
        };
        let ty = reg.chares.get(c.ty as usize);
        let name = ty.map_or("?", |t| t.name.as_str());
        let unsaveable = |why: String| CheckpointError::Unsaveable {
            pe,
            what: format!("{id} of type {name}"),
            why,
        };
        if let Some(why) = unsaveable_why(c) {
            return Err(unsaveable(why.into()));
        }
        match (&mut c.members, meta) {
            (
                Members::Group {
                    member,
                    contributed,
                    ..
                },
                _,
            ) => {
                let Some(k) = ty.and_then(|t| t.checkpoint) else {
                    return Err(unsaveable(
                        "the type is not checkpointable: register it with Registry::checkpointable if it is yours (the groups of chorus-sections, which hold process-group sections, are not checkpointable yet)".into(),
                    ));
                };
                out.put(&(id, c.ty, GROUP_VARIANT))?;
                out.put_state(k.save, member.as_mut(), unsaveable)?;
                out.put(contributed)
            }
            (
                Members::Array {
                    elements,
                    seq_floor,
                },
                Some(meta),
            ) => {
                let Some(m) = ty.and_then(|t| t.migrate) else {
                    return Err(unsaveable(
                        "register the type with Registry::migratable".into(),
                    ));
                };
                out.put(&(id, c.ty, ARRAY_VARIANT, &*meta.shape, meta.map, *seq_floor))?;
                let mut saved: Vec<_> = elements.iter_mut().collect();
                saved.sort_by(|a, b| a.0.cmp(b.0));
                out.put(&(saved.len() as u64))?;
                for (key, e) in saved {
                    out.put(&(key, e.order, e.contributed, e.syncs))?;
                    out.put_state(m.save, e.chare.as_mut(), unsaveable)?;
                }
                out.put(&saved_deleted(&c.census))
            }
            (Members::Array { .. }, None) => Err(unsaveable("its map is unknown here".into())),
        }
    }
}

/// Why a collection cannot be saved whatever its type, if it cannot.
fn unsaveable_why(c: &super::super::Collection) -> Option<&'static str> {
    if !c.reductions.seqs().is_empty() {
        Some("a reduction is in progress (some members contributed, others not): checkpoint between reductions")
    } else if matches!(c.members, Members::Group { per_node: true, .. }) {
        Some("it is a nodegroup, which checkpoints do not save yet: checkpoint before creating it")
    } else {
        None
    }
}

/// The deleted elements a PE is home to (its stand-ins), by key.
fn saved_deleted(census: &Census) -> Vec<SavedDeleted> {
    let mut deleted: Vec<SavedDeleted> = (census.deleted.get().into_iter().flatten())
        .map(|(key, s)| SavedDeleted {
            key: key.clone(),
            order: s.order,
            contributed: s.contributed,
        })
        .collect();
    deleted.sort_by(|a, b| a.key.cmp(&b.key));
    deleted
}

#[cfg(test)]
mod tests {
    use super::super::files::{PeState, Restart, SavedCollection, SavedElement, SavedKind};
    use super::*;
    use crate::api::chare::Chare;
    use crate::api::ctx::Ctx;
    use crate::api::migration::{Checkpointable, Migratable, Restarted};
    use crate::api::registry::Registry;
    use crate::base::config::Config;
    use crate::base::ids::IndexKey;
    use crate::engine::PeSetup;
    use crate::msg::array::{ArrayMap, Shape};
    use serde::Deserialize;
    use std::path::PathBuf;
    use std::sync::Arc;

    use crate::engine::nowhere::Nowhere;

    /// Every saved chare of the sample: a group member, an element, a singleton.
    #[derive(Serialize, Deserialize)]
    struct Blob(Vec<u32>);

    impl Chare for Blob {
        type Init = ();
        type Msg = ();
        fn create(_: (), _: &mut Ctx) -> Self {
            Blob(Vec::new())
        }
        fn handle(&mut self, _: (), _: &mut Ctx) {}
    }

    impl Migratable for Blob {}
    impl Checkpointable for Blob {}

    fn blob(n: u32) -> crate::base::bytes::Bytes {
        bincode::serialize(&Blob((0..n).collect())).unwrap().into()
    }

    /// One PE's state: a group member, eleven elements of a 12-element array (the
    /// first deleted) and a singleton.
    fn sample() -> PeState {
        let key = |i: u64| IndexKey::encode(&(i as usize));
        let id = |seq| CollectionId { creator: 0, seq };
        let elements = (1..12u64)
            .map(|i| SavedElement {
                key: key(i),
                order: i,
                contributed: 2,
                syncs: i as u32,
                state: blob(i as u32 * 100),
            })
            .collect();
        let deleted = vec![SavedDeleted {
            key: key(0),
            order: 0,
            contributed: 2,
        }];
        let array = SavedKind::Array {
            shape: Shape::Dense1(12),
            map: ArrayMap::Block,
            seq_floor: 7,
            elements,
            deleted,
        };
        let group = SavedKind::Group {
            state: blob(3),
            contributed: 3,
        };
        let singleton = SavedSingleton {
            id: ChareId {
                pe: 0,
                creator: 0,
                seq: 1,
            },
            ty: 0,
            state: blob(5),
        };
        PeState {
            pe: 0,
            next_coll_seq: 2,
            next_chare_seq: vec![(0, 4)],
            next_section_seq: 3,
            collections: vec![
                SavedCollection {
                    id: id(0),
                    ty: 0,
                    kind: group,
                },
                SavedCollection {
                    id: id(1),
                    ty: 0,
                    kind: array,
                },
            ],
            singletons: vec![singleton],
        }
    }

    #[test]
    fn encodes_as_a_pe_state() {
        let mut reg = Registry::new();
        reg.checkpointable::<Blob>("Blob")
            .migratable::<Blob>("Blob");
        let reg = Arc::new(reg);
        let info = Restarted {
            dir: PathBuf::new(),
            saved_pes: 1,
            epoch: 1,
            in_memory: true,
        };
        let here = Path::new("sample");
        let restart = Restart::of_states(vec![sample()], info, here, &reg, 1).unwrap();
        let cfg = Config::with_pes(1);
        let mut rt = PeRuntime::new(PeSetup::new(&cfg, 1, 0, None), reg, Box::new(Nowhere));
        rt.restore(&restart);
        let mut written = Vec::new();
        let out = &mut Out {
            to: &mut written,
            what: here,
        };
        rt.write_pe_state(out).unwrap();
        assert_eq!(written, bincode::serialize(&sample()).unwrap());
    }
}
