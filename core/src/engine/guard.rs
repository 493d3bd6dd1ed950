//! Running user code (handlers, constructors, maps, reducers) so that a panic or
//! an error becomes the job's `--on-error` policy instead of unwinding the PE.

use super::{Current, PeCore};
use crate::api::chare::AnyChare;
use crate::api::ctx::Ctx;
use crate::base::error::panic_message;
use crate::base::error::RuntimeError;
use crate::msg::payload::Payload;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `f` as the chare `current`, turning a panic or an error into the job's policy.
pub(super) fn guarded<R>(
    core: &mut PeCore,
    current: Current,
    name: &str,
    f: impl FnOnce(&mut Ctx) -> Result<R, RuntimeError>,
) -> Option<R> {
    core.current = current;
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut Ctx { core: &mut *core })));
    core.current = Current::Main;
    core.trace_entries_end();
    match outcome {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            core.fail(e);
            None
        }
        Err(p) => {
            let message = panic_message(p);
            core.fail(RuntimeError::HandlerPanic {
                pe: core.me,
                chare: name.to_string(),
                message,
            });
            None
        }
    }
}

/// Run a chare on a payload; returns the messages of a run it stopped before.
pub(super) fn invoke(
    core: &mut PeCore,
    current: Current,
    chare: &mut dyn AnyChare,
    payload: Payload,
) -> Option<Payload> {
    core.current = current;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        chare.deliver(payload, &mut Ctx { core: &mut *core })
    }));
    core.current = Current::Main;
    core.trace_entries_end();
    match outcome {
        Ok(Ok(rest)) => rest,
        Ok(Err(e)) => {
            core.fail(e);
            None
        }
        Err(p) => {
            let err = RuntimeError::HandlerPanic {
                pe: core.me,
                chare: chare.type_name().to_string(),
                message: panic_message(p),
            };
            core.fail(err);
            None
        }
    }
}
