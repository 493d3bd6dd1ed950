//! Section creation on the mpi layer against MPI's own communicator creation, side by
//! side in one MPI session: MPI_Comm_split, MPI_Comm_create_group, Shrink-and-Hash on
//! the builder group and an O(1) range section, each alone and followed by one
//! broadcast of 8 bytes to the half of the ranks the new group holds.
//!
//! Every figure is the median over repetitions of the time from a common start to
//! the moment the last member is ready (or has the broadcast value): MPI starts from
//! a barrier and takes the maximum over ranks of the local times; chorus starts when
//! rank 0 asks and ends at the latest member's report, on the mpi layer's aligned
//! clocks.

#[cfg(feature = "mpi")]
mod on_mpi;

use crate::bench::report::{Report, Target};
use chorus_core::Config;
use serde::Serialize;
use std::fmt::Write;

/// How many times faster a range section and its broadcast are than MPI_Comm_split
/// and its broadcast.
pub const RANGE_VS_SPLIT: Target = Target::AtLeast(20.0);

/// The flags of `chorus-bench sections-vs-mpi`.
#[derive(Debug, Clone, clap::Args)]
pub struct VsMpiArgs {
    /// The job (on the mpi layer whatever --layer says).
    #[command(flatten)]
    pub config: Config,
    /// Repetitions of each measurement (medians are reported).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Branching factor of the section trees, 2..=16.
    #[arg(long = "section-arity", alias = "k", default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub k: u32,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// What one run measured, in microseconds (medians).
#[derive(Debug, Clone, Serialize)]
pub struct VsMpi {
    /// Ranks of the job.
    pub ranks: i32,
    /// Members of the new group (ranks 0..ranks/2).
    pub members: i32,
    /// Repetitions per figure.
    pub reps: u32,
    /// Branching factor of the chorus trees (world tree, new section, range).
    pub k: u32,
    /// MPI_Comm_split.
    pub mpi_comm_split_us: f64,
    /// MPI_Comm_split, then MPI_Bcast of 8 bytes in the new communicator.
    pub mpi_comm_split_plus_bcast_us: f64,
    /// MPI_Comm_create_group (members only).
    pub mpi_comm_create_group_us: f64,
    /// MPI_Comm_create_group, then MPI_Bcast of 8 bytes.
    pub mpi_comm_create_group_plus_bcast_us: f64,
    /// Shrink-and-Hash (no filler) from the world, on the builder group.
    pub shrink_and_hash_us: f64,
    /// Shrink-and-Hash, then a section broadcast of 8 bytes.
    pub shrink_and_hash_plus_bcast_us: f64,
    /// A range section of the world: made locally, no message.
    pub range_us: f64,
    /// A range section, then a one-sided multicast of 8 bytes from its root.
    pub range_plus_bcast_us: f64,
}

/// Measure everything; rank 0 gets the figures, the other ranks `None`.
#[cfg(feature = "mpi")]
pub fn measure(args: &VsMpiArgs) -> Result<Option<VsMpi>, String> {
    let session = chorus_core::MpiSession::init().map_err(|e| e.to_string())?;
    on_mpi::run(&session, &args.config, args.reps, args.k).map_err(|e| e.to_string())
}

/// Without MPI there is nothing to measure.
#[cfg(not(feature = "mpi"))]
pub fn measure(_: &VsMpiArgs) -> Result<Option<VsMpi>, String> {
    Err("sections-vs-mpi needs MPI: rebuild with `cargo build --release --features mpi` and run it under `mpirun -n 8 --oversubscribe`".into())
}

impl Report for VsMpi {
    fn json(&self) -> String {
        // The fields in their order (a `json!` object would sort them).
        serde_json::to_string(self).expect("a struct of numbers serializes")
    }

    fn table(&self) -> String {
        let mut s = format!(
            "{} ranks, new group of {}, median of {} reps (us):\n",
            self.ranks, self.members, self.reps
        );
        let rows = [
            (
                "MPI_Comm_split",
                self.mpi_comm_split_us,
                self.mpi_comm_split_plus_bcast_us,
            ),
            (
                "MPI_Comm_create_group",
                self.mpi_comm_create_group_us,
                self.mpi_comm_create_group_plus_bcast_us,
            ),
            (
                "shrink-and-hash",
                self.shrink_and_hash_us,
                self.shrink_and_hash_plus_bcast_us,
            ),
            ("range", self.range_us, self.range_plus_bcast_us),
        ];
        let _ = writeln!(s, "{:<24} {:>12} {:>14}", "creation", "alone", "plus bcast");
        for (name, alone, plus) in rows {
            let _ = writeln!(s, "{name:<24} {alone:>12.2} {plus:>14.2}");
        }
        let _ = writeln!(
            s,
            "targets: range+bcast {RANGE_VS_SPLIT}x faster than split+bcast (got {:.1}x); shrink-and-hash no slower than split (got {:.2}x)",
            self.mpi_comm_split_plus_bcast_us / self.range_plus_bcast_us,
            self.shrink_and_hash_us / self.mpi_comm_split_us
        );
        s
    }
}
