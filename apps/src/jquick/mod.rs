//! Janus Quicksort (the RBC paper, section VII): a distributed quicksort with perfect
//! balance — after every level each PE holds floor(n/p) or ceil(n/p) elements, and
//! at the end PE i holds the i-th slice of the sorted order — recursing on range
//! sections made in O(1) without a message. A janus PE, whose elements straddle the
//! split, belongs to both subtasks and runs both with asynchronous collectives.

pub mod base;
pub mod built;
pub mod driver;
pub mod input;
pub mod key;
pub mod layout;
#[cfg(feature = "mpi")]
pub mod mpi_split;
pub mod pivot;
pub mod sorter;
pub mod spec;
pub mod split_model;
pub mod summary;
pub mod task;
pub mod verify;

pub use input::InputKind;
pub use key::{KeyType, SortKey};
pub use spec::{SectionMode, SortSpec};
pub use verify::Outcome;

use chorus_core::{Config, Encoded, Registry, Runtime, RuntimeError};
use chorus_sections::collectives::Collectives;
use chorus_sections::section::Section;
use driver::{Driver, DriverInit, DriverMsg};
use sorter::{Sorter, SorterEntries, SorterMsg};
use thiserror::Error;

/// Why a sort did not produce an outcome.
#[derive(Debug, Error)]
pub enum JquickError {
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The parameters cannot run.
    #[error("{0}")]
    Spec(String),
    /// The records did not add up.
    #[error("checking the result: {0}")]
    Check(String),
    /// The job ended without an outcome (on MPI, ranks other than 0 get none).
    #[error("the run published no outcome")]
    Missing,
}

/// A finished sort: the verdict and, with `keep_output`, every PE's final keys as
/// ordered words (PE by PE).
#[derive(Debug, Clone)]
pub struct SortRun {
    /// The checked outcome.
    pub outcome: Outcome,
    /// Final keys per PE, if the spec kept them.
    pub slices: Vec<Vec<u64>>,
    /// What the simulator measured (sim layer): events, events/s, makespan, digest.
    pub sim: Option<chorus_core::SimStats>,
}

/// Sort once on the runtime under `config`, with range sections, Shrink-and-Hash or
/// range sections behind modelled MPI_Comm_splits.
pub fn run(config: &Config, spec: &SortSpec) -> Result<SortRun, JquickError> {
    spec.validate().map_err(JquickError::Spec)?;
    if spec.sections == SectionMode::MpiSplit {
        return Err(JquickError::Spec(
            "--sections mpi-split is a plain MPI program: run it with --layer mpi (mpi_split::run)"
                .into(),
        ));
    }
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    let builder = chorus_sections::host::register(&mut reg);
    reg.chare::<Driver>("chorus_apps::jquick::Driver")
        .chare::<Sorter>("chorus_apps::jquick::Sorter");
    let sorter = SorterEntries {
        go: reg.entry::<Sorter, Vec<u64>>("Sorter::go", SorterMsg::Go),
        samples: reg.entry::<Sorter, Vec<u64>>("Sorter::samples", SorterMsg::Samples),
        prefix: reg.entry::<Sorter, Vec<u64>>("Sorter::prefix", SorterMsg::Prefix),
        total: reg.entry::<Sorter, Vec<u64>>("Sorter::total", SorterMsg::Total),
        counts: reg.entry::<Sorter, Vec<u64>>("Sorter::counts", SorterMsg::Counts),
        section: reg.entry::<Sorter, Encoded<Section>>("Sorter::section", SorterMsg::Section),
        context: reg.entry::<Sorter, Vec<u64>>("Sorter::context", SorterMsg::Context),
        create_step: reg.entry::<Sorter, Vec<u64>>("Sorter::create_step", SorterMsg::CreateStep),
    };
    let records = reg.entry::<Driver, Vec<u64>>("Driver::records", DriverMsg::Records);
    let init = DriverInit {
        spec: spec.clone(),
        sorter,
        records,
        builder,
    };
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        ctx.create_chare::<Driver>(init, 0);
    })?;
    if let Some(e) = report.output::<String>("error") {
        return Err(JquickError::Check(e));
    }
    let outcome: Outcome = report.output("outcome").ok_or(JquickError::Missing)?;
    let mut slices: Vec<(u32, Vec<u64>)> = report.outputs("slice");
    slices.sort_by_key(|s| s.0);
    Ok(SortRun {
        outcome,
        slices: slices.into_iter().map(|s| s.1).collect(),
        sim: report.sim.clone(),
    })
}
