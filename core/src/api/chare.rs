//! The chare trait and its type-erased form.

use crate::api::ctx::Ctx;
use crate::base::error::panic_message;
use crate::base::error::RuntimeError;
use crate::msg::payload::{Message, Payload};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

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

    /// What this chare started and will not finish, asked when the job ends at
    /// quiescence (a collective or split still waiting for other PEs' parts): one line
    /// each, the same words on every PE for the same thing, so the run's report can
    /// say on how many PEs each was left (`RunReport::unfinished_collectives`).
    fn unfinished(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A chare whose type only its vtable knows.
pub(crate) trait AnyChare: Send {
    /// Handle a message, or a run of them; returns the part of a run left for later
    /// because the PE must attend to something more urgent.
    fn deliver(&mut self, payload: Payload, ctx: &mut Ctx)
        -> Result<Option<Payload>, RuntimeError>;
    fn type_name(&self) -> &'static str;
    /// `Chare::unfinished` of the chare inside.
    fn unfinished(&self) -> Vec<String>;
    /// The concrete cell, for the migration functions of its type to downcast.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A chare of a known type behind `AnyChare`.
pub(crate) struct Cell<C>(pub(crate) C);

impl<C: Chare> Cell<C> {
    fn wrong_type(ctx: &Ctx) -> RuntimeError {
        RuntimeError::WrongMessageType {
            pe: ctx.my_pe(),
            chare: std::any::type_name::<C>(),
            expected: std::any::type_name::<C::Msg>(),
        }
    }
}

impl<C: Chare> AnyChare for Cell<C> {
    fn deliver(
        &mut self,
        payload: Payload,
        ctx: &mut Ctx,
    ) -> Result<Option<Payload>, RuntimeError> {
        let from_wire = matches!(payload, Payload::Bytes(_) | Payload::RunBytes(_));
        // Bytes that do not decode are a decoding error; a moved value of another
        // type is a message sent to the wrong chare.
        let bad = |ctx: &Ctx, reason: String| {
            if from_wire {
                RuntimeError::Decode {
                    pe: ctx.my_pe(),
                    what: format!("a message for {}", std::any::type_name::<C>()),
                    reason,
                }
            } else {
                Self::wrong_type(ctx)
            }
        };
        // Traced entries start before decoding, which is part of their cost; a run of
        // messages is one slice named after its first message.
        let traced_at = ctx.core.trace_entry_ts();
        if !payload.is_run() {
            let msg = payload.take::<C::Msg>().map_err(|e| bad(ctx, e))?;
            if let (Some(ts), Some(t)) = (traced_at, ctx.core.trace_mut()) {
                t.entry_begin::<C, _>(ts, &msg);
            }
            self.0.handle(msg, ctx);
            return Ok(None);
        }
        let msgs = payload.take_run::<C::Msg>().map_err(|e| bad(ctx, e))?;
        if let (Some(ts), Some(t), Some(first)) = (traced_at, ctx.core.trace_mut(), msgs.first()) {
            t.entry_begin::<C, _>(ts, first);
        }
        let mut msgs = msgs.into_iter();
        loop {
            // One unwind guard for the whole run: entering one per message cost more
            // than a small handler. Each message still fails alone, as it would have
            // on its own: after a panic the run goes on with the next message.
            let stopped = catch_unwind(AssertUnwindSafe(|| {
                for msg in msgs.by_ref() {
                    self.0.handle(msg, ctx);
                    if ctx.core.should_yield() {
                        return true;
                    }
                }
                false
            }));
            let stopped = stopped.unwrap_or_else(|p| {
                let err = RuntimeError::HandlerPanic {
                    pe: ctx.my_pe(),
                    chare: std::any::type_name::<C>().to_string(),
                    message: panic_message(p),
                };
                ctx.core.fail(err);
                ctx.core.should_yield()
            });
            if stopped {
                let rest: Vec<C::Msg> = msgs.collect();
                return Ok((!rest.is_empty()).then(|| Payload::Run(Box::new(rest))));
            }
            if msgs.len() == 0 {
                return Ok(None);
            }
        }
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<C>()
    }

    fn unfinished(&self) -> Vec<String> {
        self.0.unfinished()
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Build a chare of type `C` from an erased init payload.
pub(crate) fn construct<C: Chare>(
    init: Payload,
    ctx: &mut Ctx,
) -> Result<Box<dyn AnyChare>, RuntimeError> {
    if let Some(ts) = ctx.core.trace_entry_ts() {
        if let Some(t) = ctx.core.trace_mut() {
            t.create_begin::<C>(ts);
        }
    }
    let init = init
        .take::<C::Init>()
        .map_err(|reason| RuntimeError::Decode {
            pe: ctx.my_pe(),
            what: format!("init arguments of {}", std::any::type_name::<C>()),
            reason,
        })?;
    Ok(Box::new(Cell(C::create(init, ctx))))
}
