//! Quiescence detection on every layer of this build (bodies in
//! `chorus_tests::suite::quiescence`).

use chorus_tests::{layers, suite::quiescence};

#[test]
fn quiescence_fires_once_per_request_after_the_whole_cascade() {
    for layer in layers() {
        quiescence::quiescence_fires_once_per_request_after_the_whole_cascade(layer);
    }
}

#[test]
fn runs_of_messages_are_counted_one_by_one_by_quiescence_detection() {
    for layer in layers() {
        quiescence::runs_of_messages_are_counted_one_by_one_by_quiescence_detection(layer);
    }
}
