//! Charm++'s megatest ported to chorus, each test on every layer of this build (bodies
//! in `chorus_tests::megatest`, one module per original test).

use chorus_tests::{layers, megatest};

/// Run the megatest called `name` on every layer.
fn run(name: &str) {
    let (_, test) = megatest::TESTS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no megatest {name}"));
    for layer in layers() {
        test(layer);
    }
}

macro_rules! megatests {
    ($($name:ident),* $(,)?) => {
        $(#[test]
        fn $name() {
            run(stringify!($name));
        })*

        /// Every ported megatest has its cargo test above.
        #[test]
        fn every_ported_megatest_is_run() {
            let listed = [$(stringify!($name)),*];
            for (name, _) in megatest::TESTS {
                assert!(listed.contains(name), "megatest {name} has no cargo test");
            }
        }
    };
}

megatests!(
    arrayring,
    callback,
    fib,
    groupcast,
    groupring,
    marshall,
    migration,
    nodecast,
    nodering,
    packtest,
    priomsg,
    priotest,
    queens,
    reduction,
    rotest,
    synctest,
    templates,
    varraystest,
    varsizetest,
    varsizetest2,
);
