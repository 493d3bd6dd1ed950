//! `chorus-bench lb`: Jacobi2D with its moving hot spot on the sim layer, once per
//! array load-balancing strategy, each time per step printed beside the ideal (the
//! compute spread evenly plus the stencil's communication) in one run.

use crate::balancing::{json_num, strategy_names};
use crate::bench::report::{lower_debug, Report};
use crate::jacobi2d::{self, JacobiArgs, JacobiOutcome, JacobiParams};
use chorus_core::config::NO_ARRAY_LB;
use chorus_core::report::BalanceStep;
use chorus_core::{Config, Layer, SimPreset};
use serde_json::json;
use std::fmt::Write;

/// The flags of `chorus-bench lb`.
#[derive(Debug, Clone, clap::Args)]
pub struct LbArgs {
    /// Strategies to compare, comma separated, or `all` (none and every registered one).
    #[arg(long, default_value = "all")]
    pub strategies: String,
    /// The stencil and its hot spot.
    #[command(flatten)]
    pub jacobi: JacobiArgs,
    /// The job (always on the sim layer; --array-lb is set per strategy, and
    /// --lb-period applies to every strategy but none).
    #[command(flatten)]
    pub config: Config,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

impl LbArgs {
    /// The strategies asked for, each known; an unknown name is a usage error.
    pub fn strategies(&self) -> Result<Vec<String>, String> {
        let known = strategy_names();
        if self.strategies == "all" {
            return Ok(known);
        }
        let mut out = Vec::new();
        for name in self.strategies.split(',').map(str::trim) {
            if !known.iter().any(|k| k == name) {
                return Err(format!(
                    "--strategies {name}: no such strategy; known: {}",
                    known.join(", ")
                ));
            }
            out.push(name.to_string());
        }
        Ok(out)
    }

    /// Usage errors clap cannot see: the strategies and the Jacobi2D sizes.
    pub fn check(&self) -> Result<(), String> {
        if self.config.array_lb != NO_ARRAY_LB {
            return Err(format!(
                "--array-lb {} has no effect with chorus-bench lb, which runs each of --strategies",
                self.config.array_lb
            ));
        }
        if self.config.lb_manual {
            return Err("--lb-manual has no effect with chorus-bench lb: its Jacobi2D never calls ctx.start_lb, so every step would wait; use --lb-period or --lb-period-secs".into());
        }
        self.strategies()?;
        self.jacobi.params().validate().map_err(|e| e.to_string())
    }

    /// The job of one strategy's run: sim, that strategy, and a period only with one.
    pub fn config_for(&self, strategy: &str) -> Config {
        let mut c = self.config.clone();
        c.layer = Layer::Sim;
        c.array_lb = strategy.to_string();
        if strategy == NO_ARRAY_LB {
            (c.lb_period, c.lb_period_secs, c.lb_manual) = (None, None, false);
        }
        c
    }
}

/// What `chorus-bench lb` measured: one Jacobi2D run per strategy.
#[derive(Debug, Clone)]
pub struct LbReport {
    /// The machine model simulated.
    pub preset: SimPreset,
    /// What every run computed.
    pub params: JacobiParams,
    /// One run per strategy, in the order asked.
    pub runs: Vec<JacobiOutcome>,
}

/// Run Jacobi2D once per strategy; a grid that differs from the serial run's is an
/// error naming the strategy.
pub fn measure(args: &LbArgs) -> Result<LbReport, String> {
    let params = args.jacobi.params();
    let mut runs = Vec::new();
    for name in args.strategies()? {
        let out = jacobi2d::run(&args.config_for(&name), params)
            .map_err(|e| format!("--array-lb {name}: {e}"))?;
        if !out.exact() {
            return Err(format!(
                "--array-lb {name}: the grid's checksum {:016x} differs from the serial run's {:016x}",
                out.run.figures.checksum, out.run.expected
            ));
        }
        runs.push(out);
    }
    Ok(LbReport {
        preset: args.config.sim.chosen_preset(),
        params,
        runs,
    })
}

impl Report for LbReport {
    fn json(&self) -> String {
        let p = &self.params;
        let runs: Vec<_> = self
            .runs
            .iter()
            .map(|r| {
                json!({
                    "array_lb": r.run.strategy,
                    "step_s": json_num(r.step_s()),
                    "ideal_step_s": json_num(r.ideal_step_s),
                    "over_ideal": json_num(r.step_s() / r.ideal_step_s),
                    "max_over_avg_run": json_num(r.run.figures.run_max_over_avg()),
                    "exact": r.exact(),
                    "over_ideal_ms": Breakdown::of(r).json(),
                })
            })
            .collect();
        json!({
            "bench": "lb",
            "preset": lower_debug(&self.preset),
            "pes": self.runs.first().map_or(0, |r| r.run.figures.pes),
            "grid": p.grid,
            "block": p.block,
            "steps": p.steps,
            "hot_factor": json_num(p.hot_factor),
            "hot_blocks": p.hot_blocks,
            "runs": runs,
        })
        .to_string()
    }

