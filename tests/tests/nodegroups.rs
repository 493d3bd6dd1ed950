//! Nodegroups and callbacks to array sections on every layer of this build (bodies in
//! `chorus_tests::suite::nodegroups`).

use chorus_tests::{layers, suite::nodegroups};

#[test]
fn nodegroups_have_one_member_per_node() {
    for layer in layers() {
        nodegroups::nodegroups_have_one_member_per_node(layer);
    }
}

#[test]
fn callbacks_to_a_section_reach_each_member_once() {
    for layer in layers() {
        nodegroups::callbacks_to_a_section_reach_each_member_once(layer);
    }
}
