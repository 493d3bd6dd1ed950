//! Running user code (handlers, constructors, maps, reducers) so that a panic or
//! an error becomes the job's `--on-error` policy instead of unwinding the PE.

use super::digest::DeliveryLog;
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

/// Run a chare on a payload, first mixing it into `log` if the PE keeps one;
/// returns the messages of a run it stopped before.
pub(super) fn invoke(
    core: &mut PeCore,
    log: &mut Option<Box<DeliveryLog>>,
    current: Current,
    chare: &mut dyn AnyChare,
    payload: Payload,
) -> Option<Payload> {
    if let Some(log) = log {
        log.record(core.port.now(), core.me, target(&current), &payload);
    }
    let element = matches!(current, Current::Element(..));
    core.current = current;
    let measuring = core.syncs.measuring();
    let t0 = if measuring { core.port.now() } else { 0.0 };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        chare.deliver(payload, &mut Ctx { core: &mut *core })
    }));
    if measuring {
        let took = core.port.now() - t0;
        core.syncs.ran(took, element);
    }
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

/// The receiving chare as the delivery digest names it: a kind, an id and the
/// element's index bytes.
fn target(current: &Current) -> (u64, u64, &[u8]) {
    let coll = |c: &crate::base::ids::CollectionId| u64::from(c.creator) << 32 | u64::from(c.seq);
    match current {
        Current::Main => (0, 0, &[]),
        // The kind's upper bits hold the chare's sequence number.
        Current::Chare(id) => (
            1 | u64::from(id.seq) << 8,
            u64::from(id.pe) << 32 | u64::from(id.creator),
            &[],
        ),
        Current::Group(c) => (2, coll(c), &[]),
        Current::Element(c, addr) => (3, coll(c), addr.key.as_bytes()),
    }
}
