//! chorus-core: a Charm++-style message-driven runtime.
//!
//! Programs are chares — objects on one PE that react to typed messages — organised
//! as singletons, groups (one member per PE) and chare arrays, with reductions to
//! callbacks and quiescence detection. The same program runs on every machine layer.
// Unsafe code is allowed only in the MPI machine layer (`machine::mpi`, `launch::mpi`),
// where rsmpi's nonblocking sends need it, and in `msg::local`, which stores small
// message values inline; everywhere else it is an error.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod base;
mod engine;
mod launch;
pub mod machine;
pub mod msg;
pub mod trace;
pub mod wire;

// The module paths of earlier releases, kept for users.
pub use api::{chare, ctx, migration, proxy, registry, report};
pub use base::{bytes, cli, config, error, ids, logging, tree};
/// Message values and their type-erased form.
pub use msg::payload as message;
pub use msg::{array, callback, reduction};

pub use api::balance::{ArrayStrategy, LoadStats, Move, ObjLoad};
pub use array::{ArrayIndex, ArrayMap};
pub use base::checkpoint_error::CheckpointError;
pub use base::hash::mix64;
pub use base::trace_select::{PeList, TraceWindow};
pub use bytes::Bytes;
pub use callback::Callback;
pub use chare::Chare;
pub use config::{
    is_root_process, mpi_launch_rank, mpi_launch_size, Config, ConfigError, ErrorPolicy, KillSpec,
    Layer, SimArgs, SimPreset, StatsFormat, WorkMode, DEFAULT_PES,
};
pub use ctx::Ctx;
pub use error::SyncError;
pub use error::{RegistryMismatch, RuntimeError};
pub use ids::{ChareId, CollectionId, Pe};
#[cfg(feature = "mpi")]
pub use machine::mpi::MpiSession;
pub use machine::sim::network::NetworkModel;
pub use machine::sim::stats::SimStats;
pub use message::Message;
pub use migration::{Checkpointable, Migratable, MigrateError, Restarted};
pub use msg::envelope::Envelope;
pub use proxy::{ArrayProxy, ChareProxy, GroupProxy, SendOpts};
pub use reduction::{Encoded, RedData, Reducer, Reducible};
pub use registry::{Entry, Registry};
pub use report::{PeReport, RunReport, MAX_ERRORS_KEPT};
pub use trace::TraceReport;

pub use launch::Runtime;

/// The README's example, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
