//! Bad input gets a clear error under both policies, and nothing panics: messages for
//! chares, groups and indices that do not exist, reducer and callback type mismatches,
//! unregistered types, out-of-range PEs and panicking handlers.
//!
//! On mpi an error seen on another rank reaches this one as its text
//! (`RuntimeError::Remote`), so there an error also matches when it is remote and its
//! text says what the typed error would say.

use crate::{config, pes};
use chorus_core::{
    ArrayMap, Callback, Chare, ChareId, ChareProxy, Ctx, Entry, ErrorPolicy, Layer, RedData,
    Reducer, Registry, RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};

/// Does whatever its message asks, to produce each kind of bad input.
struct Culprit;

#[derive(Clone, Serialize, Deserialize)]
enum Act {
    SendToForgedChare,
    SendToMissingIndex,
    MixedReduction(Callback),
    AndOverFloats(Callback),
    FloatToIntegerEntry(Callback),
    CreateUnregistered,
    SendPastTheLastPe(u32),
    Panic,
    Fail,
    ExplodingMap,
    ExplodingReducer(Callback),
    Nothing,
}

/// The custom map and reducer `run` registers first, whose ids are therefore 0.
const EXPLODING_MAP: ArrayMap = ArrayMap::Custom(0);
const EXPLODING_REDUCER: Reducer = Reducer::Custom(0);

fn exploding_map(_: &usize, _: usize) -> u32 {
    panic!("deliberate failure in an array map")
}

fn exploding_reducer(_: RedData, _: RedData) -> Result<RedData, String> {
    panic!("deliberate failure in a reducer")
}

impl Chare for Culprit {
    type Init = ();
    type Msg = Act;
    fn create(_: (), _: &mut Ctx) -> Self {
        Culprit
    }
    fn handle(&mut self, act: Act, ctx: &mut Ctx) {
        match act {
            Act::SendToForgedChare => {
                // A proxy decoded from bytes naming a chare nobody created.
                let id = ChareId {
                    pe: 1,
                    creator: 1,
                    seq: 40,
                };
                let bytes = bincode::serialize(&id).expect("encode id");
                let forged: ChareProxy<Culprit> =
                    bincode::deserialize(&bytes).expect("decode proxy");
                forged.send(ctx, Act::Nothing);
            }
            Act::SendToMissingIndex => {
                let arr = ctx.create_array_1d::<Culprit>(10, (), ArrayMap::Block);
                arr.send(ctx, &5000, Act::Nothing);
            }
            Act::MixedReduction(cb) => {
                if ctx.my_pe() == 1 {
                    ctx.contribute(1.5f64, Reducer::Sum, cb);
                } else {
                    ctx.contribute(1i64, Reducer::Sum, cb);
                }
            }
            Act::AndOverFloats(cb) => ctx.contribute(2.0f64, Reducer::And, cb),
            Act::FloatToIntegerEntry(cb) => ctx.contribute(0.25f64, Reducer::Sum, cb),
            Act::CreateUnregistered => {
                ctx.create_chare::<Unregistered>((), 0);
            }
            Act::SendPastTheLastPe(by) => {
                let g = ctx.this_group::<Culprit>().expect("group member");
                let pe = ctx.num_pes() as u32 + by;
                g.send(ctx, pe, Act::Nothing);
            }
            Act::Panic => panic!("deliberate failure in a handler"),
            Act::Fail => ctx.fail("Culprit", "input it cannot use"),
            Act::ExplodingMap => {
                if ctx.my_pe() == 0 {
                    ctx.create_array_1d::<Target>(6, (), EXPLODING_MAP);
                }
            }
            Act::ExplodingReducer(cb) => ctx.contribute(1u64, EXPLODING_REDUCER, cb),
            Act::Nothing => {}
        }
    }
}

struct Unregistered;

