//! The two array load-balancing mini-apps end to end on threads and sim: Jacobi2D's
//! grid equals the serial run's bit for bit, and lb-test's receipts checksum equals
//! the serial one, for every graph and load distribution, on 1 to 7 PEs; sim runs
//! repeat exactly; without balancing the hot spot shows as imbalance.

use chorus_apps::jacobi2d::{self, JacobiParams};
use chorus_apps::lbtest::{self, LbTestParams, LoadDist, Topology};
use chorus_core::{Config, Layer};

fn config(layer: Layer, pes: u32) -> Config {
    Config {
        pes,
        layer,
        ..Config::default()
    }
}

fn jacobi(grid: usize, block: usize, steps: u32) -> JacobiParams {
    JacobiParams {
        grid,
        block,
        steps,
        cell_ns: 20.0,
        hot_factor: 5.0,
        hot_blocks: 1,
        drift_every: 2,
        predict_load: false,
    }
}

fn lbtest(topology: Topology, load: LoadDist, objects: usize) -> LbTestParams {
    LbTestParams {
        objects,
        steps: 6,
        topology,
        degree: 4,
        load,
        base_us: 5.0,
        ratio: 10.0,
        change_every: 2,
        seed: 3,
    }
}

#[test]
fn jacobi2d_is_exact_on_threads_and_sim() {
    let cases = [
        (1u32, 8usize, 8usize),
        (2, 12, 4),
        (4, 16, 4),
        (7, 15, 5),
        (3, 9, 3),
    ];
    for layer in [Layer::Threads, Layer::Sim] {
        for &(pes, grid, block) in &cases {
            let p = jacobi(grid, block, 5);
            let out = jacobi2d::run(&config(layer, pes), p)
                .unwrap_or_else(|e| panic!("{layer:?} {pes} PEs {grid}/{block}: {e}"));
            assert!(out.exact(), "{layer:?} {pes} PEs {grid}/{block}: {out:?}");
            assert_eq!(out.run.figures.pes, pes as usize);
            assert!(out.step_s() > 0.0, "{out:?}");
        }
    }
}

#[test]
fn the_serial_checksum_depends_on_every_step_and_cell() {
    let a = jacobi2d::grid::serial_checksum(&jacobi(8, 4, 3));
    assert_ne!(a, jacobi2d::grid::serial_checksum(&jacobi(8, 4, 4)));
    assert_ne!(a, jacobi2d::grid::serial_checksum(&jacobi(8, 2, 3)));
    assert_eq!(a, jacobi2d::grid::serial_checksum(&jacobi(8, 4, 3)));
}

#[test]
fn jacobi2d_on_sim_repeats_and_shows_the_hot_spot() {
    // 16 blocks on 4 PEs, one hot block 10x: the PE holding it does 13 blocks' work
    // in the step, the others 4, so without balancing max/avg is 13 / 6.25.
    let p = JacobiParams {
        hot_factor: 10.0,
        ..jacobi(16, 4, 4)
    };
    let run = || jacobi2d::run(&config(Layer::Sim, 4), p).expect("the run");
    let (a, b) = (run(), run());
    assert!(a.exact(), "{a:?}");
    assert_eq!(a.run.figures.seconds, b.run.figures.seconds);
    assert!(
        (a.run.figures.last_max_over_avg() - 13.0 / 6.25).abs() < 1e-9,
        "{a:?}"
    );
    assert!(a.step_s() >= a.ideal_step_s, "{a:?}");
}

#[test]
fn lb_test_is_exact_for_every_graph_and_load_on_threads_and_sim() {
    let mut case = 0u32;
    for layer in [Layer::Threads, Layer::Sim] {
        for topology in [Topology::Ring, Topology::Mesh, Topology::Random] {
            for load in [LoadDist::Uniform, LoadDist::Skew, LoadDist::Linear] {
                case += 1;
                let pes = 1 + case % 7;
                let objects = [12usize, 30, 49][case as usize % 3];
                let p = lbtest(topology, load, objects);
                let out = lbtest::run(&config(layer, pes), p)
                    .unwrap_or_else(|e| panic!("{layer:?} {pes} PEs {p:?}: {e}"));
                assert!(out.exact(), "{layer:?} {pes} PEs {p:?}: {out:?}");
                let run_load: f64 = out.run.figures.run_loads.iter().sum();
                let expected = p.mean_work_per_step_s() * f64::from(p.steps);
                assert!((run_load - expected).abs() < 1e-9, "{run_load} {expected}");
            }
        }
    }
}

