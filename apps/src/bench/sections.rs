//! Section creation at scale: every algorithm and filler, on every PE count and
//! membership fraction, with the same members for every algorithm (drawn per PE from
//! the seed), run on the builder group of chorus-sections.

use crate::bench::report::Report;
use crate::cli;
use chorus_core::{Config, Layer, SimArgs};
use chorus_sections::host::batch::{self, BatchError, Planned, PlannedParent};
use chorus_sections::host::tally::PhaseReport;
use chorus_sections::host::{available, Membership};
use chorus_sections::protocol::{Algorithm, Filler};
use serde::{Serialize, Serializer};
use serde_json::json;
use std::fmt::Write;

/// The flags of `chorus-bench sections`.
#[derive(Debug, Clone, clap::Args)]
pub struct SectionsArgs {
    /// Machine layer (sim for scale; threads for at most 4096 PEs).
    #[arg(long, value_enum, default_value_t = Layer::Sim)]
    pub layer: Layer,
    /// PE counts, one job each (each 1..=16777216).
    #[arg(long, value_delimiter = ',', default_value = "2048,8192", value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub pes: Vec<u32>,
    /// Membership fractions (each 0..=1).
    #[arg(long, value_delimiter = ',', default_value = "0.01,0.1,0.5", value_parser = |s: &str| cli::f64_in(s, 0.0, 1.0))]
    pub fractions: Vec<f64>,
    /// Branching factor of the section trees, 2..=16.
    #[arg(long = "section-arity", alias = "k", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub k: u32,
    /// `all` or a comma list of names (centralized, shrink-and-hash/leaf, ...).
    #[arg(long, default_value = "all")]
    pub algorithms: String,
    /// Seed of the membership draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The sim layer's model.
    #[command(flatten)]
    pub sim: SimArgs,
    /// Print one JSON object (the rows under "runs") instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// One creation's figures, as `chorus-bench sections --json` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The algorithm, printed as its family (`algorithm`: `centralized`,
    /// `shrink-and-balance` or `shrink-and-hash`) and its upward-pass filler
    /// (`filler`: `none`, `child` or `leaf`).
    #[serde(flatten, serialize_with = "family_and_filler")]
    pub algorithm: Algorithm,
    /// PEs of the job (the parent is the world).
    pub pes: u32,
    /// Probability with which each PE joined.
    pub fraction: f64,
    /// Members of the new section.
    pub members: u64,
    /// Creation messages between distinct PEs.
    pub messages: u64,
    /// Their encoded bytes.
    pub bytes: u64,
    /// First join to last finish, microseconds (virtual on sim).
    pub time_us: f64,
    /// Most creation state one PE held at once.
    pub max_pe_state_bytes: u64,
    /// Per phase (`up`, `down`, `announce`, `answer`, then `finish`): messages, those
    /// a PE sent itself, and the time from the previous phase's end; the times sum to
    /// `time_us`.
    pub phases: Vec<PhaseReport>,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Machine layer (sim for scale).
    pub layer: Layer,
    /// PE counts, one job each.
    pub pes: Vec<u32>,
    /// Membership fractions.
    pub fractions: Vec<f64>,
    /// Branching factor of the world tree and of the new trees.
    pub k: u32,
    /// Algorithms to run.
    pub algorithms: Vec<Algorithm>,
    /// Seed of the membership draw (and of the job).
    pub seed: u64,
    /// The sim layer's model.
    pub sim: SimArgs,
}

/// `all` or a comma list of algorithm names as `Algorithm::name` spells them.
pub fn parse_algorithms(s: &str) -> Result<Vec<Algorithm>, String> {
    if s == "all" {
        return Ok(available());
    }
    s.split(',')
        .map(|name| {
            let name = name.trim();
            let alg = Algorithm::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                    format!(
                        "unknown algorithm {name:?}; known: all, {}",
                        known.join(", ")
                    )
                })?;
            if !available().contains(&alg) {
                return Err(format!("algorithm {name} is not available in this build"));
            }
            Ok(alg)
        })
        .collect()
}

