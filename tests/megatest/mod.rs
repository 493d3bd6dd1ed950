//! A port of Charm++'s conformance suite, `tests/charm++/megatest`: one module per
//! original test whose feature chorus has, named after it and reimplemented in
//! chorus's API from what the original checks (its assertions, not its text). Every
//! test is a `pub fn name(layer: Layer)` that panics on failure, so the cargo test
//! `tests/tests/megatest.rs` runs it on threads and sim and `chorus-suite` on mpi.
//! `README.md` beside this file lists the originals not ported and why.

use crate::{config, pes, pes_each, pes_per_rank};
use chorus_core::{Callback, Ctx, ErrorPolicy, IntoRegistry, Layer, Reducible, Runtime};

pub mod arrayring;
pub mod callback;
pub mod fib;
pub mod groupcast;
pub mod groupring;
pub mod marshall;
pub mod migration;
pub mod nodecast;
pub mod nodering;
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
    run_on_nodes(layer, (pes, 1), registrations, main)
}

/// The (PEs, PEs per node) shapes the nodegroup megatests run on: on threads and sim
/// one PE per node, then nodes of 2 and 3 PEs (5 PEs by 2 leaves a last node of one);
/// on mpi the world once, a node being a rank (`CHORUS_PES_PER_RANK` PEs).
fn node_shapes(layer: Layer) -> Vec<(u32, u32)> {
    match layer {
        Layer::Mpi => vec![(pes(layer, 2), pes_per_rank(layer))],
        Layer::Threads | Layer::Sim => vec![(1, 1), (2, 1), (5, 1), (4, 2), (5, 2), (6, 3)],
    }
}

/// `run_for` on `shape`'s PEs grouped into nodes of `shape.1` PEs (`--pes-per-node`;
/// on mpi the ranks decide, and `shape.1` is only reported).
fn run_on_nodes<T: Reducible>(
    layer: Layer,
    shape: (u32, u32),
    registrations: impl IntoRegistry,
    main: impl FnOnce(&mut Ctx, Callback) + Send + 'static,
) -> T {
    let (pes, per_node) = shape;
    let mut cfg = config(layer, pes, ErrorPolicy::Abort);
    if layer != Layer::Mpi {
        cfg.pes_per_node = per_node;
    }
    Runtime::new(registrations.into_registry(), cfg)
        .run_for(main)
        .unwrap_or_else(|e| panic!("megatest on {pes} PEs ({per_node} per node) of {layer:?}: {e}"))
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
    ("nodecast", nodecast::nodecast),
    ("nodering", nodering::nodering),
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
