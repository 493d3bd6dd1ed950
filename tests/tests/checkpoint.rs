//! Disk checkpoint and restart on every layer of this build (bodies in
//! `chorus_tests::suite::checkpoint`).

use chorus_tests::{layers, suite::checkpoint};

#[test]
fn a_restart_on_the_same_fewer_or_more_pes_gives_the_uninterrupted_answer() {
    for layer in layers() {
        checkpoint::a_restart_on_the_same_fewer_or_more_pes_gives_the_uninterrupted_answer(layer);
    }
}

#[test]
fn a_damaged_incomplete_or_foreign_checkpoint_is_refused_naming_the_file() {
    for layer in layers() {
        checkpoint::a_damaged_incomplete_or_foreign_checkpoint_is_refused_naming_the_file(layer);
    }
}

#[test]
fn groups_restore_per_pe_and_a_fixed_count_group_refuses_another_count() {
    for layer in layers() {
        checkpoint::groups_restore_per_pe_and_a_fixed_count_group_refuses_another_count(layer);
    }
}
