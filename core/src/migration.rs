//! Opting array elements into migration: the `Migratable` trait, the errors a move can
//! end in, and the type-erased functions that serialize an element's state on its old
//! PE and rebuild it on its new one.
//!
//! Only types registered with `Registry::migratable` move; every other chare type
//! keeps the plain `Chare` bounds.

use crate::bytes::Bytes;
use crate::chare::{AnyChare, Cell, Chare};
use crate::ctx::Ctx;
use crate::ids::Pe;
use crate::message::Payload;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// An array element type whose state can move to another PE with [`Ctx::migrate_me`].
///
/// The state travels as its bincode encoding (on every layer, so what works on
/// threads works across MPI ranks); register the type with `Registry::migratable`.
pub trait Migratable: Chare + Serialize + DeserializeOwned {
    /// Runs on the old PE just before the state is serialized (Charm++'s
    /// `ckAboutToMigrate`).
    fn about_to_migrate(&mut self, _ctx: &mut Ctx) {}

    /// Runs on the new PE right after the state is rebuilt, before any message reaches
    /// it (Charm++'s `ckJustMigrated`).
    fn migrated(&mut self, _ctx: &mut Ctx) {}
}

/// Why an array element could not move; it stays where it was unless the error says
/// its state was lost.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum MigrateError {
    /// `migrate_me` was called from something that is not an array element.
    #[error("only array elements migrate, and the running handler belongs to {0}")]
    NotAnElement(String),
    /// The element's type was registered with `Registry::chare`, not `migratable`.
    #[error("chare type {chare} is not migratable: register it with Registry::migratable (it must implement Migratable)")]
    NotMigratable {
        /// Registered name of the element's type.
        chare: String,
    },
    /// The destination PE does not exist.
    #[error("PE {to} does not exist (the job has {num_pes} PEs)")]
    NoSuchPe {
        /// The requested destination.
        to: Pe,
        /// PEs in the job.
        num_pes: usize,
    },
    /// `migrate_me` was called while the element was already leaving (from its
    /// `about_to_migrate`); the move under way goes on.
    #[error("it is already leaving this PE (migrate_me was called from about_to_migrate)")]
    Leaving,
    /// The element was no longer on its PE when its move was due.
    #[error("it is no longer on this PE")]
    NotHere,
    /// The element has moved `u32::MAX` times, so its moves can no longer be ordered;
    /// it stays on its PE.
    #[error("it has moved {0} times, the most a move counter holds")]
    TooManyMoves(u32),
    /// An element with the same index was already on the PE it moved to: the arriving
    /// state is dropped and the resident element kept.
    #[error(
        "an element with the same index is already on PE {pe}, so the arriving state was dropped"
    )]
    Occupied {
        /// The PE it moved to.
        pe: Pe,
    },
    /// Serializing the state failed; the element stays on its PE.
    #[error("its state did not serialize: {0}")]
    Pack(String),
    /// Rebuilding the state on the new PE failed; the element is lost.
    #[error("its state did not deserialize on the new PE (the element is lost): {0}")]
    Unpack(String),
    /// At quiescence, messages were still waiting for the element on the PE it was
    /// moving to: it never arrived (its state was lost), so they are not delivered.
    #[error("it never arrived on PE {pe}, so {messages} message(s) that followed it there were not delivered")]
    Lost {
        /// The PE it was moving to.
        pe: Pe,
        /// Messages that waited for it.
        messages: u64,
    },
}

/// Serialize an element in place (its `about_to_migrate` runs first).
pub(crate) type PackFn = fn(&mut dyn AnyChare, &mut Ctx) -> Result<Payload, String>;
/// Rebuild an element from its state (its `migrated` runs after).
pub(crate) type UnpackFn = fn(Payload, &mut Ctx) -> Result<Box<dyn AnyChare>, String>;

/// How one migratable chare type moves.
#[derive(Clone, Copy)]
pub(crate) struct Migrator {
    pub(crate) pack: PackFn,
    pub(crate) unpack: UnpackFn,
}

impl Migrator {
    /// The functions for type `C`.
    pub(crate) fn of<C: Migratable>() -> Self {
        Migrator {
            pack: pack::<C>,
            unpack: unpack::<C>,
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
    let state = bincode::serialize(c).map_err(|e| e.to_string())?;
    // `Bytes` crosses a process boundary without being copied into the envelope.
    Ok(Payload::new(Bytes::from(state)))
}

fn unpack<C: Migratable>(state: Payload, ctx: &mut Ctx) -> Result<Box<dyn AnyChare>, String> {
    let bytes = state.take::<Bytes>()?;
    let mut c: C = bincode::deserialize(bytes.as_slice()).map_err(|e| {
        format!(
            "{} bytes are not a {}: {e}",
            bytes.len(),
            std::any::type_name::<C>()
        )
    })?;
    c.migrated(ctx);
    Ok(Box::new(Cell(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
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
