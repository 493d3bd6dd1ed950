//! chorus-core: a Charm++-style message-driven runtime.
//!
//! Programs are chares — objects on one PE that react to typed messages — organised
//! as singletons, groups (one member per PE) and chare arrays, with reductions to
//! callbacks and quiescence detection. The same program runs on every machine layer.
//!
//! A chare type names what it is built from (`Init`) and the messages it takes
//! (`Msg`); a program registers its chare types in a `Registry`, and `Runtime::run`
//! runs a main function on PE 0, then every PE until one calls `ctx.exit()`:
//!
//! ```
//! use chorus_core::{Chare, Config, Ctx, Registry, Runtime};
//!
//! /// Prints what it is sent, then ends the job.
//! struct Greeter;
//!
//! impl Chare for Greeter {
//!     type Init = ();
//!     type Msg = String;
//!     fn create(_: (), _: &mut Ctx) -> Self {
//!         Greeter
//!     }
//!     fn handle(&mut self, msg: String, ctx: &mut Ctx) {
//!         println!("PE {} of {}: {msg}", ctx.my_pe(), ctx.num_pes());
//!         ctx.exit();
//!     }
//! }
//!
//! let mut reg = Registry::new();
//! reg.chare::<Greeter>("Greeter");
//! // A program takes --pes, --layer, --trace, ... with `Config::from_args()`.
//! Runtime::new(reg, Config::with_pes(2)).run(|ctx| {
//!     let greeter = ctx.create_chare::<Greeter>((), 1);
//!     greeter.send(ctx, "hello".to_string());
//! })?;
//! # Ok::<(), chorus_core::RuntimeError>(())
//! ```
//!
//! The README's *Writing a chare* goes on with groups, reductions and callbacks.
// Unsafe code is allowed only in the MPI machine layer (`machine::mpi`, `launch::mpi`),
// where rsmpi's nonblocking sends need it, and in `msg::local`, which stores small
// message values inline; everywhere else it is an error.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod base;
mod engine;
mod launch;
// The transports and the wire format are the runtime's own; their public parts are
// for the workspace's benchmarks and fuzz targets, not for programs.
#[doc(hidden)]
pub mod machine;
pub mod msg;
pub mod trace;
#[doc(hidden)]
pub mod wire;

// The module paths of earlier releases, kept for users.
pub use api::{chare, ctx, migration, proxy, registry, report, target};
pub use base::{bytes, cli, config, error, ids, logging, packed, tree};
/// Message values and their type-erased form.
pub use msg::payload as message;
pub use msg::{array, callback, reduction};

pub use api::balance::{ArrayStrategy, LoadStats, Move, ObjLoad};
pub use api::node_group::{NodeGroupProxy, NodeMemberProxy};
pub use api::section::ArraySection;
pub use array::{ArrayIndex, ArrayMap};
pub use base::checkpoint_error::CheckpointError;
/// The runtime's fixed 64-bit mixing hash, shared with the other chorus crates.
#[doc(hidden)]
pub use base::hash::mix64;
pub use base::section_error::SectionError;
pub use base::trace_select::{PeList, TraceWindow};
pub use bytes::Bytes;
pub use callback::Callback;
pub use chare::Chare;
/// Declare a chare's entry methods on its impl block (`#[chare]`, with `#[init]` and
/// `#[entry]` methods): generates its message enum, `Chare` impl, `register` and
/// typed proxy methods. See the README's *Entry methods declared in Rust*.
pub use chorus_macros::chare;
pub use config::{
    is_root_process, mpi_launch_rank, mpi_launch_size, Config, ConfigError, ErrorPolicy,
    InjectedFailure, KillSpec, Layer, LbPeriod, SimArgs, SimPreset, StatsFormat, WorkMode,
    DEFAULT_PES,
};
pub use ctx::Ctx;
pub use engine::{verify_checkpoint, CommittedCheckpoint};
pub use error::{DestroyError, SyncError};
pub use error::{RegistryMismatch, RuntimeError};
pub use ids::{ChareId, CollectionId, Pe};
#[cfg(feature = "mpi")]
pub use machine::mpi::MpiSession;
pub use machine::sim::network::NetworkModel;
pub use machine::sim::stats::SimStats;
pub use message::Message;
pub use migration::{Checkpointable, Migratable, MigrateError, Restarted};
pub use proxy::{ArrayProxy, ChareProxy, GroupProxy, SendOpts};
pub use reduction::{Encoded, RedData, Reducer, Reducible};
pub use registry::{Entry, IntoRegistry, Registry};
pub use report::{PeReport, Recovery, RunReport, Unfinished, MAX_ERRORS_KEPT};
pub use trace::TraceReport;

pub use api::task::{Ask, AskError, ReplyTo, Task, With};
pub use base::exit::exit_status;
pub use target::{ElementProxy, MemberProxy, Target, This};

pub use launch::Runtime;

/// What the code `#[chare]` generates names; not for direct use.
#[doc(hidden)]
pub mod __private {
    pub use serde;
}

/// What `#[chare]` refuses, as compile-fail doctests.
#[cfg(doctest)]
#[doc = include_str!("api/declared_errors.md")]
pub struct DeclaredErrors;

/// The README's example, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
