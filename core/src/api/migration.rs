//! Opting array elements into migration: the `Migratable` trait, the errors a move can
//! end in, and the type-erased functions that serialize an element's state on its old
//! PE and rebuild it on its new one. Checkpoints serialize state the same way: group
//! types opt in with `Checkpointable`, and a restarted main learns of its restart
//! through `Restarted` (the engine's side is in `engine/checkpoint/`).
//!
//! What a checkpoint holds: every array element of a migratable type (its serde
//! state, reduction count and AtSync count), every deleted element (at its home,
//! which goes on standing in for it), every group member and singleton chare of a
//! checkpointable type (a singleton of a migratable one too), each collection's id,
//! type, shape and map, and each PE's next collection, chare and section numbers.
//! What it does not: a singleton or group member of a type registered with neither
//! (a checkpoint refuses a job with one, naming it), a reduction some members have
//! contributed to and others not (refused too), where elements had migrated to (a
//! restart places every element by its array's map, and every singleton on the PE
//! it was created on, modulo the new PE count), messages (there are none: it is
//! taken at quiescence), and main's locals.
//!
//! Only types registered with `Registry::migratable` move; every other chare type
//! keeps the plain `Chare` bounds.

use crate::api::chare::{AnyChare, Cell, Chare};
use crate::api::ctx::Ctx;
use crate::api::registry::Migrator;
use crate::base::bytes::Bytes;
use crate::base::ids::Pe;
use crate::msg::payload::Payload;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// An array element type whose state can move to another PE with [`Ctx::migrate_me`].
///
/// The state travels as its bincode encoding (on every layer, so what works on
/// threads works across MPI ranks); register the type with `Registry::migratable`.
/// Keep a large block of bytes in a [`Bytes`] field: it is copied once per move and
/// arrives as a view of the state, where a `Vec<u8>` goes through serde a byte at a
/// time each way.
pub trait Migratable: Chare + Serialize + DeserializeOwned {
    /// Runs on the old PE just before the state is serialized (Charm++'s
    /// `ckAboutToMigrate`).
    fn about_to_migrate(&mut self, _ctx: &mut Ctx) {}

    /// Runs on the new PE right after the state is rebuilt, before any message reaches
    /// it (Charm++'s `ckJustMigrated`).
    fn migrated(&mut self, _ctx: &mut Ctx) {}

    /// Runs on every element of an array once a balancing step that its
    /// [`Ctx::at_sync`] joined is over, on the PE it was placed on (Charm++'s
    /// `ResumeFromSync`): the element goes on with its next step here.
    fn resume_from_sync(&mut self, _ctx: &mut Ctx) {}

    /// The load, in seconds, the element expects over the next balancing period,
    /// which the strategy then balances instead of `measured_s`, the time its
    /// handlers ran in the period just ended (Charm++'s `UserSetLBLoad`). Called on the
    /// element's PE at each `at_sync` that balances; the default trusts the measure.
    /// An element whose cost changes in a way it knows (a moving hot spot, a refined
    /// mesh) says so here, so the placement fits the coming period, not the last.
    fn predict_load(&self, measured_s: f64, _ctx: &Ctx) -> f64 {
        measured_s
    }
}

pub use crate::base::error::MigrateError;

impl Migrator {
    /// The functions for type `C`.
    pub(crate) fn of<C: Migratable>() -> Self {
        Migrator {
            pack: pack::<C>,
            unpack: unpack::<C>,
            resume: resume::<C>,
            predict: predict::<C>,
            save: Saver::of::<C>(),
            load: load_state::<C>,
        }
    }
}

fn pack<C: Migratable>(chare: &mut dyn AnyChare, ctx: &mut Ctx) -> Result<Payload, String> {
    let Some(Cell(c)) = chare.as_any_mut().downcast_mut::<Cell<C>>() else {
        return Err(format!(
            "the element is not a {}",
            std::any::type_name::<C>()
        ));
    };
    c.about_to_migrate(ctx);
    let state = save_state::<C>(chare)?;
    // `Bytes` crosses a process boundary without being copied into the envelope.
    Ok(Payload::new(Bytes::from(state)))
}

fn resume<C: Migratable>(chare: &mut dyn AnyChare, ctx: &mut Ctx) {
    if let Some(Cell(c)) = chare.as_any_mut().downcast_mut::<Cell<C>>() {
        c.resume_from_sync(ctx);
    }
}

fn predict<C: Migratable>(chare: &mut dyn AnyChare, measured_s: f64, ctx: &Ctx) -> f64 {
    match chare.as_any_mut().downcast_mut::<Cell<C>>() {
        Some(Cell(c)) => c.predict_load(measured_s, ctx),
        None => measured_s,
    }
}

fn unpack<C: Migratable>(state: Payload, ctx: &mut Ctx) -> Result<Box<dyn AnyChare>, String> {
    let mut c: C = rebuild(&state.take::<Bytes>()?)?;
    c.migrated(ctx);
    Ok(Box::new(Cell(c)))
}

/// A migrated element's state decoded from the bytes it travelled as. Its `Bytes`
/// fields stay views of those bytes, as a message's do: a large block of data is
/// copied once per move (into the state), not twice.
fn rebuild<C: DeserializeOwned>(state: &Bytes) -> Result<C, String> {
    state.decode_in_place(decode_state::<C>)
}

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
    /// True if the job rolled back to an in-memory checkpoint after a PE failed
    /// (`Ctx::checkpoint_in_memory`); `dir` is then empty.
    pub in_memory: bool,
}

