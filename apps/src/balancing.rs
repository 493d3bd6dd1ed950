//! What the array load-balancing apps (`jacobi2d`, `lb-test`, `chorus-bench lb`)
//! share: the strategies `--array-lb` offers them, the load each element charges and
//! where, the chare that collects a run's result, and the figures read from a run.

use crate::bench::report::{print, Report};
use chorus_core::api::balance::max_over_avg;
use chorus_core::report::BalanceStep;
use chorus_core::{
    ArrayIndex, ArrayMap, Callback, Chare, Config, Ctx, Entry, Layer, Migratable, Pe,
};
use chorus_core::{Reducer, Registry, RunReport, Runtime, RuntimeError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

/// Register the array strategies every app offers `--array-lb` (the runtime knows
/// `none` by itself): chorus-lb's, so every app and bench gets the same vocabulary.
pub fn register_array_strategies(reg: &mut Registry) -> &mut Registry {
    chorus_lb::array::register_all(reg);
    reg
}

/// Every name `--array-lb` accepts in the apps: `none`, then the registered ones.
pub fn strategy_names() -> Vec<String> {
    let mut reg = Registry::new();
    register_array_strategies(&mut reg);
    let mut names = vec![chorus_core::config::NO_ARRAY_LB.to_string()];
    names.extend(reg.balancer_names());
    names
}

/// From an element's `resume_from_sync`, send `msg` to the element itself, so its
/// next step runs as a handler of its own, like every other step (Charm++ programs
/// resume the same way, with `thisProxy[thisIndex].step()`).
pub fn resume_by_message<C: Chare, I: ArrayIndex>(ctx: &mut Ctx, msg: C::Msg) {
    match (ctx.this_array::<C, I>(), ctx.this_index::<I>()) {
        (Some(array), Some(me)) => array.send(ctx, &me, msg),
        _ => ctx.fail("resume_by_message", "called outside an array element"),
    }
}

/// Why a balancing app's run produced no figures.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The job ended without publishing a figure.
    #[error(
        "the run ended without publishing {what}: the collector never got every element's result"
    )]
    Missing {
        /// The figure that is missing.
        what: &'static str,
    },
}

/// Why a balancing app produced no outcome: parameters `P` refused, or the run failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError<P: std::error::Error + 'static> {
    /// The parameters cannot run.
    #[error(transparent)]
    Params(P),
    /// The job failed or published no result.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Run a balancing app under `config`: its element type `C` registered as
/// `name` beside the collector and the strategies, its array made and started by
/// `start` in main (with where the results go); returns the collector's figures.
pub fn run_app<C: Migratable>(
    config: &Config,
    name: &str,
    start: impl FnOnce(&mut Ctx, Results) + Send + 'static,
) -> Result<Figures, RunError> {
    run_app_with::<C, ()>(
        config,
        name,
        |_| (),
        move |ctx, results, ()| start(ctx, results),
    )
}

/// [`run_app`] for an app with entries of its own: `entries` registers them after
/// the element type, and `start` gets them beside the results.
pub fn run_app_with<C: Migratable, E: Send + 'static>(
    config: &Config,
    name: &str,
    entries: impl FnOnce(&mut Registry) -> E,
    start: impl FnOnce(&mut Ctx, Results, E) + Send + 'static,
) -> Result<Figures, RunError> {
    let mut reg = Registry::new();
    register_array_strategies(&mut reg);
    let collector = Collector::register(&mut reg);
    reg.migratable::<C>(name);
    let own = entries(&mut reg);
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let results = Collector::start(ctx, collector);
        start(ctx, results, own);
    })?;
    Figures::read(&report)
}

/// A run's figures beside the serial reference, and how the run was made.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The layer it ran on.
    pub layer: Layer,
    /// The `--array-lb` strategy.
    pub strategy: String,
    /// The run's figures.
    pub figures: Figures,
    /// The serial computation's checksum.
    pub expected: u64,
}

