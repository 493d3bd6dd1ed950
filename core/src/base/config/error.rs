//! What `Config::validate` finds wrong with a job configuration, one variant per
//! kind of mistake, each naming the flag, the value and what to do instead.

use super::KillSpec;
use crate::base::trace_select::{PeList, TraceWindow};
use thiserror::Error;

/// A job configuration that cannot run, from flags or built in code.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A whole-number flag outside the range it allows.
    #[error("{flag} must be in {lo}..={hi}, got {value}")]
    OutOfRange {
        /// The flag, e.g. `--tree-arity`.
        flag: &'static str,
        /// The value given.
        value: u64,
        /// Smallest value allowed.
        lo: u64,
        /// Largest value allowed.
        hi: u64,
    },
    /// A count of 0 where counting starts at 1.
    #[error("{flag} must be at least 1, got 0 ({one})")]
    Zero {
        /// The flag, e.g. `--trace-flow-every`.
        flag: &'static str,
        /// What 1, the smallest value, does.
        one: &'static str,
    },
    /// A `--sim-*` cost that is not a finite number in its range.
    #[error("{flag} must be a finite number in 0..={max}, got {value}")]
    Cost {
        /// The flag, e.g. `--sim-alpha-us`.
        flag: &'static str,
        /// The value given, as written by Rust (`NaN`, `inf`, `1e30`).
        value: String,
        /// Largest value allowed.
        max: u64,
    },
    /// The process was started by mpirun, but the job is to run on another layer.
    #[error("this process is one of {ranks} MPI ranks (started by mpirun), but --layer is {layer}: every rank would run a job of its own; {}", mpi_hint())]
    NotMpiUnderMpirun {
        /// Ranks mpirun started.
        ranks: u32,
        /// The layer asked for.
        layer: &'static str,
    },
    /// `--pes` disagrees with the PEs mpirun's ranks make.
    #[error("--pes {pes} under mpirun -n {ranks}: the mpi layer runs --pes-per-rank ({per_rank}) PEs on each rank, {total} in all; drop --pes or pass --pes {total}")]
    PesUnderMpirun {
        /// `--pes` as given.
        pes: u32,
        /// Ranks mpirun started.
        ranks: u32,
        /// `--pes-per-rank`.
        per_rank: u32,
        /// The PEs the ranks run.
        total: u32,
    },
    /// `--layer mpi` in a program built without the `mpi` feature.
    #[error("--layer mpi: this program was built without MPI; rebuild it with `cargo build --release --features mpi` (scripts/install-mpi.sh installs OpenMPI)")]
    MpiNotBuilt,
    /// A flag that acts only on some layers, given for another.
    #[error("{flag} needs {needs} ({why}), but --layer is {layer}: {instead}")]
    NeedsLayer {
        /// The flag, with its value where that helps.
        flag: String,
        /// The layers it needs, as the user would ask for them.
        needs: &'static str,
        /// What the flag does there.
        why: &'static str,
        /// The layer given.
        layer: &'static str,
        /// What to do on the layer given.
        instead: &'static str,
    },
    /// More PEs than the threads layer runs.
    #[error("--pes {pes} is too many for the threads layer (one OS thread each, at most {max}); use --layer sim for larger runs")]
    TooManyThreads {
        /// `--pes` as given.
        pes: u32,
        /// The most the layer runs.
        max: u32,
    },
    /// `--sim-kill` names a PE outside the job.
    #[error("--sim-kill {kill} names PE {}, but the job has {pes} PEs (0..{pes})", .kill.pe)]
    KillOutside {
        /// The kill as given.
        kill: KillSpec,
        /// PEs in the job.
        pes: u32,
    },
    /// The threads layer's injected failure (a test hook) names PE 0 or a PE
    /// outside the job, or fails a PE before it took any message.
    #[error("the injected failure of PE {} after {} arrivals: name a PE in 1..{pes} (PE 0 runs main) and at least 1 arrival", .failure.pe, .failure.after)]
    BadInjectedFailure {
        /// The failure as configured.
        failure: crate::base::config::InjectedFailure,
        /// PEs in the job.
        pes: u32,
    },
    /// `--sim-kill` names PE 0: it runs main and alone fires the quiescence callbacks,
    /// so the job could never end.
    #[error("--sim-kill {kill}: PE 0 runs main and cannot be killed; name a PE in 1..pes (1..{pes} here)")]
    KillPe0 {
        /// The kill as given.
        kill: KillSpec,
        /// PEs in the job.
        pes: u32,
    },
    /// A flag that changes nothing in this configuration.
    #[error("{flag} has no effect here: {why}; drop it")]
    NoEffect {
        /// The flag.
        flag: &'static str,
        /// Why it would do nothing.
        why: &'static str,
    },
    /// Two flags that each decide the same thing.
    #[error("{flag} and {other} both say when arrays balance: give one of them")]
    Conflict {
        /// The first flag given.
        flag: &'static str,
        /// The other.
        other: &'static str,
    },
    /// A trace selection without `--trace`.
    #[error("{flag} chooses what --trace records; give --trace FILE too")]
    SelectionWithoutTrace {
        /// `--trace-pes` or `--trace-window`.
        flag: &'static str,
    },
    /// `--trace-pes` names a PE outside the job.
    #[error("--trace-pes {pes} names PE {}, but the job has {job} PEs (0..{})", .pes.max(), .job.saturating_sub(1))]
    TracePeOutside {
        /// The list as given.
        pes: PeList,
        /// PEs in the job.
        job: u32,
    },
    /// `--trace-window` whose end does not come after its start.
    #[error("--trace-window {window} is empty: T0 must come before T1")]
    EmptyWindow {
        /// The window as given.
        window: TraceWindow,
    },
}

/// What a user started by mpirun on another layer should do.
fn mpi_hint() -> &'static str {
    if cfg!(feature = "mpi") {
        "pass --layer mpi"
    } else {
        "rebuild with `cargo build --release --features mpi` and pass --layer mpi"
    }
}
