//! Disk checkpoint and restart on every layer of this build, and the rollback to an
//! in-memory checkpoint after PE failures (bodies in `chorus_tests::suite::checkpoint`
//! and `chorus_tests::suite::recovery`).

use chorus_tests::{
    layers,
    suite::{checkpoint, checkpoint_digest, recovery},
};

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

#[test]
fn a_sim_job_survives_losing_one_pe_between_in_memory_checkpoints() {
    recovery::a_sim_job_survives_losing_pes_between_checkpoints(&[37]);
}

#[test]
fn a_sim_job_survives_losing_six_pes_of_64_between_in_memory_checkpoints() {
    recovery::a_sim_job_survives_losing_pes_between_checkpoints(&[5, 17, 23, 40, 51, 62]);
}

#[test]
fn losing_a_pe_and_its_buddy_is_a_typed_error_naming_both() {
    recovery::losing_a_pe_and_its_buddy_is_a_typed_error_naming_both();
}

#[test]
fn a_threads_job_survives_an_injected_pe_failure_between_in_memory_checkpoints() {
    // PE 3 takes about 25 arrivals before the first checkpoint is complete and
    // about 70 in the whole run, but how many envelopes carry a run's messages
    // depends on timing; a failure point that fell before the first checkpoint or
    // after the end is tried again at the next one, and every run that did roll
    // back must end with the uninterrupted answer (checked inside).
    for after in [40, 32, 50, 28, 60, 26] {
        match recovery::a_threads_job_survives_an_injected_failure(after) {
            Ok(report) if report.recoveries.is_empty() => continue,
            Err(chorus_core::RuntimeError::Checkpoint(
                chorus_core::CheckpointError::NothingToRollBack { .. },
            )) => continue,
            Ok(report) => {
                assert_eq!(report.recoveries.len(), 1, "{:?}", report.recoveries);
                let r = &report.recoveries[0];
                assert_eq!((r.failed.as_slice(), r.pes, report.pes), (&[3][..], 7, 7));
                assert!(r.epoch >= 1, "{r:?}");
                return;
            }
            Err(e) => panic!("PE 3 failing after {after} arrivals: {e}"),
        }
    }
    panic!("no failure point fell between two in-memory checkpoints");
}

#[test]
fn a_threads_pe_failing_before_any_in_memory_checkpoint_is_a_typed_error() {
    match recovery::a_threads_job_survives_an_injected_failure(3) {
        Err(chorus_core::RuntimeError::Checkpoint(
            chorus_core::CheckpointError::NothingToRollBack { failed },
        )) => assert_eq!(failed, vec![3]),
        other => panic!("{:?}", other.map(|r| r.recoveries)),
    }
}

#[test]
fn a_sim_job_restarted_on_64_pes_replays_the_rest_of_the_run_bit_for_bit() {
    checkpoint_digest::a_restarted_sim_job_replays_the_rest_of_the_run_bit_for_bit(64);
}

/// The measured target, by hand (a few minutes in a debug build):
/// `cargo test -p chorus-tests --test checkpoint -- --ignored --nocapture 4096`.
#[test]
#[ignore]
fn a_sim_job_restarted_on_4096_pes_replays_the_rest_of_the_run_bit_for_bit() {
    use checkpoint_digest::{killed_and_restarted, Restart, Resume, Shape};
    let shape = Shape {
        per_pe: 2,
        steps: 12,
        at: 5,
        work_ns: 3_000,
    };
    for noisy in [false, true] {
        let same = Restart {
            pes: 4096,
            how: Resume::Callback,
            reseed: 0,
        };
        let c = killed_and_restarted(4096, noisy, shape, same, "4096");
        println!("4096 PEs, jitter and contention {noisy}: uninterrupted (answer, digest since commit, deliveries since, commit us, all deliveries) {:?}", c.whole);
        println!("4096 PEs, jitter and contention {noisy}: restarted     (answer, digest since resume, deliveries since, resume us, all deliveries) {:?}", c.restarted);
        assert!(c.same(), "{c:?}");
    }
}