impl Checked {
    /// The figures of a run under `config`, to be compared with `expected`.
    pub fn new(config: &Config, figures: Figures, expected: u64) -> Self {
        Checked {
            layer: config.layer,
            strategy: config.array_lb.clone(),
            figures,
            expected,
        }
    }

    /// Whether the run's checksum equals the serial one.
    pub fn exact(&self) -> bool {
        self.figures.checksum == self.expected
    }

    /// Seconds per step over `steps` steps (virtual on sim).
    pub fn step_s(&self, steps: u32) -> f64 {
        self.figures.seconds / f64::from(steps.max(1))
    }

    /// The checksum line of a table, `what` naming what was summed.
    pub fn verdict_line(&self, what: &str) -> String {
        let verdict = if self.exact() { "exact" } else { "DIFFERENT" };
        format!(
            "{what} checksum {:016x}, serial {:016x}: {verdict}\n",
            self.figures.checksum, self.expected
        )
    }

    /// The load line of a table.
    pub fn load_line(&self) -> String {
        format!(
            "max/avg PE load {:.2} over the run, {:.2} in the last step\n",
            self.figures.run_max_over_avg(),
            self.figures.last_max_over_avg()
        )
    }

    /// The app's JSON line: the fields every app prints, then the app's own.
    pub fn json_with(&self, app: serde_json::Value) -> String {
        let mut v = self.json_fields();
        if let serde_json::Value::Object(own) = app {
            v.extend(own);
        }
        serde_json::Value::Object(v).to_string()
    }

    /// The JSON fields every app prints: the job, the checksums and the loads.
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let f = &self.figures;
        let pairs = [
            ("layer", self.layer.name().into()),
            ("pes", f.pes.into()),
            ("array_lb", self.strategy.clone().into()),
            ("checksum", format!("{:016x}", f.checksum).into()),
            ("expected", format!("{:016x}", self.expected).into()),
            ("exact", self.exact().into()),
            ("max_over_avg_run", json_num(f.run_max_over_avg())),
            ("max_over_avg_last", json_num(f.last_max_over_avg())),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// An app's main after its flags are parsed: start the job's process (MPI when it
/// runs on mpi), run, print the outcome on the process that speaks, and exit with
/// success only if the result was exact.
pub fn main_of<R: Report, E: std::fmt::Display>(
    prog: &str,
    config: &Config,
    as_json: bool,
    run: impl FnOnce() -> Result<R, E>,
    exact: impl Fn(&R) -> bool,
) -> ExitCode {
    let outcome = crate::job::JobProcess::start(config).and_then(|job| {
        let out = run().map_err(|e| e.to_string())?;
        if job.speaks {
            print(&out, as_json);
        }
        Ok(exact(&out))
    });
    crate::cli::exit_status(prog, outcome)
}

/// Steps whose end times an element keeps (the first ones), so the per-step times
/// of a long run cost each element a bounded 32 KiB.
pub const MAX_TIMED_STEPS: usize = 4096;

/// The load one element charged over a run: in total on each PE it ran on, and in
/// its last step, and when each step's compute ended. Travels with the element when
/// it migrates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadLog {
    /// Seconds charged per PE; at most one entry per PE the element ever ran on.
    by_pe: BTreeMap<Pe, f64>,
    /// Where the last step ran and what it cost.
    last: Option<(Pe, f64)>,
    /// The layer's clock when each step's compute ended, for the first
    /// [`MAX_TIMED_STEPS`] steps.
    ends: Vec<f64>,
}

impl LoadLog {
    /// Compute for `d` here (`ctx.work`: virtual time on sim, spent on threads and
    /// mpi), and note it as this step's load on this PE and when the step ended.
    pub fn charge(&mut self, ctx: &mut Ctx, d: Duration) {
        ctx.work(d);
        let pe = ctx.my_pe();
        *self.by_pe.entry(pe).or_default() += d.as_secs_f64();
        self.last = Some((pe, d.as_secs_f64()));
        if self.ends.len() < MAX_TIMED_STEPS {
            self.ends.push(ctx.now());
        }
    }

    /// Forget the loads charged so far: a restarted job measures its own run, on
    /// PEs numbered anew.
    pub fn clear(&mut self) {
        *self = LoadLog::default();
    }

