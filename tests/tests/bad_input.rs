//! Bad input gets a clear error under both policies, and nothing panics: messages for
//! chares, groups and indices that do not exist, reducer and callback type mismatches,
//! unregistered types, out-of-range PEs, panicking handlers, errors handlers report,
//! registry mismatches and wrong configuration values.
//!
//! The layer-parameterized bodies live in `chorus_tests::suite::bad_input`; the
//! registry and configuration checks here need no runtime layer.

use chorus_core::{Chare, Config, Ctx, ErrorPolicy, Registry, Runtime};
use chorus_tests::{layers, suite::bad_input};
use clap::Parser;

#[test]
fn a_message_for_a_chare_that_does_not_exist() {
    for layer in layers() {
        bad_input::a_message_for_a_chare_that_does_not_exist(layer);
    }
}

#[test]
fn a_message_for_an_array_index_that_does_not_exist() {
    for layer in layers() {
        bad_input::a_message_for_an_array_index_that_does_not_exist(layer);
    }
}

#[test]
fn a_panicking_array_map_becomes_an_error() {
    for layer in layers() {
        bad_input::a_panicking_array_map_becomes_an_error(layer);
    }
}

#[test]
fn a_panicking_custom_reducer_becomes_an_error() {
    for layer in layers() {
        bad_input::a_panicking_custom_reducer_becomes_an_error(layer);
    }
}

#[test]
fn contributions_of_different_types_to_one_reduction() {
    for layer in layers() {
        bad_input::contributions_of_different_types_to_one_reduction(layer);
    }
}

#[test]
fn a_reducer_that_does_not_apply_to_the_values() {
    for layer in layers() {
        bad_input::a_reducer_that_does_not_apply_to_the_values(layer);
    }
}

#[test]
fn a_result_of_the_wrong_type_for_the_callback_entry() {
    for layer in layers() {
        bad_input::a_result_of_the_wrong_type_for_the_callback_entry(layer);
    }
}

#[test]
fn creating_an_unregistered_chare_type() {
    for layer in layers() {
        bad_input::creating_an_unregistered_chare_type(layer);
    }
}

#[test]
fn sending_to_a_pe_outside_the_job() {
    for layer in layers() {
        bad_input::sending_to_a_pe_outside_the_job(layer);
    }
}

#[test]
fn a_panicking_handler_becomes_an_error() {
    for layer in layers() {
        bad_input::a_panicking_handler_becomes_an_error(layer);
    }
}

#[test]
fn an_error_a_handler_reports_follows_the_policy() {
    for layer in layers() {
        bad_input::an_error_a_handler_reports_follows_the_policy(layer);
    }
}

/// A chare type for the registry comparisons.
struct Culprit;

impl Chare for Culprit {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Culprit
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// Another chare type for the registry comparisons.
struct Target;

impl Chare for Target {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Target
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
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
        (vec!["x", "--pes", "many"], "--pes"),
        (vec!["x", "--layer", "quantum"], "--layer"),
        (vec!["x", "--on-error", "ignore"], "--on-error"),
        (vec!["x", "--bogus"], "--bogus"),
    ] {
        let err = Cli::try_parse_from(&args).expect_err("invalid");
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
    // Ranges are checked once, by `Config::validate`, for flags and code alike.
    for (args, says) in [
        (
            vec!["x", "--pes", "0"],
            "--pes must be in 1..=16777216, got 0",
        ),
        (
            vec!["x", "--tree-arity", "1"],
            "--tree-arity must be in 2..=64",
        ),
        (
            vec!["x", "--pes-per-rank", "0"],
            "--pes-per-rank must be in 1..=256",
        ),
    ] {
        let c = Cli::try_parse_from(&args).expect("parses").chorus;
        let err = c.validate().expect_err("invalid").to_string();
        assert!(err.contains(says), "{args:?}: {err}");
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

    let err = Runtime::new(
        Registry::new(),
        Config {
            pes_per_rank: 2,
            ..Config::default()
        },
    )
    .run(|_| {})
    .expect_err("PEs per rank off mpi");
    assert!(
        err.to_string()
            .contains("--pes-per-rank 2 needs --layer mpi"),
        "{err}"
    );
}
