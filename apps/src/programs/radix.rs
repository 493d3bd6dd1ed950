//! radix's command line.

use crate::cli;
use crate::radix;
use chorus_core::Config;
use chorus_sections::collectives::Allgather;
use clap::{Parser, ValueEnum};

/// The radix sort's key type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyType {
    /// 32-bit keys.
    U32,
    /// 64-bit keys.
    U64,
}

/// The command line of radix.
#[derive(Parser)]
#[command(
    version,
    about = "Parallel LSD radix sort (Zagha-Blelloch) whose histogram allgather overlaps the local key movement",
    after_help = "By default every algorithm runs twice on the same input: the blocking baseline \
(allgather, then local key movement) and the overlapped sort (allgather started, keys moved \
locally in --chunk-keys chunks while it progresses, then waited for). From the two, overlap is \
computed the NBCBench way, from per-PE times summed over the rounds and averaged over PEs:\n  \
overlap = 1 - (t_comp+comm - t_comp) / t_comm\nwith t_comm the allgather alone and t_comp the \
local movement alone (both from the baseline) and t_comp+comm the overlapped phase. 1 = the \
allgather is hidden completely; it cannot exceed about t_comp / t_comm, so compare those two \
(printed) too. --blocking or --no-baseline run one of the two only (then there is no overlap); \
--reps N repeats the pair and reports the median of every figure.\n\n\
On --layer sim, local work costs only what is charged with ctx.work: --key-ns per key per pass \
(counting, moving, placing received keys) and per histogram entry summed. Its default, 10 ns on \
--sim-preset bgp (an 850 MHz core: ~8 cycles to load a key, extract its digit, bump a cursor and \
store it) and 2 ns otherwise, is what a key costs; on threads and mpi it defaults to 0 (the real \
work is the cost)."
)]
pub struct Args {
    /// Key type.
    #[arg(long, value_enum, default_value_t = KeyType::U32)]
    pub key: KeyType,
    /// Allgather algorithms, comma separated: bruck, standard-exchange, ring, auto, or all (the first three).
    #[arg(long, default_value = "auto")]
    pub allgather: String,
    /// Ports of the k-port algorithms (Bruck, standard exchange).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub ports: u32,
    /// Bits per digit (2^bits buckets per histogram; one round per digit).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=i64::from(radix::params::MAX_RADIX_BITS)))]
    pub radix_bits: u32,
    /// Keys each PE starts with (uniform random from --seed), 1..=2^30.
    #[arg(long, default_value_t = 10_000, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30).map(|v| v as usize))]
    pub keys_per_pe: usize,
    /// Keys moved per handler of the local movement (the allgather progresses between
    /// chunks: smaller chunks progress it sooner but pay a handler each).
    #[arg(long, default_value_t = 256, value_parser = |s: &str| cli::u64_in(s, 1, 1 << 30).map(|v| v as usize))]
    pub chunk_keys: usize,
    /// Compute charged per key per pass, ns [default: sim 10 (bgp) or 2; threads/mpi 0].
    #[arg(long, value_parser = |s: &str| cli::f64_in(s, 0.0, 1e6))]
    pub key_ns: Option<f64>,
    /// Run each comparison this many times and report medians (noisy real layers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Run only the blocking baseline.
    #[arg(long, conflicts_with = "no_baseline")]
    pub blocking: bool,
    /// Run only the overlapped sort.
    #[arg(long)]
    pub no_baseline: bool,
    /// Print one JSON object instead of a table.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

/// The allgather algorithms of `--allgather`, the k-port ones with `ports` ports.
pub fn parse_algorithms(list: &str, ports: u32) -> Result<Vec<Allgather>, String> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        match name {
            "bruck" => out.push(Allgather::Bruck(ports)),
            "standard-exchange" => out.push(Allgather::StandardExchange(ports)),
            "ring" => out.push(Allgather::Ring),
            "auto" => out.push(Allgather::Auto),
            "all" => out.extend([
                Allgather::Bruck(ports),
                Allgather::StandardExchange(ports),
                Allgather::Ring,
            ]),
            other => {
                return Err(format!(
                    "--allgather {other:?}: expected bruck, standard-exchange, ring, auto or all"
                ))
            }
        }
    }
    Ok(out)
}

impl super::ProgramArgs for Args {
    const NAME: &'static str = "radix";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        parse_algorithms(&self.allgather, self.ports)?;
        // The PEs of this process: all of them but on mpi, a rank's.
        let pes = match self.chorus.layer {
            chorus_core::Layer::Mpi => self.chorus.pes_per_rank,
            _ => self.chorus.pes,
        };
        let key_bytes = match self.key {
            KeyType::U32 => 4,
            KeyType::U64 => 8,
        };
        let keys = (self.keys_per_pe as u64).saturating_mul(u64::from(pes));
        crate::memory::check(
            &format!("--keys-per-pe {} x --pes {pes}", self.keys_per_pe),
            keys.saturating_mul(key_bytes * crate::memory::RADIX_BYTES_PER_KEY_BYTE),
        )?;
        radix::RadixParams {
            radix_bits: self.radix_bits,
            keys_per_pe: self.keys_per_pe,
            chunk_keys: self.chunk_keys,
            key_ns: self.key_ns.unwrap_or(0.0),
            allgather: Allgather::Auto,
            blocking: self.blocking,
        }
        .validate()
    }
}
