//! Side-by-side measurements: chorus against baselines run in the same process.
//! Each bench takes its flags as one `clap::Args` struct and returns a typed result
//! that prints itself ([`report::Report`]).

#[cfg(feature = "baselines")]
pub mod baselines;
pub mod charm;
pub mod checkpoint;
pub mod create_group;
pub mod error;
pub mod lb;
pub mod messaging;
pub mod mpi_pingpong;
pub mod replay;
pub mod report;
pub mod round_trips;
pub mod sections;
pub mod sections_vs_mpi;
pub mod sim_scale;

pub use chorus_sections::tune::stats::median;
