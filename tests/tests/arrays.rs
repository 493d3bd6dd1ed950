//! Chare arrays on every layer of this build (bodies in `chorus_tests::suite::arrays`).

use chorus_tests::{layers, suite::arrays};

#[test]
fn block_and_round_robin_place_1d_and_2d_arrays_as_documented() {
    for layer in layers() {
        arrays::block_and_round_robin_place_1d_and_2d_arrays_as_documented(layer);
    }
}

#[test]
fn user_index_types_with_a_custom_map_and_point_to_point_sends() {
    for layer in layers() {
        arrays::user_index_types_with_a_custom_map_and_point_to_point_sends(layer);
    }
}

#[test]
fn elements_inserted_after_creation_receive_messages_and_join_reductions() {
    for layer in layers() {
        arrays::elements_inserted_after_creation_receive_messages_and_join_reductions(layer);
    }
}

#[test]
fn a_recount_waits_for_the_inserts_it_covers() {
    for layer in layers() {
        arrays::a_recount_waits_for_the_inserts_it_covers(layer);
    }
}
