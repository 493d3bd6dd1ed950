//! `chorus-bench messaging`: chorus's throughput and round trip against crossbeam and
//! actix, best of the repetitions, untraced and (with `--trace`) traced, and the
//! ratios it aims for.

use super::ask::ask_rtt_ns;
use super::{cross_pe_msgs_per_s, pingpong_rtt_ns, same_pe_msgs_per_s, Measured};
use crate::bench::error::BenchError;
use crate::bench::report::{Better, Report, Target};
use chorus_core::TraceReport;
use serde_json::json;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Same-PE throughput over actix's.
pub const SAME_PE_VS_ACTIX: Target = Target::AtLeast(5.0);
/// Cross-PE throughput over actix's.
pub const CROSS_PE_VS_ACTIX: Target = Target::AtLeast(1.0);
/// Ping-pong round trip over crossbeam's.
pub const PINGPONG_VS_CROSSBEAM: Target = Target::AtMost(1.5);
/// Traced throughput over untraced.
pub const TRACED_THROUGHPUT: Target = Target::AtLeast(0.9);
/// Traced ping-pong round trip over untraced.
pub const TRACED_RTT: Target = Target::AtMost(1.25);
/// Issue 34's target for a task's `ask().await` round trip over the chare ping-pong's.
pub const ASK_VS_PINGPONG: Target = Target::AtMost(1.2);

/// The flags of `chorus-bench messaging`.
#[derive(Debug, Clone, clap::Args)]
pub struct MessagingArgs {
    /// Messages per throughput measurement.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1000..))]
    pub messages: u64,
    /// Round trips per ping-pong measurement.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub rounds: u64,
    /// Repetitions of each measurement; the best is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also run every measurement traced to this file, interleaved with the
    /// untraced runs, and report the cost of tracing.
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

/// One chorus figure: best untraced and, with `--trace`, best traced.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// Best of the untraced runs.
    pub plain: f64,
    /// Best of the traced runs, if traced.
    pub traced: Option<f64>,
}

/// The baselines' figures, each the best of the repetitions.
#[derive(Debug, Clone, Copy)]
pub struct Baselines {
    /// crossbeam channel ping-pong round trip, ns.
    pub crossbeam_rtt_ns: f64,
    /// The same with envelope-sized messages, ns.
    pub crossbeam_envelope_rtt_ns: f64,
    /// actix messages per second (100 actors).
    pub actix_msgs_per_s: f64,
}

/// What `chorus-bench messaging` measured.
#[derive(Debug, Clone)]
pub struct MessagingReport {
    /// Same-PE messages per second.
    pub same_pe: Pair,
    /// Cross-PE messages per second.
    pub cross_pe: Pair,
    /// Ping-pong round trip, ns.
    pub rtt: Pair,
    /// The same round trip as a task's `ask().await`, ns.
    pub ask_rtt: Pair,
    /// The trace report of the last traced cross-PE run.
    pub cross_pe_trace: Option<TraceReport>,
    /// The baselines.
    pub baselines: Baselines,
    /// Messages per throughput measurement.
    pub messages: u64,
    /// Round trips per ping-pong.
    pub rounds: u64,
    /// Repetitions of each measurement.
    pub reps: u32,
}

/// Best of `reps` runs of one measurement, untraced and (if `trace`) traced,
/// alternating so both see the same machine noise; the last traced run's report too.
fn best_pair(
    reps: u32,
    better: Better,
    trace: Option<&Path>,
    f: impl Fn(Option<&Path>) -> Result<Measured, BenchError>,
) -> Result<(Pair, Option<TraceReport>), BenchError> {
    let (mut plain, mut traced, mut last) = (None, None, None);
    for _ in 0..reps.max(1) {
        plain = Some(better.pick(plain, f(None)?.value));
        if let Some(path) = trace {
            let m = f(Some(path))?;
            traced = Some(better.pick(traced, m.value));
            last = m.trace;
        }
    }
    let pair = Pair {
        plain: plain.unwrap_or(0.0),
        traced,
    };
    Ok((pair, last))
}

