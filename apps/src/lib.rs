//! chorus-apps: programs users run on chorus, and the measurements behind chorus-bench.

pub mod balancing;
pub mod bench;
pub mod chains;
pub mod checkpointing;
pub mod cli;
pub mod jacobi2d;
pub mod job;
pub mod jquick;
pub mod launcher;
pub mod lbtest;
pub mod memory;
pub mod mpi_model;
pub mod programs;
pub mod radix;
pub mod signals;
pub mod tune;
