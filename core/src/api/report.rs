//! What a finished run reports: per-PE counts, errors and published outputs.

use crate::base::config::StatsFormat;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::machine::sim::stats::SimStats;
use crate::trace::TraceReport;
use serde::de::DeserializeOwned;

pub use crate::engine::report::{BalanceStep, PeReport, Recovery, MAX_ERRORS_KEPT};

/// A collective or split some PEs started and the job ended without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// What it is and where it stopped, as its chares said.
    pub what: String,
    /// The PEs that reported it.
    pub pes: Vec<Pe>,
}

/// The outcome of `Runtime::run`.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Machine layer that ran the job.
    pub layer: &'static str,
    /// Number of PEs.
    pub pes: usize,
    /// Wall-clock seconds from start to the last PE's exit.
    pub wall_s: f64,
    /// Per-PE statistics, by PE.
    pub per_pe: Vec<PeReport>,
    /// What the simulator measured (sim layer only).
    pub sim: Option<SimStats>,
    /// The trace written under `--trace`.
    pub trace: Option<TraceReport>,
    /// The rollbacks to an in-memory checkpoint after PEs failed, in order; per-PE
    /// figures are those of the PEs the job ended with, numbered from 0.
    pub recoveries: Vec<Recovery>,
}

impl RunReport {
    /// Every error the PEs kept (under `--on-error drop`, the dropped messages; past
    /// [`MAX_ERRORS_KEPT`] a PE counts them in `errors_not_kept` instead).
    pub fn errors(&self) -> Vec<&RuntimeError> {
        self.per_pe.iter().flat_map(|p| p.errors.iter()).collect()
    }

    /// Messages that reached deleted array elements and were not run, over all PEs.
    pub fn dropped_to_deleted(&self) -> u64 {
        self.per_pe.iter().map(|p| p.dropped_to_deleted).sum()
    }

    /// Total counted messages processed.
    pub fn messages_processed(&self) -> u64 {
        self.per_pe.iter().map(|p| p.processed).sum()
    }

    /// Async tasks still waiting for an answer when the job ended, on every PE.
    pub fn tasks_waiting(&self) -> u64 {
        self.per_pe.iter().map(|p| p.tasks_waiting).sum()
    }

    /// What chares left unfinished when the job ended (`Chare::unfinished`): each
    /// line once, with the PEs that reported it, in order.
    pub fn unfinished_collectives(&self) -> Vec<Unfinished> {
        let mut by_what: std::collections::BTreeMap<&str, Vec<Pe>> = Default::default();
        for p in &self.per_pe {
            for what in &p.unfinished {
                by_what.entry(what).or_default().push(p.pe);
            }
        }
        by_what
            .into_iter()
            .map(|(what, pes)| Unfinished {
                what: what.to_string(),
                pes,
            })
            .collect()
    }

    /// True if the job ended at quiescence (`exit_on_quiescence`).
    pub fn ended_at_quiescence(&self) -> bool {
        self.per_pe.iter().any(|p| p.exit_at_quiescence)
    }

    /// The unfinished collectives of a job that ended at quiescence, in one line:
    /// each with the number of PEs that left it, of the job's.
    pub fn unfinished_summary(&self) -> Option<String> {
        let left = self.unfinished_collectives();
        if left.is_empty() || !self.ended_at_quiescence() {
            return None;
        }
        let each: Vec<String> = left
            .iter()
            .map(|u| {
                format!(
                    "{} (on {} of {} PEs: {:?})",
                    u.what,
                    u.pes.len(),
                    self.pes,
                    u.pes
                )
            })
            .collect();
        Some(format!("{} unfinished: {}", each.len(), each.join("; ")))
    }

    /// Every value published under `key`, with the PE that published it, PE by PE.
    pub fn outputs<T: DeserializeOwned>(&self, key: &str) -> Vec<(Pe, T)> {
        self.per_pe
            .iter()
            .flat_map(|p| {
                p.outputs
                    .iter()
                    .filter(|(k, _)| k == key)
                    .filter_map(move |(_, v)| bincode::deserialize(v).ok().map(|t| (p.pe, t)))
            })
            .collect()
    }

    /// The run's statistics for `--stats`: counts every layer has, plus the
    /// simulator's figures on the sim layer.
    pub fn stats(&self, format: StatsFormat) -> String {
        let busy = |f: fn(&PeReport) -> u64| self.per_pe.iter().map(f).sum::<u64>();
        match format {
            StatsFormat::Text => {
                let mut s = format!(
                    "{} PEs on the {} layer: {} messages processed, {} sent, {:.3} s wall",
                    self.pes,
                    self.layer,
                    busy(|p| p.processed),
                    busy(|p| p.sent),
                    self.wall_s
                );
                let waiting = self.tasks_waiting();
                if waiting > 0 {
                    s.push_str(&format!(", {waiting} tasks still waiting for a reply"));
                }
                if let Some(sim) = &self.sim {
                    s.push('\n');
                    s.push_str(&sim.to_text());
                }
                s
            }
            StatsFormat::Json => serde_json::json!({
                "layer": self.layer,
                "pes": self.pes,
                "wall_s": self.wall_s,
                "messages_processed": busy(|p| p.processed),
                "messages_sent": busy(|p| p.sent),
                "tasks_waiting": self.tasks_waiting(),
                "late_replies": busy(|p| p.late_replies),
                "sim": self.sim,
            })
            .to_string(),
        }
    }

    /// The first value published under `key`.
    pub fn output<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.outputs(key).into_iter().next().map(|(_, v)| v)
    }
}