/// An algorithm's family and filler names, as the rows print them.
fn split_name(a: Algorithm) -> (&'static str, &'static str) {
    let filler = |f: Filler| match f {
        Filler::None => "none",
        Filler::Child => "child",
        Filler::Leaf => "leaf",
    };
    match a {
        Algorithm::Centralized => ("centralized", "none"),
        Algorithm::ShrinkAndBalance(f) => ("shrink-and-balance", filler(f)),
        Algorithm::ShrinkAndHash(f) => ("shrink-and-hash", filler(f)),
    }
}

/// Serialize an algorithm as the two fields `algorithm` (family) and `filler`.
fn family_and_filler<S: Serializer>(a: &Algorithm, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Names {
        algorithm: &'static str,
        filler: &'static str,
    }
    let (algorithm, filler) = split_name(*a);
    Names { algorithm, filler }.serialize(s)
}

/// Run the plan: one job per PE count, its creations one after another from PE 0,
/// after an unreported warm-up creation.
pub fn run(plan: &Plan) -> Result<Vec<Row>, BatchError> {
    let mut rows = Vec::new();
    for &pes in &plan.pes {
        // The job's first creation starts while the groups' creation (whose init
        // holds the whole plan) is still spreading, and would pay for it: an empty
        // creation goes first, so whichever algorithm is listed first is timed alone.
        let warm_up = Planned {
            creator: 0,
            parent: PlannedParent::World,
            algorithm: Algorithm::Centralized,
            k: plan.k,
            membership: Membership::Random {
                fraction: 0.0,
                seed: plan.seed,
            },
        };
        let mut stages = vec![vec![warm_up.into()]];
        let mut keys = Vec::new();
        for &fraction in &plan.fractions {
            for &alg in &plan.algorithms {
                let membership = Membership::Random {
                    fraction,
                    seed: plan.seed,
                };
                let step = Planned {
                    creator: 0,
                    parent: PlannedParent::World,
                    algorithm: alg,
                    k: plan.k,
                    membership,
                };
                stages.push(vec![step.into()]);
                keys.push((alg, fraction));
            }
        }
        let config = Config {
            pes,
            layer: plan.layer,
            seed: plan.seed,
            sim: plan.sim.clone(),
            ..Config::default()
        };
        let out = batch::run(config, stages, false)?;
        for ((alg, fraction), r) in keys.into_iter().zip(out.reports.into_iter().skip(1)) {
            rows.push(Row {
                algorithm: alg,
                pes,
                fraction,
                members: r.members,
                messages: r.messages,
                bytes: r.bytes,
                time_us: r.time_us,
                max_pe_state_bytes: r.max_pe_state_bytes,
                phases: r.phases,
            });
        }
    }
    Ok(rows)
}

/// One distributed algorithm against the centralized reference on the same PEs and
/// fraction.
#[derive(Debug, Clone, PartialEq)]
pub struct Speedup {
    /// PEs of the job.
    pub pes: u32,
    /// Membership fraction.
    pub fraction: f64,
    /// The distributed algorithm.
    pub algorithm: Algorithm,
    /// Centralized time over its time (above 1: the distributed one was faster).
    pub time: f64,
    /// Its messages over centralized messages.
    pub messages: f64,
}

/// Each distributed algorithm against the centralized reference, per (pes, fraction)
/// where both ran.
pub fn speedups(rows: &[Row]) -> Vec<Speedup> {
    let centralized = |r: &&Row| r.algorithm == Algorithm::Centralized;
    let mut out = Vec::new();
    for c in rows.iter().filter(centralized) {
        let same_job = |r: &&Row| !centralized(r) && r.pes == c.pes && r.fraction == c.fraction;
        for h in rows.iter().filter(same_job) {
            out.push(Speedup {
                pes: c.pes,
                fraction: c.fraction,
                algorithm: h.algorithm,
                time: c.time_us / h.time_us,
                messages: h.messages as f64 / c.messages as f64,
            });
        }
    }
    out
}

