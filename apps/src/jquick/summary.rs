//! What the jquick binary prints: one sort's outcome, or range sections against a
//! baseline's, as lines or as one JSON object.

use super::input::InputKind;
use super::key::KeyType;
use super::spec::SectionMode;
use super::verify::Outcome;
use crate::bench::median;
use crate::bench::report::Report;
use chorus_core::{Layer, SimStats};
use serde_json::{json, Value};
use std::fmt::Write;

/// What a sort was asked for, as the lines and the JSON name it.
#[derive(Debug, Clone, Copy)]
pub struct Labels {
    /// The input distribution.
    pub input: InputKind,
    /// The key type.
    pub key: KeyType,
    /// The machine layer.
    pub layer: Layer,
    /// How the sections were made.
    pub sections: SectionMode,
}

/// One sort.
#[derive(Debug, Clone)]
pub struct Single {
    /// The checked outcome.
    pub outcome: Outcome,
    /// What the simulator measured (sim layer).
    pub sim: Option<SimStats>,
    /// What was asked.
    pub labels: Labels,
}

impl Report for Single {
    fn json(&self) -> String {
        let (o, l) = (&self.outcome, &self.labels);
        json!({
            "sim": self.sim,
            "sorted": o.sorted,
            "balanced": o.balanced,
            "permutation": o.permutation,
            "n": o.n,
            "pes": o.pes,
            "time_s": o.time_s,
            "levels": o.levels,
            "sections_created": o.sections_created,
            "janus": o.janus,
            "max_concurrent_sections": o.max_concurrent_sections,
            "sections": l.sections.name(),
            "layer": l.layer.name(),
            "input": l.input.name(),
            "key": l.key.name(),
        })
        .to_string()
    }

    fn table(&self) -> String {
        let (o, l) = (&self.outcome, &self.labels);
        format!(
            "jquick: {} {} keys ({}) on {} PEs ({}, sections {}): {:.6} s, {} levels, {} sections, {} janus splits, up to {} sections at once on a PE\n\
             check: sorted {}, balanced {}, permutation {}\n",
            o.n,
            l.key.name(),
            l.input.name(),
            o.pes,
            l.layer.name(),
            l.sections.name(),
            o.time_s,
            o.levels,
            o.sections_created,
            o.janus,
            o.max_concurrent_sections,
            o.sorted,
            o.balanced,
            o.permutation
        )
    }
}

/// The baseline range sections were compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Baseline {
    /// MPI_Comm_split under MPI, with the median time of its sorts without their
    /// MPI_Comm_split calls, seconds.
    MpiSplit {
        /// The median time without the splits, seconds.
        without_split_s: f64,
    },
    /// Range sections behind a modelled MPI call (a `SectionMode` whose `is_model`).
    Model(SectionMode),
}

/// Range sections against a baseline, `reps` sorts each.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The sorts with range sections (at least one).
    pub range: Vec<Outcome>,
    /// The baseline's sorts (at least one).
    pub baseline: Vec<Outcome>,
    /// Which baseline.
    pub kind: Baseline,
    /// Sorts of each.
    pub reps: u32,
    /// What was asked.
    pub labels: Labels,
}

/// The median sort time of `v`, seconds.
fn median_time(v: &[Outcome]) -> f64 {
    let t: Vec<f64> = v.iter().map(|o| o.time_s).collect();
    median(&t)
}

impl Compared {
    /// Every sort of both passed its check.
    pub fn passed(&self) -> bool {
        self.range.iter().chain(&self.baseline).all(Outcome::passed)
    }

    /// The fields both kinds of comparison print: the checks over every sort, the
    /// first range sort's shape and the range sections' median time.
    fn common_json(&self) -> Value {
        let all = || self.range.iter().chain(&self.baseline);
        let r0 = &self.range[0];
        json!({
            "sorted": all().all(|o| o.sorted),
            "balanced": all().all(|o| o.balanced),
            "permutation": all().all(|o| o.permutation),
            "n": r0.n,
            "pes": r0.pes,
            "time_s": median_time(&self.range),
            "levels": r0.levels,
            "sections_created": r0.sections_created,
            "janus": r0.janus,
            "reps": self.reps,
            "input": self.labels.input.name(),
            "key": self.labels.key.name(),
        })
    }
}

impl Report for Compared {
    fn json(&self) -> String {
        let mut v = self.common_json();
        let (tr, ts) = (median_time(&self.range), median_time(&self.baseline));
        let s0 = &self.baseline[0];
        match self.kind {
            Baseline::MpiSplit { without_split_s } => {
                v["mpi_split_time_s"] = json!(ts);
                v["mpi_split_levels"] = json!(s0.levels);
                v["mpi_split_communicators"] = json!(s0.sections_created);
                v["speedup_vs_mpi_split"] = json!(ts / tr);
                v["mpi_split_without_split_s"] = json!(without_split_s);
                v["split_share_bound"] = json!(ts / without_split_s);
            }
            Baseline::Model(model) => {
                // split_model_time_s, speedup_vs_create_group_model, ...
                let prefix = model.name().replace('-', "_");
                v["layer"] = json!(self.labels.layer.name());
                v[format!("{prefix}_time_s")] = json!(ts);
                v[format!("speedup_vs_{prefix}")] = json!(ts / tr);
                v[format!("{prefix}_levels")] = json!(s0.levels);
            }
        }
        v.to_string()
    }

    fn table(&self) -> String {
        let (tr, ts) = (median_time(&self.range), median_time(&self.baseline));
        let (r0, l, reps) = (&self.range[0], &self.labels, self.reps);
        let mut s = String::new();
        match self.kind {
            Baseline::MpiSplit { without_split_s } => {
                let _ = writeln!(
                    s,
                    "jquick on {} ranks, n = {} ({}): range sections {:.6} s, MPI_Comm_split {:.6} s (medians of {}): range is {:.1}x faster",
                    r0.pes, r0.n, l.input.name(), tr, ts, reps, ts / tr
                );
                let _ = writeln!(
                    s,
                    "  the baseline without its MPI_Comm_split calls: {:.6} s, so free sections gain at most {:.1}x at equal collective speed",
                    without_split_s,
                    ts / without_split_s
                );
            }
            Baseline::Model(model) => {
                let call = model.modelled_call().unwrap_or("the baseline");
                let _ = writeln!(
                    s,
                    "jquick on {} PEs ({}), n = {} ({}): range sections {:.6} s, {call} {:.6} s (medians of {}): range is {:.1}x faster",
                    r0.pes,
                    l.layer.name(),
                    r0.n,
                    l.input.name(),
                    tr,
                    ts,
                    reps,
                    ts / tr
                );
            }
        }
        s
    }
}