impl Chare for Unregistered {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Unregistered
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// Receives reduction results that should never arrive.
struct Target;

#[derive(Clone, Serialize, Deserialize)]
enum TargetMsg {
    Int(u64),
}

impl Chare for Target {
    type Init = ();
    type Msg = TargetMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Target
    }
    fn handle(&mut self, TargetMsg::Int(v): TargetMsg, ctx: &mut Ctx) {
        ctx.publish("delivered", &v);
    }
}

/// The PE count of these jobs: 3, or the world size on mpi.
fn job_pes(layer: Layer) -> u32 {
    pes(layer, 3)
}

fn run(
    layer: Layer,
    policy: ErrorPolicy,
    act: impl Fn(Callback) -> Act + Send + 'static,
) -> Result<RunReport, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Culprit>("Culprit").chare::<Target>("Target");
    assert_eq!(reg.map("exploding", exploding_map), EXPLODING_MAP);
    assert_eq!(
        reg.reducer("exploding", exploding_reducer),
        EXPLODING_REDUCER
    );
    let int: Entry<Target, u64> = reg.entry("Target::int", TargetMsg::Int);
    let p = job_pes(layer);
    Runtime::new(reg, config(layer, p, policy)).run(move |ctx| {
        let target = ctx.create_chare::<Target>((), 2 % p);
        let group = ctx.create_group::<Culprit>(());
        group.broadcast(ctx, act(Callback::chare(&target, int)));
        ctx.exit_on_quiescence();
    })
}

/// True if `e` is the expected error: it `matches`, or on mpi it came from another
/// rank as text that `says` what the typed error says.
fn is_expected(
    layer: Layer,
    e: &RuntimeError,
    matches: &dyn Fn(&RuntimeError) -> bool,
    says: &str,
) -> bool {
    matches(e)
        || (layer == Layer::Mpi && matches!(e, RuntimeError::Remote(text) if text.contains(says)))
}

/// Under `abort` the run returns the error; under `drop` it completes and lists it.
fn both_policies(
    layer: Layer,
    act: fn(Callback) -> Act,
    matches: &dyn Fn(&RuntimeError) -> bool,
    says: &str,
) {
    let err =
        run(layer, ErrorPolicy::Abort, act).expect_err("abort policy ends the job with the error");
    assert!(
        is_expected(layer, &err, matches, says),
        "unexpected error: {err:?}"
    );
    assert!(
        err.to_string().contains(says),
        "'{err}' should say '{says}'"
    );

    let report = run(layer, ErrorPolicy::Drop, act).expect("drop policy completes the job");
    let errors = report.errors();
    assert!(!errors.is_empty(), "drop policy records the error");
    assert!(
        errors.iter().all(|e| is_expected(layer, e, matches, says)),
        "{errors:?}"
    );
    assert_eq!(
        report.output::<u64>("delivered"),
        None,
        "nothing bogus was delivered"
    );
}

/// A message for a chare that does not exist.
pub fn a_message_for_a_chare_that_does_not_exist(layer: Layer) {
    both_policies(
        layer,
        |_| Act::SendToForgedChare,
        &|e| matches!(e, RuntimeError::UnknownChare { pe: 1, .. }),
        "does not exist",
    );
}

/// A message for an array index that does not exist.
pub fn a_message_for_an_array_index_that_does_not_exist(layer: Layer) {
    both_policies(
        layer,
        |_| Act::SendToMissingIndex,
        &|e| matches!(e, RuntimeError::UnknownArrayIndex { .. }),
        "has no such element",
    );
}

/// Contributions of different types to one reduction.
pub fn contributions_of_different_types_to_one_reduction(layer: Layer) {
    both_policies(
        layer,
        Act::MixedReduction,
        &|e| matches!(e, RuntimeError::ReducerMismatch { .. }),
        "cannot combine",
    );
}

/// A reducer that does not apply to the values contributed.
pub fn a_reducer_that_does_not_apply_to_the_values(layer: Layer) {
    both_policies(
        layer,
        Act::AndOverFloats,
        &|e| matches!(e, RuntimeError::ReducerMismatch { .. }),
        "does not apply to f64",
    );
}

