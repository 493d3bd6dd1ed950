//! What the radix binary prints: every allgather's outcome, as a table or as one JSON
//! object.

use super::driver::RadixError;
use super::key::Key;
use super::measure::{compare, Comparison};
use super::params::RadixParams;
use super::report::SortReport;
use crate::bench::report::Report;
use chorus_core::{Config, Layer};
use chorus_sections::collectives::Allgather;
use serde_json::{json, Value};
use std::fmt::Write;

/// What one allgather algorithm gave: both runs, or one.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The overlapped sort and the blocking baseline.
    Both(Comparison),
    /// One of the two alone (`--blocking` or `--no-baseline`).
    One(SortReport),
}

impl Outcome {
    /// Every run sorted.
    pub fn sorted(&self) -> bool {
        match self {
            Outcome::Both(c) => c.sorted(),
            Outcome::One(r) => r.sorted,
        }
    }

    /// The run that stands for the outcome: the overlapped one of a comparison.
    pub fn report(&self) -> &SortReport {
        match self {
            Outcome::Both(c) => &c.overlapped,
            Outcome::One(r) => r,
        }
    }

    /// Every run of the outcome, the baseline first.
    fn runs(&self) -> Vec<&SortReport> {
        match self {
            Outcome::Both(c) => vec![&c.blocking, &c.overlapped],
            Outcome::One(r) => vec![r],
        }
    }
}

/// `reps` comparisons, as their medians.
pub fn compare_reps<K: Key>(
    config: &Config,
    params: RadixParams,
    reps: u32,
) -> Result<Outcome, RadixError> {
    let runs = (0..reps.max(1))
        .map(|_| compare::<K>(config, params))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome::Both(
        Comparison::median(&runs).expect("at least one repetition"),
    ))
}

/// Every algorithm's outcome, with the parameters the table states.
#[derive(Debug, Clone)]
pub struct Summary {
    /// One outcome per algorithm, in the order given.
    pub outcomes: Vec<(Allgather, Outcome)>,
    /// Keys each PE started with.
    pub keys_per_pe: usize,
    /// Bits per digit.
    pub radix_bits: u32,
    /// Keys moved per handler.
    pub chunk_keys: usize,
    /// Compute charged per key per pass, ns.
    pub key_ns: f64,
    /// The machine layer.
    pub layer: Layer,
}

impl Summary {
    /// Every run of every algorithm sorted.
    pub fn sorted(&self) -> bool {
        self.outcomes.iter().all(|(_, o)| o.sorted())
    }
}

/// The allgather `auto` resolved to for this sort's histograms.
fn resolved(a: Allgather, r: &SortReport) -> String {
    a.resolve(r.pes, true)
        .map(Allgather::name)
        .unwrap_or_else(|e| e.to_string())
}

fn algorithm_json(a: Allgather, o: &Outcome) -> Value {
    let r = o.report();
    let mut v = json!({
        "allgather": a.name(),
        "resolved": resolved(a, r),
        "sorted": o.sorted(),
        "time_s": r.time_s,
        "blocking": r.blocking,
        "sim": r.sim,
    });
    if let Outcome::Both(c) = o {
        let b = &c.blocking;
        v["blocking_time_s"] = json!(b.time_s);
        v["speedup"] = json!(c.speedup());
        v["overlap"] = json!(c.overlap);
        v["t_comm_s"] = json!(b.times.comm_s);
        v["t_comp_s"] = json!(b.times.comp_s);
        v["t_comp_comm_s"] = json!(c.overlapped.times.overlapped_s);
    }
    v
}

/// One table row: the overlapped and blocking times, speedup and overlap, then the
/// phase times.
fn table_row(name: &str, o: &Outcome) -> String {
    match o {
        Outcome::Both(c) => format!(
            "{:<22} {:<7} {:>12.6} {:>12.6} {:>8.3} {:>8} {:>11.6} {:>11.6} {:>11.6}",
            name,
            c.sorted(),
            c.overlapped.time_s,
            c.blocking.time_s,
            c.speedup(),
            c.overlap.map_or("-".into(), |x| format!("{x:.3}")),
            c.blocking.times.comm_s,
            c.blocking.times.comp_s,
            c.overlapped.times.overlapped_s
        ),
        Outcome::One(r) => {
            let time = format!("{:.6}", r.time_s);
            let (overlapped, blocking) = match r.blocking {
                true => ("-".to_string(), time),
                false => (time, "-".to_string()),
            };
            format!(
                "{:<22} {:<7} {:>12} {:>12} {:>8} {:>8} {:>11.6} {:>11.6} {:>11.6}",
                name,
                r.sorted,
                overlapped,
                blocking,
                "-",
                "-",
                r.times.comm_s,
                r.times.comp_s,
                r.times.overlapped_s
            )
        }
    }
}

impl Report for Summary {
    fn json(&self) -> String {
        let first = self.outcomes.first();
        let r = first.map(|(_, o)| o.report());
        let mut v = first.map_or_else(|| json!({}), |(a, o)| algorithm_json(*a, o));
        v["sorted"] = json!(self.sorted());
        v["key"] = json!(r.map_or("", |r| r.key));
        v["pes"] = json!(r.map_or(0, |r| r.pes));
        v["keys"] = json!(r.map_or(0, |r| r.keys));
        v["keys_per_pe"] = json!(self.keys_per_pe);
        v["radix_bits"] = json!(self.radix_bits);
        v["rounds"] = json!(r.map_or(0, |r| r.rounds));
        v["layer"] = json!(self.layer.name());
        v["key_ns"] = json!(self.key_ns);
        v["chunk_keys"] = json!(self.chunk_keys);
        if self.outcomes.len() > 1 {
            v["algorithms"] = (self.outcomes.iter())
                .map(|(a, o)| algorithm_json(*a, o))
                .collect();
        }
        v.to_string()
    }

    fn table(&self) -> String {
        let Some((_, first)) = self.outcomes.first() else {
            return String::new();
        };
        let r = first.report();
        let mut s = format!(
            "radix sort of {} {} keys ({} per PE) on {} PEs ({}), {} rounds of {} bits, {} keys per chunk, {} ns per key charged\n",
            r.keys,
            r.key,
            self.keys_per_pe,
            r.pes,
            self.layer.name(),
            r.rounds,
            self.radix_bits,
            self.chunk_keys,
            self.key_ns
        );
        let _ = writeln!(
            s,
            "{:<22} {:<7} {:>12} {:>12} {:>8} {:>8} {:>11} {:>11} {:>11}",
            "allgather",
            "sorted",
            "overlapped s",
            "blocking s",
            "speedup",
            "overlap",
            "t_comm s",
            "t_comp s",
            "t_c+c s"
        );
        for (a, o) in &self.outcomes {
            let name = match a {
                Allgather::Auto => format!("auto ({})", resolved(*a, o.report())),
                _ => a.name(),
            };
            let _ = writeln!(s, "{}", table_row(&name, o));
        }
        s.push_str("(times per PE are sums over rounds, averaged over PEs; overlap = 1 - (t_c+c - t_comp) / t_comm)\n");
        let runs = self.outcomes.iter().flat_map(|(_, o)| o.runs());
        for t in runs.filter_map(|r| r.trace.as_ref()) {
            let _ = writeln!(s, "trace: {}", t.display());
        }
        s
    }
}
