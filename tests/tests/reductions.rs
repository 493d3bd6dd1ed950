//! Reductions with every reducer on every layer of this build (bodies in
//! `chorus_tests::suite::reductions`).

use chorus_tests::{layers, suite::reductions};

#[test]
fn group_reductions_with_every_reducer_on_1_2_3_7_64_pes() {
    for layer in layers() {
        reductions::group_reductions_with_every_reducer_on_1_2_3_7_64_pes(layer);
    }
}

#[test]
fn group_reduction_over_1000_pes() {
    for layer in layers() {
        reductions::group_reduction_over_1000_pes(layer);
    }
}

#[test]
fn array_reductions_with_every_reducer_on_1_2_3_7_64_1000_elements() {
    for layer in layers() {
        reductions::array_reductions_with_every_reducer_on_1_2_3_7_64_1000_elements(layer);
    }
}
