//! Opting array elements into migration: the `Migratable` trait, the errors a move can
//! end in, and the type-erased functions that serialize an element's state on its old
//! PE and rebuild it on its new one.
//!
//! Only types registered with `Registry::migratable` move; every other chare type
//! keeps the plain `Chare` bounds.

use crate::api::chare::{AnyChare, Cell, Chare};
use crate::api::checkpoint::{decode_state, load_state, save_state};
use crate::api::ctx::Ctx;
use crate::api::registry::Migrator;
use crate::base::bytes::Bytes;
use crate::msg::payload::Payload;
use serde::de::DeserializeOwned;
use serde::Serialize;

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

    /// Runs on every element of an array once a balancing step that its
    /// [`Ctx::at_sync`] joined is over, on the PE it was placed on (Charm++'s
    /// `ResumeFromSync`): the element goes on with its next step here.
    fn resume_from_sync(&mut self, _ctx: &mut Ctx) {}
}

pub use crate::base::error::MigrateError;

impl Migrator {
    /// The functions for type `C`.
    pub(crate) fn of<C: Migratable>() -> Self {
        Migrator {
            pack: pack::<C>,
            unpack: unpack::<C>,
            resume: resume::<C>,
            save: save_state::<C>,
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

fn unpack<C: Migratable>(state: Payload, ctx: &mut Ctx) -> Result<Box<dyn AnyChare>, String> {
    let bytes = state.take::<Bytes>()?;
    let mut c: C = decode_state(bytes.as_slice())?;
    c.migrated(ctx);
    Ok(Box::new(Cell(c)))
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