/// What `chorus-bench sections` measured: one row per creation.
#[derive(Debug, Clone)]
pub struct SectionsReport {
    /// The creations, job by job, fraction by fraction, algorithm by algorithm.
    pub rows: Vec<Row>,
}

/// Run the creations `args` asks for.
pub fn measure(args: &SectionsArgs) -> Result<SectionsReport, String> {
    let plan = Plan {
        layer: args.layer,
        pes: args.pes.clone(),
        fractions: args.fractions.clone(),
        k: args.k,
        algorithms: parse_algorithms(&args.algorithms)?,
        seed: args.seed,
        sim: args.sim.clone(),
    };
    let rows = run(&plan).map_err(|e| e.to_string())?;
    Ok(SectionsReport { rows })
}

impl Report for SectionsReport {
    fn json(&self) -> String {
        // One object, as every --json prints; the rows under "runs".
        json!({ "runs": self.rows }).to_string()
    }

    fn table(&self) -> String {
        let mut s = format!(
            "{:<20} {:<6} {:>7} {:>6} {:>7} {:>9} {:>11} {:>12} {:>9}\n",
            "algorithm",
            "filler",
            "pes",
            "frac",
            "members",
            "messages",
            "bytes",
            "time us",
            "state B"
        );
        for r in &self.rows {
            let (family, filler) = split_name(r.algorithm);
            let _ = writeln!(
                s,
                "{:<20} {:<6} {:>7} {:>6} {:>7} {:>9} {:>11} {:>12.1} {:>9}",
                family,
                filler,
                r.pes,
                r.fraction,
                r.members,
                r.messages,
                r.bytes,
                r.time_us,
                r.max_pe_state_bytes
            );
            let phases: Vec<String> = (r.phases.iter())
                .map(|p| {
                    format!(
                        "{} {:.1} us/{}+{} msgs",
                        p.name, p.time_us, p.messages, p.local
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "    phases (time, messages between PEs + to itself): {}",
                phases.join(", ")
            );
        }
        for x in speedups(&self.rows) {
            let (pes, fraction, name) = (x.pes, x.fraction, x.algorithm.name());
            let _ = writeln!(
                s,
                "{pes} PEs, fraction {fraction}: centralized time / {name} time = {:.2}x, \
                 {name} messages / centralized messages = {:.2}",
                x.time, x.messages
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(algorithm: Algorithm, time_us: f64) -> Row {
        Row {
            algorithm,
            pes: 8,
            fraction: 0.5,
            members: 4,
            messages: 1,
            bytes: 1,
            time_us,
            max_pe_state_bytes: 1,
            phases: Vec::new(),
        }
    }

    #[test]
    fn speedups_pair_centralized_with_every_other_algorithm() {
        let rows = vec![
            row(Algorithm::Centralized, 100.0),
            row(Algorithm::ShrinkAndHash(Filler::None), 20.0),
            row(Algorithm::ShrinkAndHash(Filler::Leaf), 50.0),
            row(Algorithm::ShrinkAndBalance(Filler::Leaf), 10.0),
        ];
        let s: Vec<(Algorithm, f64)> = speedups(&rows)
            .into_iter()
            .map(|x| (x.algorithm, x.time))
            .collect();
        assert_eq!(
            s,
            vec![
                (Algorithm::ShrinkAndHash(Filler::None), 5.0),
                (Algorithm::ShrinkAndHash(Filler::Leaf), 2.0),
                (Algorithm::ShrinkAndBalance(Filler::Leaf), 10.0),
            ]
        );
        assert!(speedups(&rows[1..]).is_empty());
    }

    #[test]
    fn algorithm_names_parse_and_all_means_available() {
        assert_eq!(parse_algorithms("all").unwrap(), available());
        assert_eq!(
            parse_algorithms("shrink-and-hash/leaf").unwrap(),
            vec![Algorithm::ShrinkAndHash(Filler::Leaf)]
        );
        assert!(parse_algorithms("bogus").is_err());
    }
}
