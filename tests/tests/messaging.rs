//! Point-to-point messaging on every layer of this build: a 10^6-message stress test,
//! creation from any PE, priorities and the expedited path (bodies in
//! `chorus_tests::suite::messaging`).

use chorus_tests::{
    layers,
    suite::{ledger, messaging},
};

#[test]
fn a_million_messages_between_random_chares_on_8_pes_are_all_accounted_for() {
    for layer in layers() {
        ledger::a_million_messages_between_random_chares_on_8_pes_are_all_accounted_for(layer);
    }
}

#[test]
fn the_ledger_balances_when_messages_are_damaged_on_the_wire() {
    for layer in layers() {
        ledger::the_ledger_balances_when_messages_are_damaged_on_the_wire(layer);
    }
}

/// The README's figure (`cargo test --release -p chorus-tests --test messaging --
/// --ignored`): 10^7 messages on 8 threads PEs and on 4096 sim PEs.
#[test]
#[ignore = "10^7 messages: about 15 s in release"]
fn ten_million_messages_are_each_delivered_exactly_once() {
    for layer in layers() {
        ledger::ten_million_messages_are_each_delivered_exactly_once(layer);
    }
}

#[test]
fn priorities_run_smallest_first_fifo_within_a_priority_and_expedited_before_all() {
    for layer in layers() {
        messaging::priorities_run_smallest_first_fifo_within_a_priority_and_expedited_before_all(
            layer,
        );
    }
}

#[test]
fn a_run_of_messages_yields_to_expedited_ones_and_survives_a_failing_member() {
    for layer in layers() {
        messaging::a_run_of_messages_yields_to_expedited_ones_and_survives_a_failing_member(layer);
    }
}

#[test]
fn a_run_to_an_element_on_another_pe_resumes_after_an_expedited_message() {
    for layer in layers() {
        messaging::a_run_to_an_element_on_another_pe_resumes_after_an_expedited_message(layer);
    }
}

#[test]
fn chares_created_from_any_pe_receive_messages_sent_right_after_creation() {
    for layer in layers() {
        messaging::chares_created_from_any_pe_receive_messages_sent_right_after_creation(layer);
    }
}

#[test]
fn a_message_arriving_during_compute_outranks_a_later_local_send() {
    for layer in layers() {
        messaging::a_message_arriving_during_compute_outranks_a_later_local_send(layer);
    }
}

#[test]
fn long_byte_payloads_arrive_whole() {
    for layer in layers() {
        messaging::long_byte_payloads_arrive_whole(layer);
    }
}

#[test]
fn envelopes_around_the_posted_receive_size_arrive_whole_and_in_order() {
    for layer in layers() {
        messaging::envelopes_around_the_posted_receive_size_arrive_whole_and_in_order(layer);
    }
}