#[test]
fn lb_test_on_sim_repeats_exactly() {
    let p = lbtest(Topology::Random, LoadDist::Skew, 64);
    let run = || lbtest::run(&config(Layer::Sim, 8), p).expect("the run");
    let (a, b) = (run(), run());
    assert!(a.exact(), "{a:?}");
    assert_eq!(a.run.figures.seconds, b.run.figures.seconds);
    assert_eq!(a.run.figures.last_loads, b.run.figures.last_loads);
    assert!(a.run.figures.last_max_over_avg() >= 1.0);
}

#[test]
fn a_strategy_nobody_registered_is_refused_before_the_run() {
    let c = Config {
        array_lb: "no-such-strategy".into(),
        ..config(Layer::Sim, 2)
    };
    let e = lbtest::run(&c, lbtest(Topology::Ring, LoadDist::Skew, 4)).unwrap_err();
    assert!(e.to_string().contains("no-such-strategy"), "{e}");
}

/// Run an app binary, returning its exit code and stdout.
fn run_bin(bin: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(bin)
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
    )
}

#[test]
fn chorus_bench_lb_compares_every_strategy_exactly_on_sim() {
    let bench = env!("CARGO_BIN_EXE_chorus-bench");
    let args = [
        "lb", "--pes", "4", "--grid", "16", "--block", "4", "--steps", "3",
    ];
    let (code, stdout) = run_bin(bench, &[&args[..], &["--json"]].concat());
    assert_eq!(code, Some(0), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let runs = v["runs"].as_array().expect("one entry per strategy");
    let names: Vec<&str> = runs.iter().filter_map(|r| r["array_lb"].as_str()).collect();
    assert_eq!(names, chorus_apps::balancing::strategy_names());
    for r in runs {
        assert_eq!(r["exact"], true, "{r}");
        assert!(r["over_ideal"].as_f64().is_some_and(|x| x >= 1.0), "{r}");
    }
}

#[test]
fn bad_sizes_and_unknown_strategies_are_usage_errors() {
    let bench = env!("CARGO_BIN_EXE_chorus-bench");
    let (code, _) = run_bin(bench, &["lb", "--strategies", "none,nope"]);
    assert_eq!(code, Some(2));
    let (code, _) = run_bin(
        env!("CARGO_BIN_EXE_jacobi2d"),
        &["--grid", "10", "--block", "4"],
    );
    assert_eq!(code, Some(2));
    let lb_test = env!("CARGO_BIN_EXE_lb-test");
    let (code, _) = run_bin(lb_test, &["--topology", "random", "--degree", "3"]);
    assert_eq!(code, Some(2));
    let (code, _) = run_bin(lb_test, &["--lb-period", "3"]);
    assert_eq!(code, Some(2), "--lb-period without a strategy is refused");
}

#[test]
fn the_binaries_print_their_exact_verdict() {
    let (code, out) = run_bin(
        env!("CARGO_BIN_EXE_jacobi2d"),
        &[
            "--layer", "sim", "--grid", "16", "--block", "4", "--steps", "3",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().nth(1).is_some_and(|l| l.ends_with(": exact")),
        "{out}"
    );
    let (code, out) = run_bin(
        env!("CARGO_BIN_EXE_lb-test"),
        &[
            "--layer",
            "sim",
            "--objects",
            "16",
            "--steps",
            "3",
            "--topology",
            "mesh",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().nth(1).is_some_and(|l| l.ends_with(": exact")),
        "{out}"
    );
}

/// An element that contributes from `resume_from_sync` itself (the apps send
/// themselves a message there).
#[derive(serde::Serialize, serde::Deserialize)]
struct ContributesOnResume;

impl chorus_core::Chare for ContributesOnResume {
    type Init = ();
    type Msg = ();
    fn create((): (), _: &mut chorus_core::Ctx) -> Self {
        ContributesOnResume
    }
    fn handle(&mut self, (): (), ctx: &mut chorus_core::Ctx) {
        ctx.at_sync().expect("an array element");
    }
}

impl chorus_core::Migratable for ContributesOnResume {
    fn resume_from_sync(&mut self, ctx: &mut chorus_core::Ctx) {
        ctx.contribute(1u64, chorus_core::Reducer::Sum, chorus_core::Callback::Exit);
    }
}

/// A contribution made inside `resume_from_sync` is applied at once: before the
/// AtSync protocol (fd0dcab) it waited for the PE's next message, and one element
/// alone on a PE stalled the job.
#[test]
fn a_contribution_from_resume_from_sync_is_not_held_back() {
    for layer in [Layer::Threads, Layer::Sim] {
        let mut reg = chorus_core::Registry::new();
        reg.migratable::<ContributesOnResume>("ContributesOnResume");
        let r = chorus_core::Runtime::new(reg, config(layer, 1)).run(|ctx| {
            let a = ctx.create_array_1d::<ContributesOnResume>(1, (), chorus_core::ArrayMap::Block);
            a.broadcast(ctx, ());
        });
        assert!(r.is_ok(), "{layer:?}: {r:?}");
    }
}

/// Every registered strategy balances Jacobi2D at 64 sim PEs (bgp) and the grid
/// stays exact. For the lead: with `refine` and `distributed` this run stalls
/// (the simulation runs out of events at 1116 us with refine; 5 steps are exact).
#[test]
fn jacobi2d_is_exact_under_every_strategy_at_64_sim_pes() {
    let p = JacobiParams {
        grid: 512,
        block: 32,
        steps: 6,
        cell_ns: 10.0,
        hot_factor: 4.0,
        hot_blocks: 2,
        drift_every: 5,
        predict_load: false,
    };
    for lb in chorus_apps::balancing::strategy_names() {
        let mut c = config(Layer::Sim, 64);
        c.sim.preset = Some(chorus_core::SimPreset::Bgp);
        c.array_lb = lb.clone();
        let out = jacobi2d::run(&c, p).unwrap_or_else(|e| panic!("--array-lb {lb}: {e}"));
        assert!(out.exact(), "--array-lb {lb}: {out:?}");
    }
}

/// With `--predict-load` the blocks balance before step 0 on the compute they
/// predict (the hot spot's known place), so the first step's loads add up to the
/// grid's compute for one step and nothing else; the measured first step, after
/// step 0, also counts the ghosts' handling. Both grids stay exact.
#[test]
fn jacobi2d_balances_the_predicted_load_before_step_0() {
    let p = JacobiParams {
        grid: 256,
        block: 32,
        steps: 4,
        cell_ns: 10.0,
        hot_factor: 4.0,
        hot_blocks: 2,
        drift_every: 2,
        predict_load: true,
    };
    let mut c = config(Layer::Sim, 16);
    c.sim.preset = Some(chorus_core::SimPreset::Bgp);
    c.array_lb = "greedy".to_string();
    let first_total = |p: JacobiParams| {
        let out = jacobi2d::run(&c, p).expect("a balanced run");
        assert!(out.exact(), "{out:?}");
        let first = &out.run.figures.balance[0];
        first.loads_before.iter().sum::<f64>()
    };
    let work = p.work_per_step_s();
    let predicted = first_total(p);
    assert!(
        (predicted - work).abs() < 1e-3 * work,
        "predicted {predicted} s, the step's compute {work} s"
    );
    let measured = first_total(JacobiParams {
        predict_load: false,
        ..p
    });
    assert!(
        measured > 1.05 * work,
        "measured {measured} s, the step's compute {work} s"
    );
}

/// A traced lb-test run on sim: the HTML report has one row per balancing step, with
/// the step's migrations and the most and mean PE load before and after as the run
/// reported them, and the greedy step leaves max/avg lower than it found it.
#[test]
fn the_report_of_a_traced_lb_test_run_shows_each_step_and_its_loads() {
    use chorus_traces::report_html::{render_report_compact, ReportOptions};
    use chorus_traces::summary::summarize_compact;
    let dir = std::env::temp_dir().join(format!("chorus-lb-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("lb.json");
    let c = Config {
        array_lb: "greedy".into(),
        trace: Some(path.clone()),
        ..config(Layer::Sim, 8)
    };
    let out = lbtest::run(&c, lbtest(Topology::Ring, LoadDist::Skew, 64)).expect("the run");
    assert!(out.exact(), "{out:?}");
    let trace = chorus_traces::CompactTrace::read(&path).expect("the trace reads back");
    std::fs::remove_dir_all(&dir).expect("the scratch directory goes");
    let balance = &out.run.figures.balance;
    assert!(!balance.is_empty(), "greedy balanced at least once");
    assert_eq!(trace.lb_steps.len(), balance.len(), "one phase per step");
    let ns = |s: f64| (s * 1e9) as u64;
    let max = |l: &[f64]| ns(l.iter().copied().fold(0.0, f64::max));
    for (t, b) in trace.lb_steps.iter().zip(balance) {
        assert_eq!(t.round, u64::from(b.round));
        assert_eq!(t.migrations, b.migrations as u64);
        assert_eq!(t.before[2], max(&b.loads_before));
        assert_eq!(t.after[2], max(&b.loads_after));
    }
    let first = &trace.lb_steps[0];
    let ratio = |l: [u64; 3]| l[2] as f64 / l[1] as f64;
    assert!(ratio(first.before) > ratio(first.after), "{first:?}");
    let html = render_report_compact(
        &trace,
        &summarize_compact(&trace, &Default::default()),
        &ReportOptions::default(),
    );
    assert!(html.contains("<h2>Load balancing steps</h2>"));
    assert_eq!(html.matches("<tr class=\"lb-step\"").count(), balance.len());
    let row = format!(
        "<tr class=\"lb-step\" data-round=\"{}\"><td>{}</td>",
        first.round, first.round
    );
    assert!(html.contains(&row), "the first step's row");
    let ratios = format!(
        "<td>{:.2} &#8594; {:.2}</td>",
        ratio(first.before),
        ratio(first.after)
    );
    assert!(html.contains(&ratios), "the first step's max/avg {ratios}");
}

/// Blocks that a balancing step moves together with their neighbours (refine moving
/// the hot spot's blocks on, predicted loads, 256 sim PEs) find each other right
/// after the step: the PE a block leaves tells the block's new PE where the blocks
/// it sent to are, and passes on their own moves in the step, so the step resumed
/// after the balancing step at step 10 does not wait for ghosts forwarded behind a
/// hot block's compute (it ran 0.5 ms over its ideal step when they were forwarded).
#[test]
fn blocks_moved_with_their_neighbours_find_them_after_the_step() {
    let p = JacobiParams {
        grid: 1024,
        block: 32,
        steps: 12,
        cell_ns: 100.0,
        hot_factor: 4.0,
        hot_blocks: 8,
        drift_every: 10,
        predict_load: true,
    };
    let mut c = config(Layer::Sim, 256);
    c.sim.preset = Some(chorus_core::SimPreset::Bgp);
    c.array_lb = "refine".to_string();
    c.lb_period = Some(10);
    let out = jacobi2d::run(&c, p).expect("a balanced run");
    assert!(out.exact(), "{out:?}");
    let f = &out.run.figures;
    let step = f
        .balance
        .iter()
        .find(|b| b.round == 10)
        .expect("a step at 10");
    let resumed = f.step_ends[10] - step.ended;
    assert!(
        resumed < 1.25 * out.ideal_step_s,
        "step 10 took {resumed} s after its balancing step, ideal {} s",
        out.ideal_step_s
    );
}