/// A reduction result of the wrong type for the callback entry.
pub fn a_result_of_the_wrong_type_for_the_callback_entry(layer: Layer) {
    both_policies(
        layer,
        Act::FloatToIntegerEntry,
        &|e| matches!(e, RuntimeError::CallbackType { .. }),
        "Target::int",
    );
}

/// Creating a chare of an unregistered type.
pub fn creating_an_unregistered_chare_type(layer: Layer) {
    both_policies(
        layer,
        |_| Act::CreateUnregistered,
        &|e| matches!(e, RuntimeError::UnregisteredChare { .. }),
        "is not registered",
    );
}

/// Sending to a PE outside the job.
pub fn sending_to_a_pe_outside_the_job(layer: Layer) {
    let p = job_pes(layer);
    let beyond = p + 5;
    both_policies(
        layer,
        |_| Act::SendPastTheLastPe(5),
        &move |e| {
            matches!(
                e,
                RuntimeError::PeOutOfRange { to, num_pes, .. } if *to == beyond && *num_pes == p as usize
            )
        },
        "out of range",
    );
}

/// A panicking handler becomes an error.
pub fn a_panicking_handler_becomes_an_error(layer: Layer) {
    both_policies(
        layer,
        |_| Act::Panic,
        &|e| matches!(e, RuntimeError::HandlerPanic { message, .. } if message.contains("deliberate")),
        "panicked",
    );
}

/// An error a handler reports with `ctx.fail` follows the policy like the runtime's own.
pub fn an_error_a_handler_reports_follows_the_policy(layer: Layer) {
    both_policies(
        layer,
        |_| Act::Fail,
        &|e| matches!(e, RuntimeError::Reported { by, message, .. } if by == "Culprit" && message == "input it cannot use"),
        "Culprit: input it cannot use",
    );
}

/// A panicking array map ends the job (or is dropped) with an error naming the map,
/// on whichever PE places the elements, instead of killing the PE.
pub fn a_panicking_array_map_becomes_an_error(layer: Layer) {
    both_policies(
        layer,
        |_| Act::ExplodingMap,
        &|e| e.to_string().contains("array map exploding panicked"),
        "deliberate failure in an array map",
    );
}

/// A panicking custom reducer ends the job (or is dropped) with an error naming the
/// reducer, wherever partial results meet, instead of blocking the tree.
pub fn a_panicking_custom_reducer_becomes_an_error(layer: Layer) {
    both_policies(
        layer,
        Act::ExplodingReducer,
        &|e| e.to_string().contains("custom reducer 0 panicked"),
        "deliberate failure in a reducer",
    );
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "a_message_for_a_chare_that_does_not_exist",
        a_message_for_a_chare_that_does_not_exist,
    ),
    (
        "a_message_for_an_array_index_that_does_not_exist",
        a_message_for_an_array_index_that_does_not_exist,
    ),
    (
        "contributions_of_different_types_to_one_reduction",
        contributions_of_different_types_to_one_reduction,
    ),
    (
        "a_reducer_that_does_not_apply_to_the_values",
        a_reducer_that_does_not_apply_to_the_values,
    ),
    (
        "a_result_of_the_wrong_type_for_the_callback_entry",
        a_result_of_the_wrong_type_for_the_callback_entry,
    ),
    (
        "creating_an_unregistered_chare_type",
        creating_an_unregistered_chare_type,
    ),
    (
        "sending_to_a_pe_outside_the_job",
        sending_to_a_pe_outside_the_job,
    ),
    (
        "a_panicking_handler_becomes_an_error",
        a_panicking_handler_becomes_an_error,
    ),
    (
        "an_error_a_handler_reports_follows_the_policy",
        an_error_a_handler_reports_follows_the_policy,
    ),
    (
        "a_panicking_array_map_becomes_an_error",
        a_panicking_array_map_becomes_an_error,
    ),
    (
        "a_panicking_custom_reducer_becomes_an_error",
        a_panicking_custom_reducer_becomes_an_error,
    ),
];
