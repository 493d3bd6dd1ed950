//! Array sections on every layer of this build (bodies in
//! `chorus_tests::suite::sections`).

use chorus_tests::{layers, suite::sections};

#[test]
fn a_section_multicast_reaches_each_member_once_one_envelope_per_pe() {
    for layer in layers() {
        sections::a_section_multicast_reaches_each_member_once_one_envelope_per_pe(layer);
    }
}

#[test]
fn section_multicasts_and_reductions_racing_migrations_are_exactly_once() {
    for layer in layers() {
        sections::section_multicasts_and_reductions_racing_migrations_are_exactly_once(layer);
    }
}

#[test]
fn section_refusals_are_clear_errors() {
    for layer in layers() {
        sections::section_refusals_are_clear_errors(layer);
    }
}
