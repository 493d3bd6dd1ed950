//! The sim layer at scale: a broadcast to a group member on every PE, then a sum
//! reduction back to PE 0, with the simulator's own figures and memory per PE.

use crate::bench::error::BenchError;
use crate::bench::report::{lower_debug, peak_rss_mib, Report};
use chorus_core::{
    Callback, Chare, Config, Ctx, Entry, GroupProxy, Layer, Reducer, Registry, Runtime, SimPreset,
    SimStats, TraceReport,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fmt::Write;
use std::sync::OnceLock;

/// Reads the bytes currently allocated on the heap; set by a binary whose global
/// allocator counts them.
pub static HEAP_BYTES: OnceLock<fn() -> usize> = OnceLock::new();

fn heap_bytes() -> Option<usize> {
    HEAP_BYTES.get().map(|f| f())
}

/// A group member: answers the broadcast with a contribution of 1 to the member on
/// PE 0, which gets the sum.
struct Member {
    done: Entry<Member, u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MemberMsg {
    Go,
    Done(u64),
}

impl Chare for Member {
    type Init = Entry<Member, u64>;
    type Msg = MemberMsg;
    fn create(done: Entry<Member, u64>, _: &mut Ctx) -> Self {
        Member { done }
    }
    fn handle(&mut self, msg: MemberMsg, ctx: &mut Ctx) {
        match msg {
            MemberMsg::Go => {
                let cb = match ctx.this_group::<Member>() {
                    Some(g) => Callback::group_member(&g, 0, self.done),
                    None => Callback::Exit,
                };
                ctx.contribute(1u64, Reducer::Sum, cb);
            }
            MemberMsg::Done(sum) => {
                ctx.publish("sum", &sum);
                ctx.publish("done_s", &ctx.now());
                if let Some(b) = heap_bytes() {
                    ctx.publish("heap_bytes", &(b as u64));
                }
                ctx.exit();
            }
        }
    }
}

/// What one sim-scale run measured.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleResult {
    /// PEs simulated.
    pub pes: u64,
    /// The reduction's result (must equal `pes`).
    pub sum: u64,
    /// Virtual time when the sum reached PE 0, microseconds.
    pub virtual_time_us: f64,
    /// Heap bytes live when the sum arrived, over the heap before the run, per PE
    /// (0 when the binary does not count heap bytes).
    pub bytes_per_pe: f64,
    /// The simulator's statistics.
    pub stats: SimStats,
    /// The trace written under `--trace`.
    pub trace: Option<TraceReport>,
}

fn registry() -> (Registry, Entry<Member, u64>) {
    let mut reg = Registry::new();
    reg.chare::<Member>("Member");
    let done = reg.entry::<Member, u64>("Member::done", MemberMsg::Done);
    (reg, done)
}

/// Run the broadcast and reduction on `config.pes` simulated PEs.
pub fn run(mut config: Config) -> Result<ScaleResult, BenchError> {
    config.layer = Layer::Sim;
    let pes = u64::from(config.pes);
    let (reg, done) = registry();
    let before = heap_bytes().unwrap_or(0);
    let report = Runtime::new(reg, config).run(move |ctx| {
        let group: GroupProxy<Member> = ctx.create_group(done);
        group.broadcast(ctx, MemberMsg::Go);
    })?;
    let sum: u64 = report.output("sum").ok_or(BenchError::Unpublished {
        what: "the reduction's sum at PE 0",
    })?;
    let done_s: f64 = report.output("done_s").unwrap_or(f64::NAN);
    let heap: Option<u64> = report.output("heap_bytes");
    let stats = report.sim.clone().ok_or(BenchError::NotSimulated)?;
    Ok(ScaleResult {
        pes,
        sum,
        virtual_time_us: done_s * 1e6,
        bytes_per_pe: heap.map_or(0.0, |h| h.saturating_sub(before as u64) as f64 / pes as f64),
        stats,
        trace: report.trace,
    })
}

/// The flags of `chorus-bench sim-scale`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimScaleArgs {
    /// The job (always on the sim layer).
    #[command(flatten)]
    pub config: Config,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Run the job this many times in one process and report the last run, with
    /// every run's events/s: the first pays for memory the kernel maps afresh.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
}

/// What `chorus-bench sim-scale` measured, with the machine model and the memory.
#[derive(Debug, Clone)]
pub struct SimScaleReport {
    /// The machine model simulated.
    pub preset: SimPreset,
    /// The run's figures.
    pub result: ScaleResult,
    /// Peak resident set size after the run, MiB.
    pub peak_rss_mib: Option<f64>,
    /// Events per second of the event loop of each run, first to last.
    pub rates: Vec<f64>,
}

/// Run the broadcast and reduction; a sum other than the PE count is an error.
pub fn measure(args: &SimScaleArgs) -> Result<SimScaleReport, String> {
    let preset = args.config.sim.chosen_preset();
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..args.reps {
        let r = run(args.config.clone()).map_err(|e| e.to_string())?;
        if r.sum != r.pes {
            return Err(format!(
                "the reduction over {} PEs summed to {}: a contribution was lost or counted twice",
                r.pes, r.sum
            ));
        }
        rates.push(r.stats.events_per_s);
        last = Some(r);
    }
    Ok(SimScaleReport {
        preset,
        result: last.expect("--reps is at least 1"),
        peak_rss_mib: peak_rss_mib(),
        rates,
    })
}

impl Report for SimScaleReport {
    fn json(&self) -> String {
        let r = &self.result;
        json!({
            "pes": r.pes,
            "preset": lower_debug(&self.preset),
            "events": r.stats.events,
            "events_per_s": r.stats.events_per_s,
            "events_per_s_runs": self.rates,
            "wall_s": r.stats.wall_s,
            "event_loop_s": r.stats.events_s,
            "virtual_time_us": r.virtual_time_us,
            "makespan_us": r.stats.makespan_us,
            "messages": r.stats.messages,
            "bytes": r.stats.bytes,
            "bytes_per_pe": r.bytes_per_pe,
            "peak_rss_mib": self.peak_rss_mib,
            "sum": r.sum,
            "digest": format!("{:016x}", r.stats.digest),
            "trace": r.trace,
        })
        .to_string()
    }

    fn table(&self) -> String {
        let r = &self.result;
        let mut s = format!(
            "{} PEs ({:?}): broadcast + sum reduction in {:.3} us virtual\n{}\n",
            r.pes,
            self.preset,
            r.virtual_time_us,
            r.stats.to_text()
        );
        let _ = writeln!(
            s,
            "heap per PE at the reduction: {:.0} B; peak RSS {:.1} MiB",
            r.bytes_per_pe,
            self.peak_rss_mib.unwrap_or(f64::NAN)
        );
        if self.rates.len() > 1 {
            let rates: Vec<String> = self.rates.iter().map(|r| format!("{r:.0}")).collect();
            let _ = writeln!(s, "events/s of each run: {}", rates.join(", "));
        }
        if let Some(t) = &r.trace {
            let _ = writeln!(s, "{t}");
        }
        s
    }
}
