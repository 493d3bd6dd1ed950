//! Side-by-side measurements: chorus against baselines run in the same process.

#[cfg(feature = "baselines")]
pub mod baselines;
pub mod create_group;
pub mod messaging;
#[cfg(feature = "mpi")]
pub mod mpi_pingpong;
pub mod replay;
pub mod sections;
#[cfg(feature = "mpi")]
pub mod sections_vs_mpi;
pub mod sim_scale;

pub use chorus_sections::tune::stats::median;
