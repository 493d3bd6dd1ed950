//! Load balancing of chare arrays on every layer of this build (bodies in
//! `chorus_tests::suite::balance`).

use chorus_tests::{layers, suite::balance, suite::balance_when};

#[test]
fn a_step_moves_heavy_elements_and_resumes_each_once() {
    for layer in layers() {
        balance::a_step_moves_heavy_elements_and_resumes_each_once(layer);
    }
}

#[test]
fn without_a_strategy_elements_resume_at_once() {
    for layer in layers() {
        balance::without_a_strategy_elements_resume_at_once(layer);
    }
}

#[test]
fn an_impossible_decision_is_an_error_and_loses_nothing() {
    for layer in layers() {
        balance::an_impossible_decision_is_an_error_and_loses_nothing(layer);
    }
}

#[test]
fn misuse_inside_a_step_is_refused() {
    for layer in layers() {
        balance::misuse_inside_a_step_is_refused(layer);
    }
}

#[test]
fn an_element_inserted_in_a_step_joins_the_next() {
    for layer in layers() {
        balance::an_element_inserted_in_a_step_joins_the_next(layer);
    }
}

#[test]
fn an_unknown_strategy_is_refused_up_front() {
    for layer in layers() {
        balance::an_unknown_strategy_is_refused_up_front(layer);
    }
}

/// A PE killed on sim in the middle of a balancing step: the job ends with an error
/// naming the killed PE (the step cannot complete without its elements' records),
/// never a hang or a clean exit.
#[test]
fn a_pe_killed_during_a_step_ends_the_job_with_an_error() {
    let err = balance::run_with_kill(2, 3_000_000).expect_err("the step cannot complete");
    let text = err.to_string();
    assert!(
        text.contains("failed PE 2") || text.contains("killed PEs [2]"),
        "{text}"
    );
}

#[test]
fn a_step_waits_for_every_arrival_when_most_pes_only_send() {
    for layer in layers() {
        balance::a_step_waits_for_every_arrival_when_most_pes_only_send(layer);
    }
}

/// On 40 sim PEs the PE tree has four levels: the plan reaches every PE down it, the
/// arrivals come back up it, and every element moved to the last PE resumes there
/// once per step.
#[test]
fn the_plan_and_the_arrivals_travel_a_deep_tree() {
    let report =
        balance::run_steps_on(chorus_core::Layer::Sim, 40, (80, 2), "all-to-last").expect("a run");
    assert_eq!(report.output::<u64>("resumed"), Some(160));
    let first = &report.per_pe[0].balance[0];
    assert_eq!(first.migrations, 78);
}

/// Each balancing step is a `chorus::lb_step` phase on PE 0 carrying the least, mean
/// and most PE load before and after the step, in ns, equal to the report's, in both
/// trace formats.
#[test]
fn the_lb_step_phase_carries_the_loads_before_and_after() {
    let dir = std::env::temp_dir().join(format!("chorus-lb-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    for name in ["lb.json", "lb.perfetto-trace"] {
        let path = dir.join(name);
        let report = balance::run_traced(&path).expect("a traced run");
        let trace = chorus_traces::read_chrome(&path).expect("the trace reads back");
        let steps: Vec<_> = trace
            .tracks
            .iter()
            .flat_map(|t| t.slices.iter())
            .filter(|s| s.name == "chorus::lb_step")
            .collect();
        let balance = &report.per_pe[0].balance;
        assert_eq!(steps.len(), balance.len(), "{name}: one phase per step");
        let ns = |s: f64| (s * 1e9) as u64;
        for (slice, step) in steps.iter().zip(balance) {
            let arg = |k: &str| slice.arg_u64(k).unwrap_or_else(|| panic!("{name}: {k}"));
            let max = |l: &[f64]| l.iter().copied().fold(0.0, f64::max);
            let min = |l: &[f64]| l.iter().copied().fold(f64::INFINITY, f64::min);
            assert_eq!(arg("round"), u64::from(step.round));
            assert_eq!(arg("load_max_before_ns"), ns(max(&step.loads_before)));
            assert_eq!(arg("load_min_before_ns"), ns(min(&step.loads_before)));
            assert_eq!(arg("load_max_after_ns"), ns(max(&step.loads_after)));
            assert_eq!(arg("load_min_after_ns"), ns(min(&step.loads_after)));
            let avg = arg("load_avg_before_ns");
            assert!(
                avg > 0 && avg.abs_diff(arg("load_avg_after_ns")) <= 1,
                "{name}"
            );
        }
        let first = steps[0];
        assert!(
            first.arg_u64("load_max_before_ns") > first.arg_u64("load_max_after_ns"),
            "{name}: the heavy PE 0 is relieved"
        );
    }
    std::fs::remove_dir_all(&dir).expect("the scratch directory goes");
}

#[test]
fn manual_steps_wait_for_start_lb() {
    for layer in layers() {
        balance_when::manual_steps_wait_for_start_lb(layer);
    }
}

#[test]
fn start_lb_without_manual_mode_is_refused() {
    for layer in layers() {
        balance_when::start_lb_without_manual_mode_is_refused(layer);
    }
}

#[test]
fn a_time_period_balances_the_steps_it_spans() {
    for layer in layers() {
        balance_when::a_time_period_balances_the_steps_it_spans(layer);
    }
}

#[test]
fn an_element_inserted_from_outside_a_step_joins_the_next() {
    balance_when::an_element_inserted_from_outside_a_step_joins_the_next();
}

#[test]
fn an_element_inserted_too_late_for_a_step_resumes_with_it() {
    balance_when::an_element_inserted_too_late_for_a_step_resumes_with_it();
}

#[test]
fn an_element_syncing_in_a_step_already_over_resumes_at_once() {
    balance_when::an_element_syncing_in_a_step_already_over_resumes_at_once();
}
