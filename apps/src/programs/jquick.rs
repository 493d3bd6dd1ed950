//! jquick's command line.

use crate::cli;
use crate::jquick::{InputKind, KeyType, SectionMode};
use chorus_core::Config;
use clap::Parser;

/// The command line of jquick.
#[derive(Parser)]
#[command(
    version,
    about = "Janus Quicksort: perfectly balanced distributed quicksort on range sections"
)]
pub struct Args {
    /// Elements per PE (n = pes * this, unless --n is given), 1..=2^30.
    #[arg(long, default_value_t = 1024, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30))]
    pub n_per_pe: u64,
    /// Elements in all (overrides --n-per-pe; need not be a multiple of the PEs), 1..=2^40.
    #[arg(long, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 40))]
    pub n: Option<u64>,
    /// Input: uniform, sorted, reverse, duplicates (16 values), equal (one value) or zipf.
    #[arg(long, default_value = "uniform")]
    pub input: InputKind,
    /// Key type: u64 or f64.
    #[arg(long, default_value = "u64")]
    pub key: KeyType,
    /// How each level's sections are made: range (O(1), no message), shrink-and-hash
    /// (the section builder, from the world), mpi-split (MPI_Comm_split per level;
    /// --layer mpi with the mpi feature), split-model (range sections behind a
    /// modelled MPICH MPI_Comm_split per level; any layer), create-group-model
    /// (behind a modelled MPI_Comm_create_group per child, Dinan et al.'s algorithm)
    /// or native-create-group-model (MPICH's MPI_Comm_create_group: one allreduce).
    #[arg(long, default_value = "range")]
    pub sections: SectionMode,
    /// Samples per pivot (the median is the pivot; 1 = one random element).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub samples: u32,
    /// Branching factor of the section trees, 2..=16.
    #[arg(long = "section-arity", alias = "k", default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub k: u32,
    /// Simulated cost of one element step of local work, ns (sim layer).
    #[arg(long, default_value_t = 2.0, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e6))]
    pub sim_ns_per_elem: f64,
    /// With split-model: run MPICH's ring allgather where MPICH picks it (groups of
    /// 10,240 members and more that are not a power of two), p − 1 rounds; without
    /// it Bruck stands in (fewer latencies, so MPI's side is faster).
    #[arg(long)]
    pub split_ring: bool,
    /// Fail (exit status 1) unless the output is sorted, balanced and a permutation.
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Sort --reps times with range sections and with this baseline, alternately, and
    /// report both medians and their ratio: mpi-split (the default; --layer mpi under
    /// mpirun), split-model, create-group-model or native-create-group-model (any
    /// layer).
    #[arg(long, num_args = 0..=1, default_missing_value = "mpi-split", value_parser = compare_mode)]
    pub compare: Option<SectionMode>,
    /// Repetitions of each variant with --compare.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

/// Bytes a sort holds per key: the key, its copy in the output and the runtime's
/// buffers (`jquick --layer sim --pes 8192 --n-per-pe 1000` peaked at 322 MiB for
/// 8.2 M keys, about 41 bytes each with the PEs' own memory; README).
const BYTES_PER_KEY: u64 = 40;

/// The keys to sort fit in the memory available.
fn check_memory(a: &Args) -> Result<(), String> {
    let n =
        a.n.unwrap_or(a.n_per_pe.saturating_mul(u64::from(a.chorus.pes)));
    let flag = match a.n {
        Some(_) => "--n".to_string(),
        None => format!("--n-per-pe {} x --pes {}", a.n_per_pe, a.chorus.pes),
    };
    crate::memory::check(
        &format!("{flag} ({n} keys)"),
        n.saturating_mul(BYTES_PER_KEY),
    )
}

/// The baselines `--compare` takes.
fn compare_mode(s: &str) -> Result<SectionMode, String> {
    match s.parse()? {
        SectionMode::Range | SectionMode::ShrinkAndHash => Err(format!(
            "--compare takes mpi-split, split-model, create-group-model or native-create-group-model, not {s:?}"
        )),
        m => Ok(m),
    }
}

impl super::ProgramArgs for Args {
    const NAME: &'static str = "jquick";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        let splits = [Some(self.sections), self.compare].contains(&Some(SectionMode::SplitModel));
        if self.split_ring && !splits {
            return Err(
                "--split-ring changes the modelled MPI_Comm_split only: give it with --sections split-model or --compare split-model"
                    .into(),
            );
        }
        check_memory(self)
    }
}
