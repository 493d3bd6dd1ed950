//! A port of Charm++'s conformance suite, `tests/charm++/megatest`: one module per
//! original test whose feature chorus has, named after it and reimplemented in
//! chorus's API from what the original checks (its assertions, not its text). Every
//! test is a `pub fn name(layer: Layer)` that panics on failure, so the cargo test
//! `tests/tests/megatest.rs` runs it on threads and sim and `chorus-suite` on mpi.
//! `README.md` beside this file lists the originals not ported and why.

use crate::{config, pes_each};
use chorus_core::{Callback, Ctx, ErrorPolicy, IntoRegistry, Layer, Reducible, Runtime};

pub mod arrayring;
pub mod callback;
pub mod fib;
pub mod groupcast;
pub mod groupring;
pub mod marshall;
pub mod migration;
pub mod packtest;
pub mod priomsg;
pub mod priotest;
pub mod queens;
pub mod reduction;
pub mod rotest;
pub mod synctest;
pub mod templates;
pub mod varraystest;
pub mod varsizetest;
pub mod varsizetest2;

/// The PE counts every megatest runs on (on mpi: the world size once).
const PES: &[u32] = &[1, 2, 5];

/// The PE counts of `PES` for `layer`, keeping those of at least `min` PEs.
fn pe_counts(layer: Layer, min: u32) -> Vec<u32> {
    pes_each(layer, PES)
        .into_iter()
        .filter(|&p| p >= min)
        .collect()
}

/// Run `main` on `pes` PEs of `layer` with `registrations`, any error aborting the
/// job, and return the one value delivered to main's callback.
fn run_for<T: Reducible>(
    layer: Layer,
    pes: u32,
    registrations: impl IntoRegistry,
    main: impl FnOnce(&mut Ctx, Callback) + Send + 'static,
) -> T {
    Runtime::new(
        registrations.into_registry(),
        config(layer, pes, ErrorPolicy::Abort),
    )
    .run_for(main)
    .unwrap_or_else(|e| panic!("megatest on {pes} PEs of {layer:?}: {e}"))
}

/// Every ported megatest, by its original's name.
pub const TESTS: &[super::suite::Test] = &[
    ("arrayring", arrayring::arrayring),
    ("callback", callback::callback),
    ("fib", fib::fib),
    ("groupcast", groupcast::groupcast),
    ("groupring", groupring::groupring),
    ("marshall", marshall::marshall),
    ("migration", migration::migration),
    ("packtest", packtest::packtest),
    ("priomsg", priomsg::priomsg),
    ("priotest", priotest::priotest),
    ("queens", queens::queens),
    ("reduction", reduction::reduction),
    ("rotest", rotest::rotest),
    ("synctest", synctest::synctest),
    ("templates", templates::templates),
    ("varraystest", varraystest::varraystest),
    ("varsizetest", varsizetest::varsizetest),
    ("varsizetest2", varsizetest2::varsizetest2),
];
