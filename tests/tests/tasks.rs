//! Async tasks on every layer of this build (bodies in `chorus_tests::suite::tasks`).

use chorus_core::ErrorPolicy;
use chorus_tests::{config, layers, suite::tasks};

#[test]
fn a_sequential_protocol_of_asks_is_exact() {
    for layer in layers() {
        tasks::a_sequential_protocol_of_asks_is_exact(layer);
    }
}

#[test]
fn tasks_on_sim_are_deterministic() {
    for layer in layers() {
        tasks::tasks_on_sim_are_deterministic(layer);
    }
}

#[test]
fn an_ask_times_out_and_its_late_answer_is_counted() {
    for layer in layers() {
        tasks::an_ask_times_out_and_its_late_answer_is_counted(layer);
    }
}

#[test]
fn a_task_waiting_forever_shows_in_the_report() {
    for layer in layers() {
        tasks::a_task_waiting_forever_shows_in_the_report(layer);
    }
}

#[test]
fn an_asked_element_that_migrates_while_asked_still_answers() {
    for layer in layers() {
        tasks::an_asked_element_that_migrates_while_asked_still_answers(layer);
    }
}

#[test]
fn a_task_whose_owner_left_is_reported() {
    for layer in layers() {
        tasks::a_task_whose_owner_left_is_reported(layer);
    }
}

/// A traced run shows every ask's wait as a `chorus::ask_wait` phase and the tasks'
/// runs as `chorus::task` slices, and the trace is well formed.
#[test]
fn traces_show_the_waits_of_asks() {
    for layer in layers() {
        let dir = std::env::temp_dir().join(format!("chorus-tasks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join(format!("tasks-{layer:?}.json"));
        let mut cfg = config(layer, 3, ErrorPolicy::Abort);
        cfg.trace = Some(file.clone());
        tasks::run_protocol(cfg);
        let trace = chorus_traces::read_chrome(&file).expect("the trace parses back");
        let count = |name: &str| -> usize {
            let slices = trace.tracks.iter().flat_map(|t| t.slices.iter());
            slices.filter(|s| s.name == name).count()
        };
        assert_eq!(count("chorus::ask_wait"), tasks::PROTOCOL_ASKS, "{layer:?}");
        assert!(count("chorus::task") >= tasks::PROTOCOL_ASKS, "{layer:?}");
        let problems = chorus_traces::validate(&trace);
        assert!(problems.is_empty(), "{layer:?}: {problems:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
