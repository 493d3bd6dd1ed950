//! The runtime test suite, parameterized over machine layers: every test is a
//! `pub fn name(layer: Layer)` that panics on failure. The cargo tests in `tests/tests`
//! call them for threads and sim; the `chorus-suite` binary calls them on mpi under
//! mpirun. On mpi every rank runs the same test (each gets the whole job's report).

use chorus_core::Layer;

pub mod arrays;
pub mod bad_input;
pub mod balance;
pub mod balance_when;
pub mod checkpoint;
pub mod checkpoint_digest;
pub mod checkpoint_state;
pub mod destroy;
pub mod faults;
pub mod ledger;
pub mod messaging;
pub mod migration;
pub mod nodegroups;
pub mod quiescence;
pub mod recovery;
pub mod reductions;
pub mod sections;
pub mod slow_sender;
pub mod tasks;

/// A named suite test.
pub type Test = (&'static str, fn(Layer));

/// Every module's tests and the ported megatests, in a fixed order (test names are unique across modules).
/// `checkpoint`'s are left out: their scratch directories are per process, so they
/// run on threads and sim only (`tests/tests/checkpoint.rs`) until mpi ranks share one.
pub fn all() -> Vec<Test> {
    [
        arrays::TESTS,
        balance::TESTS,
        balance_when::TESTS,
        bad_input::TESTS,
        destroy::TESTS,
        faults::TESTS,
        ledger::TESTS,
        messaging::TESTS,
        migration::TESTS,
        nodegroups::TESTS,
        quiescence::TESTS,
        reductions::TESTS,
        sections::TESTS,
        slow_sender::TESTS,
        tasks::TESTS,
        crate::megatest::TESTS,
    ]
    .concat()
}

/// The suite test called `name`, if there is one, heavy ones included.
pub fn find(name: &str) -> Option<Test> {
    all()
        .into_iter()
        .chain(ledger::HEAVY.iter().copied())
        .find(|(n, _)| *n == name)
}
