//! What one sort run is: the input, the key type, the recursion's parameters.

use super::input::InputKind;
use super::key::KeyType;
use serde::{Deserialize, Serialize};

/// How each level's sections are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SectionMode {
    /// Range sections split from the parent's: O(1), no message (the RBC way).
    Range,
    /// Each task's section built by Shrink-and-Hash on the section builder, from the
    /// world (messages on every PE per section: the cost range sections avoid).
    ShrinkAndHash,
    /// A native MPI communicator per level by MPI_Comm_split (the paper's baseline;
    /// a plain rsmpi program, `--layer mpi` with the `mpi` feature only).
    MpiSplit,
    /// Range sections, each made only after a modelled MPICH MPI_Comm_split of its
    /// parent (`split_model`): the baseline on every layer, the simulator included.
    SplitModel,
    /// Range sections, each made only after a modelled MPI_Comm_create_group over its
    /// own PEs by Dinan et al.'s noncollective algorithm (`mpi_model::comm_create`).
    CreateGroupModel,
    /// The same with MPI_Comm_create_group as MPICH implements it natively (one
    /// context-id allreduce over the child's PEs).
    NativeCreateGroupModel,
}

impl std::str::FromStr for SectionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "range" => Ok(SectionMode::Range),
            "shrink-and-hash" => Ok(SectionMode::ShrinkAndHash),
            "mpi-split" => Ok(SectionMode::MpiSplit),
            "split-model" => Ok(SectionMode::SplitModel),
            "create-group-model" => Ok(SectionMode::CreateGroupModel),
            "native-create-group-model" => Ok(SectionMode::NativeCreateGroupModel),
            _ => Err(format!(
                "unknown --sections {s:?}: use range, shrink-and-hash, mpi-split, split-model, create-group-model or native-create-group-model"
            )),
        }
    }
}

impl SectionMode {
    /// Name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SectionMode::Range => "range",
            SectionMode::ShrinkAndHash => "shrink-and-hash",
            SectionMode::MpiSplit => "mpi-split",
            SectionMode::SplitModel => "split-model",
            SectionMode::CreateGroupModel => "create-group-model",
            SectionMode::NativeCreateGroupModel => "native-create-group-model",
        }
    }

    /// Whether each level's groups come from a modelled MPI call on the runtime.
    pub fn is_model(self) -> bool {
        self.modelled_call().is_some()
    }

    /// The MPI call a modelled mode stands for, as output names it.
    pub fn modelled_call(self) -> Option<&'static str> {
        match self {
            SectionMode::SplitModel => Some("modelled MPI_Comm_split"),
            SectionMode::CreateGroupModel => Some("modelled MPI_Comm_create_group (Dinan et al.)"),
            SectionMode::NativeCreateGroupModel => {
                Some("modelled MPI_Comm_create_group (MPICH native)")
            }
            _ => None,
        }
    }
}

/// One sort run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SortSpec {
    /// Elements in all.
    pub n: u64,
    /// What the input looks like.
    pub input: InputKind,
    /// Key type.
    pub keys: KeyType,
    /// Seed of the input and of the pivot samples.
    pub seed: u64,
    /// Samples per pivot (1 = the paper's random pivot; the median is taken).
    pub samples: u32,
    /// Branching factor of the section trees.
    pub k: u32,
    /// How tasks get their sections (`run` takes all but mpi-split).
    pub sections: SectionMode,
    /// Simulated cost of one element step of local work, ns (sim layer only; None
    /// charges nothing, as on real layers where work takes real time).
    pub sim_ns_per_elem: Option<f64>,
    /// Publish every PE's final keys (tests compare them with a sequential sort).
    pub keep_output: bool,
    /// In a modelled split, run MPICH's ring allgather where MPICH picks it (p − 1
    /// rounds) instead of Bruck.
    pub split_ring: bool,
}

impl SortSpec {
    /// Check what the types cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=65_536).contains(&self.samples) {
            return Err(format!("--samples {} is outside 1..=65536", self.samples));
        }
        if !(2..=16).contains(&self.k) {
            return Err(format!("--section-arity {} is outside 2..=16", self.k));
        }
        if let Some(ns) = self.sim_ns_per_elem {
            if !(ns.is_finite() && ns >= 0.0) {
                return Err(format!("--sim-ns-per-elem {ns} must be a number >= 0"));
            }
        }
        Ok(())
    }
}
