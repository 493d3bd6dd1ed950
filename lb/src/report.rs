//! What one MCMC run reports: the makespan against the ideal, and how often PEs
//! changed groups (the paper's Table 1 columns).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Regroupings per PE: average, standard deviation, minimum and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RegroupStats {
    /// Mean over PEs.
    pub avg: f64,
    /// Population standard deviation over PEs.
    pub stdev: f64,
    /// Fewest regroupings of any PE.
    pub min: u64,
    /// Most regroupings of any PE.
    pub max: u64,
}

impl RegroupStats {
    /// The mean counting each PE's initial group as its first regrouping, as the
    /// paper's Table 1 counts them.
    pub fn avg_with_initial(&self) -> f64 {
        self.avg + 1.0
    }

    /// The statistics of per-PE counts (all zero for none).
    pub fn of(counts: &[u64]) -> Self {
        if counts.is_empty() {
            return RegroupStats {
                avg: 0.0,
                stdev: 0.0,
                min: 0,
                max: 0,
            };
        }
        let n = counts.len() as f64;
        let avg = counts.iter().sum::<u64>() as f64 / n;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - avg).powi(2))
            .sum::<f64>()
            / n;
        RegroupStats {
            avg,
            stdev: var.sqrt(),
            min: counts.iter().copied().min().unwrap_or(0),
            max: counts.iter().copied().max().unwrap_or(0),
        }
    }
}

/// The chains' ends as the driver checked them: every chain ended once with each
/// of its items committed once (its step ledger), or the run is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Chains of the workload.
    pub chains: u64,
    /// Chains whose end the driver received.
    pub finished: u64,
    /// Items the chains' ends committed, in all.
    pub items: u64,
    /// PEs that failed during the run.
    pub pes_failed: u64,
    /// Recoveries the driver planned (one per failure, unless failures overlapped).
    pub recoveries: u64,
}

/// The result of one strategy's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McmcReport {
    /// The strategy's name.
    pub name: String,
    /// Time from the walkers' start to the end of the last chain, seconds.
    pub makespan_s: f64,
    /// Total work divided by the PEs: the makespan of perfect balance, seconds.
    pub ideal_s: f64,
    /// Regroupings per PE.
    pub regroups: RegroupStats,
    /// The chains' step ledger: how many ended and the items they committed.
    pub ledger: Ledger,
    /// The trace file written, if the run was traced.
    pub trace: Option<PathBuf>,
    /// The simulator's figures (events, events per second, ...) on the sim layer.
    pub sim: Option<chorus_core::SimStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_counts() {
        let s = RegroupStats::of(&[1, 3, 3, 5]);
        assert_eq!((s.avg, s.min, s.max), (3.0, 1, 5));
        assert!((s.stdev - 2f64.sqrt()).abs() < 1e-12);
    }
}
