//! Faults end the way the job's policy says, never in a hang: damaged and
//! unencodable messages, and a job that waits forever, reported as stalled (bodies
//! in `chorus_tests::suite::faults`).

use chorus_tests::{layers, suite::faults};

#[test]
fn damaged_messages_are_dropped_with_an_error_and_quiescence_still_comes() {
    for layer in layers() {
        faults::damaged_messages_are_dropped_with_an_error_and_quiescence_still_comes(layer);
    }
}

#[test]
fn an_unencodable_message_is_dropped_and_quiescence_still_comes() {
    for layer in layers() {
        faults::an_unencodable_message_is_dropped_and_quiescence_still_comes(layer);
    }
}

#[test]
fn a_message_longer_than_mpi_carries_is_refused_and_quiescence_still_comes() {
    for layer in layers() {
        faults::a_message_longer_than_mpi_carries_is_refused_and_quiescence_still_comes(layer);
    }
}

#[test]
fn a_job_that_never_exits_is_reported_stalled_under_either_policy() {
    for layer in layers() {
        faults::a_job_that_never_exits_is_reported_stalled_under_either_policy(layer);
    }
}

#[test]
fn a_slow_sender_delays_only_its_own_messages() {
    for layer in layers() {
        chorus_tests::suite::slow_sender::a_slow_sender_delays_only_its_own_messages(layer);
    }
}
