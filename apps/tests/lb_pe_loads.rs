//! Per-PE loads of chare-array balancing steps in traces and the HTML report: on sim
//! with fixed seeds, every traced PE's `chorus::lb_pe_load` record and every row of
//! the report's per-PE view equal PE 0's load database (the run report's
//! `loads_before` and `loads_after`), in JSON and Perfetto traces alike, and the
//! traces still pass every viewer rule `chorus-trace check` applies.

use std::collections::BTreeMap;
use std::path::Path;

use chorus_apps::lbtest::{self, LbTestParams, LoadDist, Topology};
use chorus_core::report::BalanceStep;
use chorus_core::{Config, Layer};
use chorus_traces::report_html::{render_report_compact, ReportOptions};
use chorus_traces::summary::summarize_compact;
use chorus_traces::{check_compact, CompactTrace};

fn params(objects: usize) -> LbTestParams {
    LbTestParams {
        objects,
        steps: 6,
        topology: Topology::Mesh,
        degree: 4,
        load: LoadDist::Skew,
        base_us: 5.0,
        ratio: 10.0,
        change_every: 2,
        seed: 3,
    }
}

/// ns as the trace records a load in seconds.
fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9) as u64
}

/// A traced greedy lb-test run on `pes` sim PEs, balancing every other step: its
/// balancing steps, the trace read back, and the report's HTML.
fn traced_run(pes: u32, file: &str) -> (Vec<BalanceStep>, CompactTrace, String) {
    let dir = std::env::temp_dir().join(format!("chorus-lb-pe-{}-{file}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(file);
    let c = Config {
        pes,
        layer: Layer::Sim,
        array_lb: "greedy".into(),
        lb_period: Some(2),
        trace: Some(path.clone()),
        ..Config::default()
    };
    let out = lbtest::run(&c, params(pes as usize * 8)).expect("the run");
    assert!(out.exact(), "{out:?}");
    let trace = read(&path);
    std::fs::remove_dir_all(&dir).expect("the scratch directory goes");
    let html = render_report_compact(
        &trace,
        &summarize_compact(&trace, &Default::default()),
        &ReportOptions::default(),
    );
    (out.run.figures.balance.clone(), trace, html)
}

fn read(path: &Path) -> CompactTrace {
    let trace = CompactTrace::read(path).expect("the trace reads back");
    let report = check_compact(&trace);
    assert!(report.ok(), "{:?}", report.problems);
    trace
}

/// The report's per-PE rows: (round, PE) -> (before ns, after ns).
fn rows(html: &str) -> BTreeMap<(u64, u32), (u64, u64)> {
    let attr = |row: &str, name: &str| -> u64 {
        let at = row.find(&format!("{name}=\"")).expect(name) + name.len() + 2;
        row[at..at + row[at..].find('"').unwrap()].parse().unwrap()
    };
    html.split("<tr class=\"lb-pe\"")
        .skip(1)
        .map(|row| {
            let key = (attr(row, "data-round"), attr(row, "data-pe") as u32);
            (
                key,
                (attr(row, "data-before-ns"), attr(row, "data-after-ns")),
            )
        })
        .collect()
}

/// Every PE's record of every step equals the database's loads for it.
fn assert_trace_has_the_database(balance: &[BalanceStep], trace: &CompactTrace, pes: u32) {
    assert!(balance.len() >= 2, "greedy balanced at least twice");
    assert_eq!(trace.lb_steps.len(), balance.len());
    assert_eq!(trace.lb_pe_loads.len(), balance.len() * pes as usize);
    for b in balance {
        let mut seen = 0;
        for l in trace
            .lb_pe_loads
            .iter()
            .filter(|l| l.round == u64::from(b.round))
        {
            let pe = l.pe as usize;
            assert_eq!(
                l.before,
                ns(b.loads_before[pe]),
                "round {} PE {pe}",
                b.round
            );
            assert_eq!(l.after, ns(b.loads_after[pe]), "round {} PE {pe}", b.round);
            seen += 1;
        }
        assert_eq!(seen, pes, "round {}: one record per PE", b.round);
    }
    let moved = |b: &BalanceStep| b.loads_before != b.loads_after;
    assert!(balance.iter().any(moved), "a step that changed the loads");
}

#[test]
fn each_pe_load_in_a_traced_step_is_the_databases_and_the_report_lists_every_pe() {
    let pes = 8;
    let (balance, trace, html) = traced_run(pes, "lb.json");
    assert_trace_has_the_database(&balance, &trace, pes);
    let rows = rows(&html);
    assert_eq!(
        rows.len(),
        balance.len() * pes as usize,
        "every PE of every step"
    );
    for b in &balance {
        for pe in 0..pes {
            let want = (
                ns(b.loads_before[pe as usize]),
                ns(b.loads_after[pe as usize]),
            );
            assert_eq!(
                rows[&(u64::from(b.round), pe)],
                want,
                "round {} PE {pe}",
                b.round
            );
        }
    }
    assert!(!html.contains("lb-pe-histogram"), "few PEs: no histogram");
}

#[test]
fn a_step_of_many_pes_shows_a_histogram_and_the_most_loaded_from_a_perfetto_trace() {
    let pes = 48;
    let (balance, trace, html) = traced_run(pes, "lb.perfetto-trace");
    assert_trace_has_the_database(&balance, &trace, pes);
    assert_eq!(html.matches("lb-pe-histogram").count(), balance.len());
    let rows = rows(&html);
    for b in &balance {
        // The ten most loaded before the step, heaviest first (ties by PE).
        let mut heaviest: Vec<(u64, u32)> = (0..pes)
            .map(|pe| (ns(b.loads_before[pe as usize]), pe))
            .collect();
        heaviest.sort_by_key(|&(l, pe)| (std::cmp::Reverse(l), pe));
        let listed: Vec<u32> = rows
            .keys()
            .filter(|k| k.0 == u64::from(b.round))
            .map(|k| k.1)
            .collect();
        let mut want: Vec<u32> = heaviest[..10].iter().map(|&(_, pe)| pe).collect();
        want.sort();
        assert_eq!(listed, want, "round {}", b.round);
        for pe in want {
            let after = ns(b.loads_after[pe as usize]);
            assert_eq!(rows[&(u64::from(b.round), pe)].1, after);
        }
    }
}
