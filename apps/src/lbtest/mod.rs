//! lb-test: a synthetic benchmark in the spirit of Charm++'s `lb_test`. Objects on a
//! ring, a 2-D mesh or a random graph each step send to their neighbours and compute
//! a load drawn from a distribution that changes every few steps; the checksum of
//! everything every object received is checked against a serial computation.
#![forbid(unsafe_code)]

pub mod object;
pub mod params;

use crate::balancing::{json_num, run_app, AppError, Checked};
use crate::bench::report::{lower_debug, Report};
use chorus_core::{ArrayMap, Config};
use object::{Object, ObjectInit, ObjectMsg};
pub use params::{LbTestParams, LoadDist, ParamError, Topology};
use serde_json::json;

/// Why an lb-test run produced no outcome.
pub type LbTestError = AppError<ParamError>;

/// What one lb-test run measured, beside the serial checksum.
#[derive(Debug, Clone)]
pub struct LbTestOutcome {
    /// What was run.
    pub params: LbTestParams,
    /// The run's figures and the serial checksum.
    pub run: Checked,
}

impl LbTestOutcome {
    /// Whether every object received exactly what the serial computation says.
    pub fn exact(&self) -> bool {
        self.run.exact()
    }

    /// Seconds per step (virtual on sim).
    pub fn step_s(&self) -> f64 {
        self.run.step_s(self.params.steps)
    }

    /// The compute per step spread evenly over the PEs, seconds.
    pub fn ideal_step_s(&self) -> f64 {
        self.params.mean_work_per_step_s() / self.run.figures.pes.max(1) as f64
    }
}

/// Run lb-test under `config` (its seed is `params.seed`) and check its checksum.
pub fn run(config: &Config, params: LbTestParams) -> Result<LbTestOutcome, LbTestError> {
    params.validate().map_err(AppError::Params)?;
    let figures = run_app::<Object>(
        config,
        "chorus_apps::lbtest::Object",
        move |ctx, results| {
            let init = ObjectInit { params, results };
            let objects = ctx.create_array_1d::<Object>(params.objects, init, ArrayMap::Block);
            objects.broadcast(ctx, ObjectMsg::Step);
        },
    )?;
    Ok(LbTestOutcome {
        params,
        run: Checked::new(config, figures, params.serial_checksum()),
    })
}

impl Report for LbTestOutcome {
    fn json(&self) -> String {
        let p = &self.params;
        self.run.json_with(json!({
                "app": "lb-test",
                "objects": p.objects,
                "steps": p.steps,
                "topology": lower_debug(&p.topology),
                "load": lower_debug(&p.load),
                "ratio": json_num(p.ratio),
                "change_every": p.change_every,
                "step_s": json_num(self.step_s()),
                "ideal_step_s": json_num(self.ideal_step_s()),
        }))
    }

    fn table(&self) -> String {
        let p = &self.params;
        format!(
            "lb-test {n} objects on a {topo} graph, {s} steps, {load} loads {base} us x1..{ratio} changing every {every} steps, {pes} PEs ({layer}), --array-lb {lb}\n\
             {verdict}\
             time per step {t:.3} ms, ideal {i:.3} ms (compute / PEs), ratio {r:.2}\n\
             {loads}",
            n = p.objects,
            topo = lower_debug(&p.topology),
            s = p.steps,
            load = lower_debug(&p.load),
            base = p.base_us,
            ratio = p.ratio,
            every = p.change_every,
            pes = self.run.figures.pes,
            layer = self.run.layer.name(),
            lb = self.run.strategy,
            verdict = self.run.verdict_line("receipts"),
            t = self.step_s() * 1e3,
            i = self.ideal_step_s() * 1e3,
            r = self.step_s() / self.ideal_step_s(),
            loads = self.run.load_line(),
        )
    }
}
