//! chorus-apps: programs users run on chorus, and the measurements behind chorus-bench.

pub mod bench;
pub mod cli;
pub mod job;
pub mod jquick;
pub mod memory;
pub mod mpi_model;
pub mod radix;
pub mod signals;
pub mod tune;
