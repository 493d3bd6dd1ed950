//! The chare trait and its type-erased form.

use crate::ctx::Ctx;
use crate::error::RuntimeError;
use crate::message::{Message, Payload};

/// A message-driven object that lives on one PE and reacts to messages.
pub trait Chare: Sized + Send + 'static {
    /// Arguments a new instance is built from (sent to the PE that builds it).
    type Init: Message;
    /// The chare's entry methods, usually an enum.
    type Msg: Message;

    /// Build an instance on its PE.
    fn create(init: Self::Init, ctx: &mut Ctx) -> Self;

    /// Run the entry method a message names.
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Ctx);
}

/// A chare whose type only its vtable knows.
pub(crate) trait AnyChare: Send {
    fn deliver(&mut self, payload: Payload, ctx: &mut Ctx) -> Result<(), RuntimeError>;
    fn type_name(&self) -> &'static str;
}

struct Cell<C>(C);

impl<C: Chare> AnyChare for Cell<C> {
    fn deliver(&mut self, payload: Payload, ctx: &mut Ctx) -> Result<(), RuntimeError> {
        let msg = payload
            .take::<C::Msg>()
            .map_err(|_| RuntimeError::WrongMessageType {
                pe: ctx.my_pe(),
                chare: std::any::type_name::<C>(),
                expected: std::any::type_name::<C::Msg>(),
            })?;
        self.0.handle(msg, ctx);
        Ok(())
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<C>()
    }
}

/// Build a chare of type `C` from an erased init payload.
pub(crate) fn construct<C: Chare>(
    init: Payload,
    ctx: &mut Ctx,
) -> Result<Box<dyn AnyChare>, RuntimeError> {
    let init = init
        .take::<C::Init>()
        .map_err(|reason| RuntimeError::Decode {
            pe: ctx.my_pe(),
            what: format!("init arguments of {}", std::any::type_name::<C>()),
            reason,
        })?;
    Ok(Box::new(Cell(C::create(init, ctx))))
}