/// Run every measurement of `args`, chorus's and the baselines'.
pub fn measure(args: &MessagingArgs) -> Result<MessagingReport, String> {
    let (reps, trace) = (args.reps, args.trace.as_deref());
    let err = |e: BenchError| e.to_string();
    let (messages, rounds) = (args.messages, args.rounds);
    let (same_pe, _) = best_pair(reps, Better::Higher, trace, |t| {
        same_pe_msgs_per_s(messages, t)
    })
    .map_err(err)?;
    let (cross_pe, cross_pe_trace) = best_pair(reps, Better::Higher, trace, |t| {
        cross_pe_msgs_per_s(messages, t)
    })
    .map_err(err)?;
    let (rtt, _) =
        best_pair(reps, Better::Lower, trace, |t| pingpong_rtt_ns(rounds, t)).map_err(err)?;
    let (ask_rtt, _) =
        best_pair(reps, Better::Lower, trace, |t| ask_rtt_ns(rounds, t)).map_err(err)?;
    Ok(MessagingReport {
        same_pe,
        cross_pe,
        rtt,
        ask_rtt,
        cross_pe_trace,
        baselines: baselines(messages, rounds, reps)?,
        messages,
        rounds,
        reps,
    })
}

#[cfg(feature = "baselines")]
fn baselines(messages: u64, rounds: u64, reps: u32) -> Result<Baselines, String> {
    use crate::bench::baselines as b;
    use crate::bench::report::best;
    let ok = Ok::<f64, String>;
    Ok(Baselines {
        crossbeam_rtt_ns: best(reps, Better::Lower, || {
            ok(b::crossbeam_pingpong_rtt_ns(rounds))
        })?,
        crossbeam_envelope_rtt_ns: best(reps, Better::Lower, || {
            ok(b::crossbeam_envelope_pingpong_rtt_ns(rounds))
        })?,
        actix_msgs_per_s: best(reps, Better::Higher, || ok(b::actix_msgs_per_s(messages)))?,
    })
}

#[cfg(not(feature = "baselines"))]
fn baselines(_: u64, _: u64, _: u32) -> Result<Baselines, String> {
    Err(
        "this chorus-bench was built without the baselines feature; rebuild with default features"
            .into(),
    )
}

impl Report for MessagingReport {
    fn json(&self) -> String {
        let (same, cross, rtt) = (self.same_pe.plain, self.cross_pe.plain, self.rtt.plain);
        let b = &self.baselines;
        let mut out = json!({
            "same_pe_msgs_per_s": same,
            "cross_pe_msgs_per_s": cross,
            "pingpong_rtt_ns": rtt,
            "crossbeam_pingpong_rtt_ns": b.crossbeam_rtt_ns,
            "crossbeam_envelope_pingpong_rtt_ns": b.crossbeam_envelope_rtt_ns,
            "actix_msgs_per_s": b.actix_msgs_per_s,
            "same_pe_vs_actix": same / b.actix_msgs_per_s,
            "cross_pe_vs_actix": cross / b.actix_msgs_per_s,
            "pingpong_vs_crossbeam": rtt / b.crossbeam_rtt_ns,
            "pingpong_vs_crossbeam_envelope": rtt / b.crossbeam_envelope_rtt_ns,
            "ask_rtt_ns": self.ask_rtt.plain,
            "ask_vs_pingpong": self.ask_rtt.plain / rtt,
            "messages": self.messages,
            "rounds": self.rounds,
            "reps": self.reps,
        });
        if let (Some(st), Some(ct), Some(rt)) =
            (self.same_pe.traced, self.cross_pe.traced, self.rtt.traced)
        {
            out["traced"] = json!({
                "same_pe_msgs_per_s": st,
                "cross_pe_msgs_per_s": ct,
                "pingpong_rtt_ns": rt,
                "same_pe_throughput_ratio": st / same,
                "cross_pe_throughput_ratio": ct / cross,
                "pingpong_rtt_ratio": rt / rtt,
                "ask_rtt_ns": self.ask_rtt.traced,
                "ask_rtt_ratio": self.ask_rtt.traced.map(|t| t / self.ask_rtt.plain),
                "cross_pe_trace": self.cross_pe_trace,
            });
        }
        out.to_string()
    }