    fn table(&self) -> String {
        let p = &self.params;
        let pes = self.runs.first().map_or(0, |r| r.run.figures.pes);
        let mut out = format!(
            "jacobi2d {g}x{g} in {b}x{b} blocks, {s} steps, hot spot {h}x{h} blocks x{k}, {pes} sim PEs ({preset})\n",
            g = p.grid,
            b = p.block,
            s = p.steps,
            h = p.hot_blocks,
            k = p.hot_factor,
            preset = lower_debug(&self.preset),
        );
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>12} {:>9} {:>8}",
            "array-lb", "step ms", "ideal ms", "/ideal", "max/avg"
        );
        for r in &self.runs {
            let _ = writeln!(
                out,
                "{:<14} {:>12.4} {:>12.4} {:>9.2} {:>8.2}",
                r.run.strategy,
                r.step_s() * 1e3,
                r.ideal_step_s * 1e3,
                r.step_s() / r.ideal_step_s,
                r.run.figures.run_max_over_avg(),
            );
        }
        let _ = writeln!(
            out,
            "time over the ideal, ms in all the steps:\n{:<14} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "array-lb", "total", "gathers", "lb steps", "resumed", "others", "end"
        );
        for r in &self.runs {
            let b = Breakdown::of(r);
            let _ = writeln!(
                out,
                "{:<14} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                r.run.strategy,
                b.total() * 1e3,
                b.gathers * 1e3,
                b.lb_steps * 1e3,
                b.resumed * 1e3,
                b.others * 1e3,
                b.end * 1e3,
            );
        }
        for r in &self.runs {
            out.push_str(&detail(r));
        }
        out
    }
}

/// Where a run's time over its ideal went, in seconds: the
/// gathers (from the last element finishing the step before a balancing step to PE
/// 0's decision; before step 0 also the array's creation), the balancing steps
/// themselves (decision, plan, migrations, resume), the steps resumed after them
/// (their own time over the ideal step: forwarded ghosts, the new neighbours'
/// ghost costs, a placement that is off), and every other step's time over the
/// ideal (imbalance left and the placement's ghost costs), and the end: from the
/// last step's end to the checksum (its reduction).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Breakdown {
    /// Seconds from a step's end to the balancing step's decision, summed.
    pub gathers: f64,
    /// Seconds of the balancing steps, decision to resume, summed.
    pub lb_steps: f64,
    /// The steps run right after a balancing step: seconds over the ideal, summed.
    pub resumed: f64,
    /// Every other step: seconds over the ideal, summed.
    pub others: f64,
    /// Seconds from the last timed step's end to the run's result.
    pub end: f64,
}

impl Breakdown {
    /// The breakdown of run `r` against its ideal step.
    pub fn of(r: &JacobiOutcome) -> Self {
        let f = &r.run.figures;
        Self::from_parts(&f.step_ends, &f.balance, r.ideal_step_s, f.seconds)
    }

    /// The breakdown of steps ending at `ends` (from the start) with balancing
    /// steps `balance`, against `ideal` seconds a step, in a run of `seconds`.
    pub fn from_parts(ends: &[f64], balance: &[BalanceStep], ideal: f64, seconds: f64) -> Self {
        let mut out = Breakdown {
            end: seconds - ends.last().copied().unwrap_or(0.0),
            ..Breakdown::default()
        };
        let mut prev = 0.0;
        for &end in ends {
            // The balancing steps that ran inside this step's time (at most one).
            let inside: Vec<&BalanceStep> = balance
                .iter()
                .filter(|b| b.started >= prev && b.started < end)
                .collect();
            match (inside.first(), inside.last()) {
                (Some(first), Some(last)) => {
                    out.gathers += first.started - prev;
                    out.lb_steps += inside.iter().map(|b| b.ended - b.started).sum::<f64>();
                    out.resumed += end - last.ended - ideal;
                }
                _ => out.others += end - prev - ideal,
            }
            prev = end;
        }
        out
    }

    /// Seconds over the ideal in all.
    pub fn total(&self) -> f64 {
        self.gathers + self.lb_steps + self.resumed + self.others + self.end
    }

    /// The parts as JSON, in milliseconds.
    fn json(&self) -> serde_json::Value {
        json!({
            "total": json_num(self.total() * 1e3),
            "gathers": json_num(self.gathers * 1e3),
            "lb_steps": json_num(self.lb_steps * 1e3),
            "resumed": json_num(self.resumed * 1e3),
            "others": json_num(self.others * 1e3),
            "end": json_num(self.end * 1e3),
        })
    }
}

/// One run's balancing steps and per-step times, in milliseconds.
fn detail(r: &JacobiOutcome) -> String {
    let f = &r.run.figures;
    let mut out = format!("{}:\n", r.run.strategy);
    for b in &f.balance {
        let _ = writeln!(
            out,
            "  lb step {}: at {:.3} ms, {:.3} ms, {} moves, max/avg {:.2} -> {:.2}",
            b.round,
            b.started * 1e3,
            (b.ended - b.started) * 1e3,
            b.migrations,
            b.before,
            b.after,
        );
    }
    let steps: Vec<String> = f
        .step_times()
        .iter()
        .map(|t| format!("{:.3}", t * 1e3))
        .collect();
    let _ = writeln!(out, "  step ms: {}", steps.join(" "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(started: f64, ended: f64) -> BalanceStep {
        BalanceStep {
            round: 0,
            strategy: "greedy".into(),
            objects: 0,
            migrations: 0,
            before: 1.0,
            after: 1.0,
            decide_s: 0.0,
            started,
            ended,
            loads_before: Vec::new(),
            loads_after: Vec::new(),
        }
    }

    #[test]
    fn the_breakdown_splits_each_step_over_the_ideal() {
        // Ideal 1.0 a step. Step 0: gather 0.5, balance 0.25, resumed step 2.0 (1.0
        // over); step 1: 1.5 (0.5 over); step 2: gather 0.25, balance 0.5, 1.25.
        let ends = [2.75, 4.25, 6.25];
        let balance = [step(0.5, 0.75), step(4.5, 5.0)];
        let b = Breakdown::from_parts(&ends, &balance, 1.0, 6.5);
        assert_eq!(
            b,
            Breakdown {
                gathers: 0.75,
                lb_steps: 0.75,
                resumed: 1.25,
                others: 0.5,
                end: 0.25,
            }
        );
        assert_eq!(b.total(), 6.5 - 3.0);
    }
}