    /// This element's part of the per-PE loads: `num_pes` run totals, then
    /// `num_pes` last-step loads, summed over the array by [`Collector`].
    pub fn contribution(&self, num_pes: usize) -> Vec<f64> {
        let mut v = vec![0.0; 2 * num_pes];
        for (&pe, &s) in &self.by_pe {
            v[pe as usize] += s;
        }
        if let Some((pe, s)) = self.last {
            v[num_pes + pe as usize] += s;
        }
        v
    }
}

/// Where the elements' results go: a checksum, the per-PE loads and the step ends.
#[derive(Clone, Serialize, Deserialize)]
pub struct Results {
    /// Receives the wrapping sum of the elements' checksums.
    pub checksum: Callback,
    /// Receives the sum of the elements' [`LoadLog::contribution`]s.
    pub loads: Callback,
    /// Receives, per step, the latest end of that step over the elements.
    pub ends: Callback,
}

impl Results {
    /// Contribute an element's checksum and load log, once, after its last step.
    pub fn contribute(&self, ctx: &mut Ctx, checksum: u64, log: &LoadLog) {
        ctx.contribute(checksum, Reducer::Sum, self.checksum.clone());
        let pes = ctx.num_pes();
        ctx.contribute(log.contribution(pes), Reducer::Sum, self.loads.clone());
        ctx.contribute(log.ends.clone(), Reducer::Max, self.ends.clone());
    }
}

/// What the collector receives.
#[derive(Clone, Serialize, Deserialize)]
pub enum CollectorMsg {
    /// The elements' checksums, summed.
    Checksum(u64),
    /// The elements' load logs, summed.
    Loads(Vec<f64>),
    /// The elements' step ends, the latest of each step.
    Ends(Vec<f64>),
}

/// The entries of [`Collector`], registered by [`Collector::register`].
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct CollectorEntries {
    checksum: Entry<Collector, u64>,
    loads: Entry<Collector, Vec<f64>>,
    ends: Entry<Collector, Vec<f64>>,
}

/// The one element of an array on PE 0 (an array, not a singleton, so a checkpoint
/// saves it) that waits for every result, publishes them with the time the checksum
/// came, and ends the job.
#[derive(Serialize, Deserialize)]
pub struct Collector {
    checksum: Option<u64>,
    loads: Option<Vec<f64>>,
    ends: Option<Vec<f64>>,
}

impl Collector {
    /// Register the collector and its entries.
    pub fn register(reg: &mut Registry) -> CollectorEntries {
        reg.migratable::<Collector>("chorus_apps::balancing::Collector");
        CollectorEntries {
            checksum: reg.entry::<Collector, u64>("Collector::checksum", CollectorMsg::Checksum),
            loads: reg.entry::<Collector, Vec<f64>>("Collector::loads", CollectorMsg::Loads),
            ends: reg.entry::<Collector, Vec<f64>>("Collector::ends", CollectorMsg::Ends),
        }
    }

    /// Create the collector on PE 0 from `main` (or, in a restarted job, find the
    /// one restored), publish the start time, and return where the elements send
    /// their results.
    pub fn start(ctx: &mut Ctx, entries: CollectorEntries) -> Results {
        let restored = ctx.restored_arrays::<Collector, usize>().into_iter().next();
        let me =
            restored.unwrap_or_else(|| ctx.create_array_1d::<Collector>(1, (), ArrayMap::Block));
        ctx.publish("start_s", &ctx.now());
        Results {
            checksum: Callback::array_element(&me, &0, entries.checksum),
            loads: Callback::array_element(&me, &0, entries.loads),
            ends: Callback::array_element(&me, &0, entries.ends),
        }
    }
}

impl Migratable for Collector {}

impl Chare for Collector {
    type Init = ();
    type Msg = CollectorMsg;

    fn create((): (), _: &mut Ctx) -> Self {
        Collector {
            checksum: None,
            loads: None,
            ends: None,
        }
    }

