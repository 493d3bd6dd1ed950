//! chorus-tune: checks the section collectives against their performance guidelines
//! (mock-ups made of other collectives), writes a profile that repairs the violations,
//! and re-measures the tuned runtime against the defaults and every mock-up.

pub mod plan;
pub mod report;

use chorus_core::Config;
use chorus_sections::tune::detect::{self, Latency, Violation};
use chorus_sections::tune::measure::{measure, Case, Nrep, Sample};
use chorus_sections::tune::{Collective, Impl, Profile};
use clap::Parser;
use std::path::PathBuf;
use std::sync::Arc;

/// The command line of chorus-tune.
#[derive(Parser, Debug)]
#[command(
    version,
    about = "Check section collectives against their performance guidelines, write a profile that repairs violations, re-measure the tuned runtime"
)]
pub struct TuneArgs {
    /// Collectives to tune: all, or a comma list of allgather, allreduce, gather, reduce, scan.
    #[arg(long, default_value = "all")]
    pub collectives: String,
    /// Message sizes, bytes per member, comma separated (rounded to whole 8-byte elements).
    #[arg(long, default_value = "8,64,512,4096")]
    pub sizes: String,
    /// Where to write the profile.
    #[arg(
        short = 'o',
        long = "output",
        alias = "out",
        default_value = "chorus-tune.profile"
    )]
    pub out: PathBuf,
    /// Only re-measure the tuned runtime with this profile (no tuning, nothing written).
    #[arg(long)]
    pub tune_profile: Option<PathBuf>,
    /// Independent runs of every measurement (as separate mpiruns).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Untimed warm-up repetitions of a case per run.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Fewest repetitions of a case per run.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub nrep_min: u32,
    /// Most repetitions of a case per run.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub nrep_max: u32,
    /// Stop repeating a case once the relative standard error of its latencies is this low.
    #[arg(long, default_value_t = 0.02, value_parser = |s: &str| crate::cli::f64_in(s, 0.0, 1.0))]
    pub rse: f64,
    /// Tuning passes: after a re-measurement that finds the tuned runtime still
    /// beaten by a mock-up, the profile is repaired there and re-measured again, at
    /// most this many times in all (1: tune once, as PGMPITuneLib does).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub passes: u32,
    /// Print one JSON object instead of tables.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    #[command(flatten)]
    pub chorus: Config,
}

impl TuneArgs {
    /// The usage errors clap cannot see alone: repetition bounds that contradict each
    /// other, and lists that do not parse.
    pub fn check(&self) -> Result<(), String> {
        if self.nrep_min > self.nrep_max {
            return Err(format!(
                "--nrep-min {} is above --nrep-max {}: the fewest repetitions of a case cannot exceed the most",
                self.nrep_min, self.nrep_max
            ));
        }
        plan::collectives(&self.collectives)?;
        let largest = plan::sizes(&self.sizes)?.last().copied().unwrap_or(0);
        // Every member of an allgather or gather holds up to the whole section's
        // data, and every PE of a threads or sim job lives in this process.
        let pes = u64::from(self.chorus.pes);
        let need = largest.saturating_mul(pes).saturating_mul(pes);
        if let Some(p) = &self.tune_profile {
            if !p.is_file() {
                return Err(format!(
                    "--tune-profile {}: no such file (write one with chorus-tune --output)",
                    p.display()
                ));
            }
        }
        crate::memory::check(&format!("--sizes {largest} on --pes {pes}"), need)
    }
}

/// What a tuning session found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Violations of the defaults (empty when only re-measuring a given profile).
    pub violations: Vec<Violation>,
    /// The profile written or used.
    pub profile_path: PathBuf,
    /// The profile.
    pub profile: Profile,
    /// The re-measurement with the profile: tuned, default and every mock-up.
    pub check: Vec<Latency>,
    /// Mock-ups still at least 10% faster than the tuned runtime.
    pub remaining: Vec<Violation>,
    /// Violations of a tuned runtime found by a re-measurement and repaired by a
    /// further pass.
    pub repaired_later: Vec<Violation>,
    /// Re-measurements made (one per tuning pass).
    pub passes: u32,
}

fn runs(
    args: &TuneArgs,
    cases: &[Case],
    profile: Option<Arc<Profile>>,
) -> Result<Vec<Vec<Sample>>, String> {
    let nrep = Nrep {
        warmup: args.warmup,
        min: args.nrep_min,
        max: args.nrep_max,
        rse: args.rse,
    };
    (0..args.runs)
        .map(|_| measure(&args.chorus, cases, nrep, profile.clone()).map_err(|e| e.to_string()))
        .collect()
}

/// Tune (unless a profile is given), then re-measure with the profile; `pes` is the
/// job's PE count (the ranks under MPI), the size of the section measured (the whole
/// job); `write` says whether this process writes files.
pub fn run(
    args: &TuneArgs,
    pes: u32,
    write: bool,
    progress: &dyn Fn(&str),
) -> Result<Outcome, String> {
    let colls: Vec<Collective> = plan::collectives(&args.collectives)?;
    let sizes = plan::sizes(&args.sizes)?;
    let (violations, profile, profile_path) = match &args.tune_profile {
        Some(path) => {
            let p = Profile::load(path).map_err(|e| e.to_string())?;
            (Vec::new(), p, path.clone())
        }
        None => {
            progress("measuring the defaults and every mock-up");
            let samples = runs(args, &plan::tuning_cases(&colls, &sizes), None)?;
            let lat = detect::latencies(&samples);
            let violations = detect::violations(&lat, pes, Some(Impl::Default));
            let mut profile = Profile::new();
            detect::repair(&lat, pes, &mut profile);
            if write {
                profile.save(&args.out).map_err(|e| e.to_string())?;
            }
            (violations, profile, args.out.clone())
        }
    };
    let mut profile = profile;
    let mut repaired_later = Vec::new();
    let mut passes = 0;
    loop {
        passes += 1;
        progress(&format!(
            "re-measuring the tuned runtime against the defaults and every mock-up (pass {passes})"
        ));
        let shared = Arc::new(profile.clone());
        let samples = runs(args, &plan::check_cases(&colls, &sizes), Some(shared))?;
        let check = detect::latencies(&samples);
        let remaining = detect::violations(&check, pes, None);
        // A given profile is only checked; a tuned one is repaired where the
        // re-measurement still finds it beaten, while passes remain.
        let again = args.tune_profile.is_none()
            && passes < args.passes
            && detect::repair_remaining(&check, pes, &mut profile);
        if !again {
            return Ok(Outcome {
                violations,
                profile_path,
                profile,
                check,
                remaining,
                repaired_later,
                passes,
            });
        }
        if write {
            profile.save(&args.out).map_err(|e| e.to_string())?;
        }
        repaired_later.extend(remaining);
    }
}
