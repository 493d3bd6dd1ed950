//! Migration of array elements on every layer of this build (bodies in
//! `chorus_tests::suite::migration`).

use chorus_core::Layer;
use chorus_tests::{layers, suite::migration};

#[test]
fn items_streamed_at_randomly_moving_elements_each_arrive_exactly_once() {
    for layer in layers() {
        migration::items_streamed_at_randomly_moving_elements_each_arrive_exactly_once(layer);
    }
}

#[test]
fn reductions_and_broadcasts_count_each_element_once_across_moves() {
    for layer in layers() {
        migration::reductions_and_broadcasts_count_each_element_once_across_moves(layer);
    }
}

#[test]
fn quiescence_waits_for_chains_of_moves_and_forwarding() {
    for layer in layers() {
        migration::quiescence_waits_for_chains_of_moves_and_forwarding(layer);
    }
}

#[test]
fn bad_moves_are_clear_errors_and_lose_nothing() {
    for layer in layers() {
        migration::bad_moves_are_clear_errors_and_lose_nothing(layer);
    }
}

#[test]
fn an_element_lost_in_transit_is_reported_with_its_messages() {
    for layer in layers() {
        migration::an_element_lost_in_transit_is_reported_with_its_messages(layer);
    }
}

#[test]
fn inserted_elements_move_and_a_recount_while_moving_counts_each_once() {
    for layer in layers() {
        migration::inserted_elements_move_and_a_recount_while_moving_counts_each_once(layer);
    }
}

#[test]
fn an_element_inserted_before_its_pe_knew_the_array_lives_at_home() {
    for layer in layers() {
        migration::an_element_inserted_before_its_pe_knew_the_array_lives_at_home(layer);
    }
}

#[test]
fn an_index_is_never_inserted_twice_even_while_its_element_is_away() {
    for layer in layers() {
        migration::an_index_is_never_inserted_twice_even_while_its_element_is_away(layer);
    }
}

#[test]
fn moving_from_create_works_and_from_about_to_migrate_is_refused() {
    for layer in layers() {
        migration::moving_from_create_works_and_from_about_to_migrate_is_refused(layer);
    }
}

#[test]
fn sim_runs_with_migrations_replay_exactly_per_seed() {
    let digest = |seed| {
        let report = migration::stream(Layer::Sim, 8, seed);
        report.sim.expect("sim statistics").digest
    };
    assert_eq!(digest(5), digest(5));
    assert_ne!(digest(5), digest(6));
}
