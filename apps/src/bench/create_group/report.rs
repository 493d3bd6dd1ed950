//! `chorus-bench create-group`: its flags, and its result as a table or JSON.

use super::{run, CreateGroupResult};
use crate::bench::report::{lower_debug, peak_rss_mib, Report};
use chorus_core::{Config, SimPreset};
use serde_json::json;
use std::fmt::Write;

/// The flags of `chorus-bench create-group`.
#[derive(Debug, Clone, clap::Args)]
pub struct CreateGroupArgs {
    /// The job (always on the sim layer).
    #[command(flatten)]
    pub config: Config,
    /// Group sizes (each 1..=--pes); default: the powers of two up to --pes.
    #[arg(long = "group-sizes", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub group_sizes: Vec<u32>,
    /// Branching factor of the collectives' trees, 2..=16 (2: the binomial depth of
    /// MPICH's short broadcasts and allreduces).
    #[arg(long = "section-arity", alias = "k", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub k: u32,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

impl CreateGroupArgs {
    /// Refuse a group size over --pes.
    pub fn check(&self) -> Result<(), String> {
        let pes = self.config.pes;
        match self.group_sizes.iter().find(|&&g| g > pes) {
            Some(bad) => Err(format!(
                "--group-sizes {bad} is more than --pes {pes}; give sizes from 1 to {pes}"
            )),
            None => Ok(()),
        }
    }

    /// The sizes given, or the powers of two from 2 up to --pes.
    fn sizes(&self) -> Vec<u32> {
        if !self.group_sizes.is_empty() {
            return self.group_sizes.clone();
        }
        std::iter::successors(Some(2u32), |g| g.checked_mul(2))
            .take_while(|&g| g <= self.config.pes)
            .collect()
    }
}

/// What `chorus-bench create-group` measured, with the machine model and the memory.
#[derive(Debug, Clone)]
pub struct CreateGroupReport {
    /// The machine model simulated.
    pub preset: SimPreset,
    /// The run's figures.
    pub result: CreateGroupResult,
    /// Peak resident set size after the run, MiB.
    pub peak_rss_mib: Option<f64>,
}

/// Run every method for every group size `args` asks for.
pub fn measure(args: &CreateGroupArgs) -> Result<CreateGroupReport, String> {
    let config: Config = args.config.clone();
    let preset = config.sim.chosen_preset();
    let result = run(config, &args.sizes(), args.k).map_err(|e| e.to_string())?;
    Ok(CreateGroupReport {
        preset,
        result,
        peak_rss_mib: peak_rss_mib(),
    })
}

impl Report for CreateGroupReport {
    fn json(&self) -> String {
        let r = &self.result;
        json!({
            "pes": r.pes,
            "preset": lower_debug(&self.preset),
            "section_arity": r.k,
            "rows": r.rows,
            "events": r.stats.events,
            "events_per_s": r.stats.events_per_s,
            "wall_s": r.stats.wall_s,
            "messages": r.stats.messages,
            "peak_rss_mib": self.peak_rss_mib,
        })
        .to_string()
    }

    fn table(&self) -> String {
        let r = &self.result;
        let mut s = format!(
            "{} PEs ({:?}), trees of arity {}: time to create the communicator of PEs 0..g (us, virtual)\n",
            r.pes, self.preset, r.k
        );
        s.push_str("| g | rounds | Dinan et al. | MPI_Comm_create | MPI_Comm_create_group (MPICH) | chorus Shrink-and-Hash |\n");
        s.push_str("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for row in &r.rows {
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                row.group,
                row.rounds,
                row.dinan_us,
                row.comm_create_us,
                row.create_group_us,
                row.shrink_and_hash_us
            );
        }
        let _ = writeln!(s, "{}", r.stats.to_text());
        s
    }
}
