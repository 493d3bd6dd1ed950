//! lb-test: a synthetic benchmark in the spirit of Charm++'s `lb_test`. Objects on a
//! ring, a 2-D mesh or a random graph each step send to their neighbours and compute
//! a load drawn from a distribution that changes every few steps; the checksum of
//! everything every object received is checked against a serial computation.

pub mod object;
pub mod params;

use crate::balancing::{json_num, register_array_strategies, Collector, Figures, RunError};
use crate::bench::report::{lower_debug, Report};
use chorus_core::{ArrayMap, Config, Layer, Registry, Runtime};
use object::{Object, ObjectInit, ObjectMsg};
pub use params::{LbTestParams, LoadDist, ParamError, Topology};
use serde_json::json;

/// Why an lb-test run produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum LbTestError {
    /// The parameters cannot run.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// The job failed or published no result.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// What one lb-test run measured, beside the serial checksum.
#[derive(Debug, Clone)]
pub struct LbTestOutcome {
    /// What was run.
    pub params: LbTestParams,
    /// The layer it ran on.
    pub layer: Layer,
    /// The `--array-lb` strategy.
    pub strategy: String,
    /// The run's figures.
    pub figures: Figures,
    /// The serially computed checksum.
    pub expected: u64,
}

impl LbTestOutcome {
    /// Whether every object received exactly what the serial computation says.
    pub fn exact(&self) -> bool {
        self.figures.checksum == self.expected
    }

    /// Seconds per step (virtual on sim).
    pub fn step_s(&self) -> f64 {
        self.figures.seconds / f64::from(self.params.steps.max(1))
    }

    /// The compute per step spread evenly over the PEs, seconds.
    pub fn ideal_step_s(&self) -> f64 {
        self.params.mean_work_per_step_s() / self.figures.pes.max(1) as f64
    }
}

/// Run lb-test under `config` (its seed is `params.seed`) and check its checksum.
pub fn run(config: &Config, params: LbTestParams) -> Result<LbTestOutcome, LbTestError> {
    params.validate()?;
    let mut reg = Registry::new();
    register_array_strategies(&mut reg);
    let entries = Collector::register(&mut reg);
    reg.migratable::<Object>("chorus_apps::lbtest::Object");
    let report = Runtime::new(reg, config.clone())
        .run(move |ctx| {
            let results = Collector::start(ctx, entries);
            let init = ObjectInit { params, results };
            let objects = ctx.create_array_1d::<Object>(params.objects, init, ArrayMap::Block);
            objects.broadcast(ctx, ObjectMsg::Step);
        })
        .map_err(RunError::from)?;
    Ok(LbTestOutcome {
        params,
        layer: config.layer,
        strategy: config.array_lb.clone(),
        figures: Figures::read(&report)?,
        expected: params.serial_checksum(),
    })
}

impl Report for LbTestOutcome {
    fn json(&self) -> String {
        let p = &self.params;
        json!({
            "app": "lb-test",
            "layer": self.layer.name(),
            "pes": self.figures.pes,
            "array_lb": self.strategy,
            "objects": p.objects,
            "steps": p.steps,
            "topology": lower_debug(&p.topology),
            "load": lower_debug(&p.load),
            "ratio": json_num(p.ratio),
            "change_every": p.change_every,
            "checksum": format!("{:016x}", self.figures.checksum),
            "expected": format!("{:016x}", self.expected),
            "exact": self.exact(),
            "step_s": json_num(self.step_s()),
            "ideal_step_s": json_num(self.ideal_step_s()),
            "max_over_avg_run": json_num(self.figures.run_max_over_avg()),
            "max_over_avg_last": json_num(self.figures.last_max_over_avg()),
        })
        .to_string()
    }

    fn table(&self) -> String {
        let p = &self.params;
        let f = &self.figures;
        format!(
            "lb-test {n} objects on a {topo} graph, {s} steps, {load} loads {base} us x1..{ratio} changing every {every} steps, {pes} PEs ({layer}), --array-lb {lb}\n\
             receipts checksum {c:016x}, serial {e:016x}: {verdict}\n\
             time per step {t:.3} ms, ideal {i:.3} ms (compute / PEs), ratio {r:.2}\n\
             max/avg PE load {ma:.2} over the run, {ml:.2} in the last step\n",
            n = p.objects,
            topo = lower_debug(&p.topology),
            s = p.steps,
            load = lower_debug(&p.load),
            base = p.base_us,
            ratio = p.ratio,
            every = p.change_every,
            pes = f.pes,
            layer = self.layer.name(),
            lb = self.strategy,
            c = f.checksum,
            e = self.expected,
            verdict = if self.exact() { "exact" } else { "DIFFERENT" },
            t = self.step_s() * 1e3,
            i = self.ideal_step_s() * 1e3,
            r = self.step_s() / self.ideal_step_s(),
            ma = f.run_max_over_avg(),
            ml = f.last_max_over_avg(),
        )
    }
}