    fn table(&self) -> String {
        let mut s = format!("{:<34} {:>16} {:>16}\n", "measurement", "value", "traced");
        let mut row = |name: &str, v: f64, t: Option<f64>| {
            let t = t.map_or_else(|| "-".to_owned(), |t| format!("{t:.0}"));
            let _ = writeln!(s, "{name:<34} {v:>16.0} {t:>16}");
        };
        let b = &self.baselines;
        let (same, cross, rtt) = (self.same_pe, self.cross_pe, self.rtt);
        row("chorus same-PE msgs/s", same.plain, same.traced);
        row("chorus cross-PE msgs/s", cross.plain, cross.traced);
        row("actix msgs/s (100 actors)", b.actix_msgs_per_s, None);
        row("chorus ping-pong RTT ns", rtt.plain, rtt.traced);
        row(
            "chorus ask().await RTT ns",
            self.ask_rtt.plain,
            self.ask_rtt.traced,
        );
        row("crossbeam ping-pong RTT ns", b.crossbeam_rtt_ns, None);
        row(
            "  with envelope-sized messages",
            b.crossbeam_envelope_rtt_ns,
            None,
        );
        self.ratios(&mut s);
        s
    }
}

impl MessagingReport {
    /// The ratios against the baselines and the untraced runs, each with its target.
    fn ratios(&self, s: &mut String) {
        let b = &self.baselines;
        let (same, cross, rtt) = (self.same_pe.plain, self.cross_pe.plain, self.rtt.plain);
        let actix = b.actix_msgs_per_s;
        let _ = writeln!(
            s,
            "same-PE / actix = {:.2}x (target {SAME_PE_VS_ACTIX}x)",
            same / actix
        );
        let _ = writeln!(
            s,
            "cross-PE / actix = {:.2}x (target {CROSS_PE_VS_ACTIX}x)",
            cross / actix
        );
        let _ = writeln!(
            s,
            "ping-pong / crossbeam = {:.2}x (target {PINGPONG_VS_CROSSBEAM}x); / envelope-sized crossbeam = {:.2}x",
            rtt / b.crossbeam_rtt_ns,
            rtt / b.crossbeam_envelope_rtt_ns
        );
        let _ = writeln!(
            s,
            "ask().await / ping-pong RTT = {:.2}x (target {ASK_VS_PINGPONG}x)",
            self.ask_rtt.plain / rtt
        );
        if let (Some(st), Some(ct)) = (self.same_pe.traced, self.cross_pe.traced) {
            let _ = writeln!(
                s,
                "traced / untraced throughput: same-PE {:.3}, cross-PE {:.3} (target {TRACED_THROUGHPUT})",
                st / same,
                ct / cross
            );
        }
        if let Some(rt) = self.rtt.traced {
            let _ = writeln!(
                s,
                "traced / untraced ping-pong RTT = {:.3} (target {TRACED_RTT})",
                rt / rtt
            );
        }
        if let Some(t) = &self.cross_pe_trace {
            let _ = writeln!(s, "cross-PE {t}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(traced: bool) -> MessagingReport {
        let pair = |plain: f64, t: f64| Pair {
            plain,
            traced: traced.then_some(t),
        };
        MessagingReport {
            same_pe: pair(100.0, 95.0),
            cross_pe: pair(50.0, 45.0),
            rtt: pair(400.0, 480.0),
            ask_rtt: pair(440.0, 500.0),
            cross_pe_trace: None,
            baselines: Baselines {
                crossbeam_rtt_ns: 300.0,
                crossbeam_envelope_rtt_ns: 320.0,
                actix_msgs_per_s: 10.0,
            },
            messages: 1000,
            rounds: 10,
            reps: 1,
        }
    }

    #[test]
    fn a_traced_run_reports_each_traced_over_untraced_ratio() {
        let json: serde_json::Value = serde_json::from_str(&report(true).json()).unwrap();
        let traced = &json["traced"];
        assert_eq!(traced["same_pe_throughput_ratio"], 0.95);
        assert_eq!(traced["cross_pe_throughput_ratio"], 0.9);
        assert_eq!(traced["pingpong_rtt_ratio"], 1.2);
        assert_eq!(traced["ask_rtt_ratio"], 500.0 / 440.0);
        let table = report(true).table();
        assert!(
            table.contains("traced / untraced ping-pong RTT = 1.200 (target <= 1.25)"),
            "{table}"
        );
        assert!(
            table.contains("ask().await / ping-pong RTT = 1.10x (target <= 1.2x)"),
            "{table}"
        );
        let untraced: serde_json::Value = serde_json::from_str(&report(false).json()).unwrap();
        assert_eq!(untraced["ask_vs_pingpong"], 1.1);
        assert!(untraced.get("traced").is_none());
        assert!(!report(false).table().contains("traced / untraced"));
    }
}