/// The length of a chare's encoded state (no hook runs).
pub(crate) type SizeFn = fn(&mut dyn AnyChare) -> Result<u64, String>;
/// Serialize a chare's state into a writer (no hook runs).
pub(crate) type SaveIntoFn = fn(&mut dyn AnyChare, &mut dyn Write) -> Result<(), String>;
/// Rebuild a chare from its state (no hook runs).
pub(crate) type LoadFn = fn(&[u8]) -> Result<Box<dyn AnyChare>, String>;
/// Build PE `pe`'s member of `npes` from every saved member's state.
pub(crate) type RestoreFn = fn(&[&[u8]], Pe, usize) -> Result<Box<dyn AnyChare>, String>;

/// How a checkpoint saves one chare type's state: its encoded length, then the
/// encoding written straight into the checkpoint's writer (a PE file's, or an
/// in-memory copy's), with no buffer of its own per chare.
#[derive(Clone, Copy)]
pub(crate) struct Saver {
    pub(crate) size: SizeFn,
    pub(crate) into: SaveIntoFn,
}

impl Saver {
    /// The functions for type `C`.
    fn of<C: Chare + Serialize>() -> Self {
        Saver {
            size: state_size::<C>,
            into: save_state_into::<C>,
        }
    }
}

/// How one checkpointable group type is saved and rebuilt.
#[derive(Clone, Copy)]
pub(crate) struct Checkpointer {
    pub(crate) save: Saver,
    pub(crate) load: LoadFn,
    pub(crate) restore: RestoreFn,
    pub(crate) any_pe_count: bool,
}

impl Checkpointer {
    /// The functions for type `C`.
    pub(crate) fn of<C: Checkpointable>() -> Self {
        Checkpointer {
            save: Saver::of::<C>(),
            load: load_state::<C>,
            restore: restore::<C>,
            any_pe_count: C::ANY_PE_COUNT,
        }
    }
}

/// The `C` behind `chare`.
fn typed<C: Chare>(chare: &mut dyn AnyChare) -> Result<&mut C, String> {
    match chare.as_any_mut().downcast_mut::<Cell<C>>() {
        Some(Cell(c)) => Ok(c),
        None => Err(format!("the chare is not a {}", std::any::type_name::<C>())),
    }
}

/// The bincode encoding of a `C` (what migration carries).
pub(crate) fn save_state<C: Chare + Serialize>(
    chare: &mut dyn AnyChare,
) -> Result<Vec<u8>, String> {
    bincode::serialize(typed::<C>(chare)?).map_err(|e| e.to_string())
}

/// The length of `save_state`'s bytes, counted without making them.
fn state_size<C: Chare + Serialize>(chare: &mut dyn AnyChare) -> Result<u64, String> {
    bincode::serialized_size(typed::<C>(chare)?).map_err(|e| e.to_string())
}

/// `save_state`'s bytes, written into `out` (what checkpoints carry).
fn save_state_into<C: Chare + Serialize>(
    chare: &mut dyn AnyChare,
    out: &mut dyn Write,
) -> Result<(), String> {
    bincode::serialize_into(out, typed::<C>(chare)?).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::registry::Registry;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize)]
    struct Mover;

    impl Chare for Mover {
        type Init = ();
        type Msg = ();
        fn create(_: (), _: &mut Ctx) -> Self {
            Mover
        }
        fn handle(&mut self, _: (), _: &mut Ctx) {}
    }

    impl Migratable for Mover {}

    #[derive(Serialize, Deserialize)]
    struct Carrier {
        step: u32,
        data: Bytes,
    }

    #[test]
    fn a_moved_elements_bytes_are_views_of_its_state_not_copies() {
        let sent = Carrier {
            step: 3,
            data: Bytes::from(vec![7u8; 70_000]),
        };
        let state = Bytes::from(bincode::serialize(&sent).expect("encodes"));
        let got: Carrier = rebuild(&state).expect("decodes");
        assert_eq!((got.step, got.data.len()), (3, 70_000));
        assert!(got.data.iter().all(|&b| b == 7));
        let (base, at) = (state.as_ptr() as usize, got.data.as_ptr() as usize);
        assert!(
            at > base && at + got.data.len() <= base + state.len(),
            "the data was copied out of the state"
        );
    }

    #[test]
    fn migratability_is_part_of_the_registration_every_process_must_agree_on() {
        let mut moving = Registry::new();
        moving.migratable::<Mover>("Mover");
        let mut upgraded = Registry::new();
        upgraded
            .chare::<Mover>("Mover")
            .migratable::<Mover>("Mover");
        upgraded.migratable::<Mover>("Mover");
        assert_eq!(moving.manifest(), upgraded.manifest());
        assert_eq!(
            moving.manifest().last().map(String::as_str),
            Some("migratable Mover")
        );
        let mut fixed = Registry::new();
        fixed.chare::<Mover>("Mover");
        let err = moving
            .verify_peer(fixed.manifest())
            .expect_err("they differ");
        assert_eq!(err.local, "migratable Mover");
    }
}
