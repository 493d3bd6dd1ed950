//! Bad input gets a clear error under both policies, and nothing panics: messages for
//! chares, groups and indices that do not exist, reducer and callback type mismatches,
//! unregistered types, out-of-range PEs, panicking handlers, registry mismatches and
//! wrong configuration values.

use chorus_core::{
    ArrayMap, Callback, Chare, ChareId, ChareProxy, Config, Ctx, Entry, ErrorPolicy, Layer,
    Reducer, Registry, RunReport, Runtime, RuntimeError,
};
use chorus_tests::{config, layers};
use clap::Parser;
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
    SendToPe(u32),
    Panic,
    Nothing,
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
            Act::SendToPe(pe) => {
                let g = ctx.this_group::<Culprit>().expect("group member");
                g.send(ctx, pe, Act::Nothing);
            }
            Act::Panic => panic!("deliberate failure in a handler"),
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

fn run(
    layer: Layer,
    policy: ErrorPolicy,
    act: impl Fn(Callback) -> Act + Send + 'static,
) -> Result<RunReport, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Culprit>("Culprit").chare::<Target>("Target");
    let int: Entry<Target, u64> = reg.entry("Target::int", TargetMsg::Int);
    Runtime::new(reg, config(layer, 3, policy)).run(move |ctx| {
        let target = ctx.create_chare::<Target>((), 2);
        let group = ctx.create_group::<Culprit>(());
        group.broadcast(ctx, act(Callback::chare(&target, int)));
        ctx.exit_on_quiescence();
    })
}

/// Under `abort` the run returns the error; under `drop` it completes and lists it.
fn both_policies(act: fn(Callback) -> Act, matches: fn(&RuntimeError) -> bool, says: &str) {
    for layer in layers() {
        let err = run(layer, ErrorPolicy::Abort, act)
            .expect_err("abort policy ends the job with the error");
        assert!(matches(&err), "unexpected error: {err:?}");
        assert!(
            err.to_string().contains(says),
            "'{err}' should say '{says}'"
        );

        let report = run(layer, ErrorPolicy::Drop, act).expect("drop policy completes the job");
        let errors = report.errors();
        assert!(!errors.is_empty(), "drop policy records the error");
        assert!(errors.iter().all(|e| matches(e)), "{errors:?}");
        assert_eq!(
            report.output::<u64>("delivered"),
            None,
            "nothing bogus was delivered"
        );
    }
}

#[test]
fn a_message_for_a_chare_that_does_not_exist() {
    both_policies(
        |_| Act::SendToForgedChare,
        |e| matches!(e, RuntimeError::UnknownChare { pe: 1, .. }),
        "does not exist",
    );
}

#[test]
fn a_message_for_an_array_index_that_does_not_exist() {
    both_policies(
        |_| Act::SendToMissingIndex,
        |e| matches!(e, RuntimeError::UnknownArrayIndex { .. }),
        "has no such element",
    );
}

#[test]
fn contributions_of_different_types_to_one_reduction() {
    both_policies(
        Act::MixedReduction,
        |e| matches!(e, RuntimeError::ReducerMismatch { .. }),
        "cannot combine",
    );
}

#[test]
fn a_reducer_that_does_not_apply_to_the_values() {
    both_policies(
        Act::AndOverFloats,
        |e| matches!(e, RuntimeError::ReducerMismatch { .. }),
        "does not apply to f64",
    );
}

#[test]
fn a_result_of_the_wrong_type_for_the_callback_entry() {
    both_policies(
        Act::FloatToIntegerEntry,
        |e| matches!(e, RuntimeError::CallbackType { .. }),
        "Target::int",
    );
}

#[test]
fn creating_an_unregistered_chare_type() {
    both_policies(
        |_| Act::CreateUnregistered,
        |e| matches!(e, RuntimeError::UnregisteredChare { .. }),
        "is not registered",
    );
}

#[test]
fn sending_to_a_pe_outside_the_job() {
    both_policies(
        |_| Act::SendToPe(7),
        |e| {
            matches!(
                e,
                RuntimeError::PeOutOfRange {
                    to: 7,
                    num_pes: 3,
                    ..
                }
            )
        },
        "out of range",
    );
}

#[test]
fn a_panicking_handler_becomes_an_error() {
    both_policies(
        |_| Act::Panic,
        |e| matches!(e, RuntimeError::HandlerPanic { message, .. } if message.contains("deliberate")),
        "panicked",
    );
}

#[test]
fn registries_that_differ_name_the_first_difference() {
    let mut a = Registry::new();
    a.chare::<Culprit>("Culprit").chare::<Target>("Target");
    let mut b = Registry::new();
    b.chare::<Target>("Target").chare::<Culprit>("Culprit");
    assert_ne!(a.digest(), b.digest());
    let err = a.verify_peer(b.manifest()).expect_err("order differs");
    assert_eq!(err.index, 0);
    assert!(
        err.local.contains("Culprit") && err.remote.contains("Target"),
        "{err}"
    );
    assert!(err.to_string().contains("same order"), "{err}");

    let mut c = Registry::new();
    c.chare::<Culprit>("Culprit");
    let err = a
        .verify_peer(c.manifest())
        .expect_err("c has fewer entries");
    assert_eq!((err.index, err.remote.as_str()), (1, "<none>"));

    let mut d = Registry::new();
    d.chare::<Culprit>("Culprit").chare::<Target>("Target");
    assert_eq!(a.digest(), d.digest());
    assert!(a.verify_peer(d.manifest()).is_ok());
}

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    chorus: Config,
}

#[test]
fn wrong_configuration_values_are_rejected_with_the_flag_named() {
    for (args, says) in [
        (vec!["x", "--pes", "0"], "--pes"),
        (vec!["x", "--pes", "many"], "--pes"),
        (vec!["x", "--layer", "quantum"], "--layer"),
        (vec!["x", "--tree-arity", "1"], "--tree-arity"),
        (vec!["x", "--on-error", "ignore"], "--on-error"),
        (vec!["x", "--bogus"], "--bogus"),
    ] {
        let err = Cli::try_parse_from(&args).expect_err("invalid");
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
    let ok = Cli::try_parse_from(["x", "--pes", "8", "--on-error", "drop", "--work", "spin"])
        .expect("valid");
    assert_eq!(ok.chorus.pes, 8);
    assert_eq!(ok.chorus.on_error, ErrorPolicy::Drop);

    let err = Runtime::new(
        Registry::new(),
        Config {
            pes: 0,
            ..Config::default()
        },
    )
    .run(|_| {})
    .expect_err("zero PEs");
    assert!(err.to_string().contains("--pes"), "{err}");
}