    fn handle(&mut self, msg: CollectorMsg, ctx: &mut Ctx) {
        match msg {
            CollectorMsg::Checksum(c) => {
                // The run's time ends with its result; the per-PE loads and step
                // ends are the bench's instruments (16 KB a PE up the tree at 1,024
                // PEs), which a program would not reduce, so they are not timed.
                ctx.publish("end_s", &ctx.now());
                self.checksum = Some(c);
            }
            CollectorMsg::Loads(l) => self.loads = Some(l),
            CollectorMsg::Ends(e) => self.ends = Some(e),
        }
        if let (Some(c), Some(l), Some(e)) = (self.checksum, &self.loads, &self.ends) {
            ctx.publish("checksum", &c);
            ctx.publish("loads", l);
            ctx.publish("ends", e);
            ctx.exit();
        }
    }
}

/// What a run of a balancing app measured.
#[derive(Debug, Clone)]
pub struct Figures {
    /// PEs in the job.
    pub pes: usize,
    /// The wrapping sum of every element's checksum.
    pub checksum: u64,
    /// Seconds from the start to the checksum, the run's result (virtual on sim).
    pub seconds: f64,
    /// Per PE, the seconds charged there over the run.
    pub run_loads: Vec<f64>,
    /// Per PE, the seconds charged there in each element's last step.
    pub last_loads: Vec<f64>,
    /// Per step, seconds from the start until its last element finished computing
    /// it (the first [`MAX_TIMED_STEPS`] steps).
    pub step_ends: Vec<f64>,
    /// The balancing steps, as PE 0 recorded them, timed from the start.
    pub balance: Vec<BalanceStep>,
}

impl Figures {
    /// Read the collector's figures from a finished run.
    pub fn read(report: &RunReport) -> Result<Figures, RunError> {
        let pes = report.pes;
        let missing = |what| RunError::Missing { what };
        let start: f64 = report.output("start_s").ok_or(missing("the start time"))?;
        let end: f64 = report.output("end_s").ok_or(missing("the end time"))?;
        let checksum = report.output("checksum").ok_or(missing("the checksum"))?;
        let mut loads: Vec<f64> = report.output("loads").ok_or(missing("the loads"))?;
        loads.resize(2 * pes, 0.0);
        let last_loads = loads.split_off(pes);
        let ends: Vec<f64> = report.output("ends").ok_or(missing("the step ends"))?;
        // On the run's clock, as the step ends are.
        let balance = report
            .per_pe
            .first()
            .map(|r| r.balance.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|b| BalanceStep {
                started: b.started - start,
                ended: b.ended - start,
                ..b
            })
            .collect();
        Ok(Figures {
            pes,
            checksum,
            seconds: end - start,
            run_loads: loads,
            last_loads,
            step_ends: ends.into_iter().map(|e| e - start).collect(),
            balance,
        })
    }

    /// The most loaded PE over the mean, over the whole run.
    pub fn run_max_over_avg(&self) -> f64 {
        max_over_avg(&self.run_loads)
    }

    /// The most loaded PE over the mean, in the last step.
    pub fn last_max_over_avg(&self) -> f64 {
        max_over_avg(&self.last_loads)
    }

    /// Seconds each timed step took: from the previous step's end (or the start)
    /// to its own.
    pub fn step_times(&self) -> Vec<f64> {
        let mut prev = 0.0;
        self.step_ends
            .iter()
            .map(|&e| {
                let d = e - prev;
                prev = e;
                d
            })
            .collect()
    }
}

/// A figure as JSON: a number, or null when it is not finite.
pub fn json_num(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_offer_none_first() {
        assert_eq!(strategy_names().first().map(String::as_str), Some("none"));
    }

    #[test]
    fn a_load_log_puts_each_pe_in_its_slot() {
        let mut log = LoadLog::default();
        log.by_pe.insert(2, 1.5);
        log.by_pe.insert(0, 0.5);
        log.last = Some((2, 0.25));
        assert_eq!(log.contribution(3), vec![0.5, 0.0, 1.5, 0.0, 0.0, 0.25]);
    }
}
