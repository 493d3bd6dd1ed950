//! Deleting array elements on every layer of this build (bodies in
//! `chorus_tests::suite::destroy`).

use chorus_tests::{layers, suite::destroy};

#[test]
fn deleted_elements_leave_reductions_and_their_messages_are_counted() {
    for layer in layers() {
        destroy::deleted_elements_leave_reductions_and_their_messages_are_counted(layer);
    }
}

#[test]
fn deleting_twice_or_while_migrating_is_a_typed_error() {
    for layer in layers() {
        destroy::deleting_twice_or_while_migrating_is_a_typed_error(layer);
    }
}
