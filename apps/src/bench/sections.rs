//! Section creation at scale: every algorithm and filler, on every PE count and
//! membership fraction, with the same members for every algorithm (drawn per PE from
//! the seed), run on the builder group of chorus-sections.

use chorus_core::{Config, Layer, SimArgs};
use chorus_sections::host::batch::{self, BatchError, Planned, PlannedParent};
use chorus_sections::host::tally::PhaseReport;
use chorus_sections::host::{available, Membership};
use chorus_sections::protocol::{Algorithm, Filler};
use serde::Serialize;

/// One creation's figures, as `chorus-bench sections --json` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Algorithm family: `centralized`, `shrink-and-balance` or `shrink-and-hash`.
    pub algorithm: String,
    /// Upward-pass filler: `none`, `child` or `leaf`.
    pub filler: String,
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

fn split_name(a: Algorithm) -> (String, String) {
    let filler = |f: Filler| match f {
        Filler::None => "none",
        Filler::Child => "child",
        Filler::Leaf => "leaf",
    };
    match a {
        Algorithm::Centralized => ("centralized".into(), "none".into()),
        Algorithm::ShrinkAndBalance(f) => ("shrink-and-balance".into(), filler(f).into()),
        Algorithm::ShrinkAndHash(f) => ("shrink-and-hash".into(), filler(f).into()),
    }
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
            let (algorithm, filler) = split_name(alg);
            rows.push(Row {
                algorithm,
                filler,
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

/// Each distributed algorithm against the centralized reference, per (pes, fraction)
/// where both ran: (pes, fraction, `algorithm/filler`, centralized time over its
/// time, its messages over centralized messages); a time ratio above 1 means the
/// distributed algorithm was faster.
pub fn speedups(rows: &[Row]) -> Vec<(u32, f64, String, f64, f64)> {
    let mut out = Vec::new();
    for c in rows.iter().filter(|r| r.algorithm == "centralized") {
        for h in rows
            .iter()
            .filter(|r| r.algorithm != "centralized" && r.pes == c.pes && r.fraction == c.fraction)
        {
            out.push((
                c.pes,
                c.fraction,
                format!("{}/{}", h.algorithm, h.filler),
                c.time_us / h.time_us,
                h.messages as f64 / c.messages as f64,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(algorithm: &str, filler: &str, time_us: f64) -> Row {
        Row {
            algorithm: algorithm.into(),
            filler: filler.into(),
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
            row("centralized", "none", 100.0),
            row("shrink-and-hash", "none", 20.0),
            row("shrink-and-hash", "leaf", 50.0),
            row("shrink-and-balance", "leaf", 10.0),
        ];
        let s = speedups(&rows);
        assert_eq!(
            s,
            vec![
                (8, 0.5, "shrink-and-hash/none".into(), 5.0, 1.0),
                (8, 0.5, "shrink-and-hash/leaf".into(), 2.0, 1.0),
                (8, 0.5, "shrink-and-balance/leaf".into(), 10.0, 1.0),
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
