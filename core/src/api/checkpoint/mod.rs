//! Checkpoint and restart, the user's side: the `Checkpointable` trait groups opt in
//! with, the type-erased functions that save and rebuild a member, and what a
//! restarted program's main is told (`Restarted`). The files are in `files.rs`.
//!
//! What a checkpoint holds: every array element of a migratable type (its serde
//! state, reduction count and AtSync count), every group member of a checkpointable
//! type, each collection's id, type, shape and map, and each PE's next collection and
//! chare numbers. What it does not: singleton chares (a checkpoint refuses a job with
//! one), a reduction some members have contributed to and others not, where elements
//! had migrated to (a restart places every element by its array's map), messages
//! (there are none: it is taken at quiescence), and the main function's locals.

pub(crate) mod files;

use crate::api::chare::{AnyChare, Cell, Chare};
use crate::base::ids::Pe;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;

/// A group member type whose state a checkpoint saves and a restart rebuilds
/// (register it with `Registry::checkpointable`). Array elements need no more than
/// `Migratable`.
pub trait Checkpointable: Chare + Serialize + DeserializeOwned {
    /// True if `restore` can build members on a PE count other than the saved one;
    /// a restart on another count refuses a group whose type says false.
    const ANY_PE_COUNT: bool = false;

    /// Builds the member of PE `pe` of `npes` from every saved member, in the order of
    /// the PEs that saved them; called only when the PE count changed (on the same
    /// count each PE gets back the member it saved).
    fn restore(saved: Vec<Self>, pe: Pe, npes: usize) -> Result<Self, String> {
        let _ = (pe, npes);
        Err(format!(
            "{} saved members cannot be redistributed (no Checkpointable::restore)",
            saved.len()
        ))
    }
}

/// What `Ctx::restarted` tells a program started with `--restart`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarted {
    /// The checkpoint's directory.
    pub dir: PathBuf,
    /// How many PEs the job that wrote it had.
    pub saved_pes: usize,
    /// Which checkpoint of that directory it was (they count up from 1).
    pub epoch: u64,
}

/// Serialize a chare's state (no hook runs).
pub(crate) type SaveFn = fn(&mut dyn AnyChare) -> Result<Vec<u8>, String>;
/// Rebuild a chare from its state (no hook runs).
pub(crate) type LoadFn = fn(&[u8]) -> Result<Box<dyn AnyChare>, String>;
/// Build PE `pe`'s member of `npes` from every saved member's state.
pub(crate) type RestoreFn = fn(&[&[u8]], Pe, usize) -> Result<Box<dyn AnyChare>, String>;

/// How one checkpointable group type is saved and rebuilt.
#[derive(Clone, Copy)]
pub(crate) struct Checkpointer {
    pub(crate) save: SaveFn,
    pub(crate) load: LoadFn,
    pub(crate) restore: RestoreFn,
    pub(crate) any_pe_count: bool,
}

impl Checkpointer {
    /// The functions for type `C`.
    pub(crate) fn of<C: Checkpointable>() -> Self {
        Checkpointer {
            save: save_state::<C>,
            load: load_state::<C>,
            restore: restore::<C>,
            any_pe_count: C::ANY_PE_COUNT,
        }
    }
}

/// The bincode encoding of a `C` (what migration and checkpoints carry).
pub(crate) fn save_state<C: Chare + Serialize>(
    chare: &mut dyn AnyChare,
) -> Result<Vec<u8>, String> {
    let Some(Cell(c)) = chare.as_any_mut().downcast_mut::<Cell<C>>() else {
        return Err(format!("the chare is not a {}", std::any::type_name::<C>()));
    };
    bincode::serialize(c).map_err(|e| e.to_string())
}

/// A `C` decoded from `save_state`'s bytes.
pub(crate) fn decode_state<C: DeserializeOwned>(bytes: &[u8]) -> Result<C, String> {
    bincode::deserialize(bytes).map_err(|e| {
        format!(
            "{} bytes are not a {}: {e}",
            bytes.len(),
            std::any::type_name::<C>()
        )
    })
}

/// A chare rebuilt from `save_state`'s bytes.
pub(crate) fn load_state<C: Chare + DeserializeOwned>(
    bytes: &[u8],
) -> Result<Box<dyn AnyChare>, String> {
    Ok(Box::new(Cell(decode_state::<C>(bytes)?)))
}

fn restore<C: Checkpointable>(
    saved: &[&[u8]],
    pe: Pe,
    npes: usize,
) -> Result<Box<dyn AnyChare>, String> {
    let members = saved
        .iter()
        .map(|b| decode_state::<C>(b))
        .collect::<Result<Vec<C>, String>>()?;
    Ok(Box::new(Cell(C::restore(members, pe, npes)?)))
}
