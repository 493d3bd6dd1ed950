//! Chare messaging on the mpi layer against raw rsmpi send/receive, in one run:
//! one-way latency (half the median round trip) and streaming bandwidth between
//! ranks 0 and 1, for several message sizes.

#[cfg(feature = "mpi")]
mod on_mpi;

use crate::bench::report::{Report, Target};
use chorus_core::Config;
use serde::Serialize;
use serde_json::json;
use std::fmt::Write;

/// Chare latency over raw MPI's at 8 bytes.
pub const LATENCY_RATIO_8B: Target = Target::AtMost(2.0);
/// Chare bandwidth over raw MPI's at 1 MiB.
pub const BANDWIDTH_RATIO_1MIB: Target = Target::AtLeast(0.8);

/// The flags of `chorus-bench mpi-pingpong`.
#[derive(Debug, Clone, clap::Args)]
pub struct PingpongArgs {
    /// The job (on the mpi layer whatever --layer says).
    #[command(flatten)]
    pub config: Config,
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "8,1024,65536,1048576")]
    pub sizes: Vec<usize>,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// Figures for one message size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    /// Message size in bytes.
    pub bytes: usize,
    /// Chare one-way latency, microseconds.
    pub chorus_latency_us: f64,
    /// Raw MPI one-way latency, microseconds.
    pub raw_latency_us: f64,
    /// Chare streaming bandwidth, MB/s.
    pub chorus_bandwidth_mb_s: f64,
    /// Raw MPI streaming bandwidth, MB/s.
    pub raw_bandwidth_mb_s: f64,
}

impl SizeResult {
    /// Chare latency over raw MPI's.
    pub fn latency_ratio(&self) -> f64 {
        self.chorus_latency_us / self.raw_latency_us
    }

    /// Chare bandwidth over raw MPI's.
    pub fn bandwidth_ratio(&self) -> f64 {
        self.chorus_bandwidth_mb_s / self.raw_bandwidth_mb_s
    }
}

/// What `chorus-bench mpi-pingpong` measured: one row per message size.
#[derive(Debug, Clone)]
pub struct PingpongReport {
    /// The sizes in the order given.
    pub rows: Vec<SizeResult>,
}

/// Measure every size; rank 0 gets the report, the other ranks `None`.
#[cfg(feature = "mpi")]
pub fn measure(args: &PingpongArgs) -> Result<Option<PingpongReport>, String> {
    let session = chorus_core::MpiSession::init().map_err(|e| e.to_string())?;
    let rows = on_mpi::run(&session, &args.config, &args.sizes).map_err(|e| e.to_string())?;
    Ok(rows.map(|rows| PingpongReport { rows }))
}

/// Without MPI there is nothing to measure.
#[cfg(not(feature = "mpi"))]
pub fn measure(_: &PingpongArgs) -> Result<Option<PingpongReport>, String> {
    Err("mpi-pingpong needs MPI: rebuild with `cargo build --release --features mpi` and run it under `mpirun -n 2`".into())
}

impl Report for PingpongReport {
    fn json(&self) -> String {
        let col = |f: fn(&SizeResult) -> f64| self.rows.iter().map(f).collect::<Vec<_>>();
        json!({
            "sizes": self.rows.iter().map(|r| r.bytes).collect::<Vec<_>>(),
            "chorus_latency_us": col(|r| r.chorus_latency_us),
            "raw_latency_us": col(|r| r.raw_latency_us),
            "chorus_bandwidth_mb_s": col(|r| r.chorus_bandwidth_mb_s),
            "raw_bandwidth_mb_s": col(|r| r.raw_bandwidth_mb_s),
            "latency_ratio": col(SizeResult::latency_ratio),
            "bandwidth_ratio": col(SizeResult::bandwidth_ratio),
        })
        .to_string()
    }

    fn table(&self) -> String {
        let mut s = format!(
            "{:>9} {:>12} {:>12} {:>7} {:>14} {:>14} {:>7}\n",
            "bytes", "chorus us", "raw us", "ratio", "chorus MB/s", "raw MB/s", "ratio"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:>9} {:>12.2} {:>12.2} {:>7.2} {:>14.1} {:>14.1} {:>7.2}",
                r.bytes,
                r.chorus_latency_us,
                r.raw_latency_us,
                r.latency_ratio(),
                r.chorus_bandwidth_mb_s,
                r.raw_bandwidth_mb_s,
                r.bandwidth_ratio()
            );
        }
        let _ = writeln!(
            s,
            "targets: latency ratio at 8 B {LATENCY_RATIO_8B}, bandwidth ratio at 1 MiB {BANDWIDTH_RATIO_1MIB}"
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_states_the_targets_as_before() {
        let report = PingpongReport { rows: Vec::new() };
        assert!(report
            .table()
            .ends_with("targets: latency ratio at 8 B <= 2, bandwidth ratio at 1 MiB >= 0.8\n"));
    }
}
