//! What a checkpoint carries besides groups and array elements, on every layer of
//! this build (bodies in `chorus_tests::suite::checkpoint_state`).

use chorus_tests::{layers, suite::checkpoint_state};

#[test]
fn singletons_are_restored_on_their_pe_modulo_the_new_count() {
    for layer in layers() {
        checkpoint_state::singletons_are_restored_on_their_pe_modulo_the_new_count(layer);
    }
}

#[test]
fn a_singleton_that_cannot_be_saved_is_named() {
    for layer in layers() {
        checkpoint_state::a_singleton_that_cannot_be_saved_is_named(layer);
    }
}

#[test]
fn deleted_elements_stay_deleted_after_a_restart() {
    for layer in layers() {
        checkpoint_state::deleted_elements_stay_deleted_after_a_restart(layer);
    }
}

#[test]
fn a_kept_array_section_works_after_a_restart() {
    for layer in layers() {
        checkpoint_state::a_kept_array_section_works_after_a_restart(layer);
    }
}

#[test]
fn an_open_section_reduction_is_named() {
    for layer in layers() {
        checkpoint_state::an_open_section_reduction_is_named(layer);
    }
}

#[test]
fn a_checkpoint_with_a_task_waiting_is_refused() {
    for layer in layers() {
        checkpoint_state::a_checkpoint_with_a_task_waiting_is_refused(layer);
    }
}
