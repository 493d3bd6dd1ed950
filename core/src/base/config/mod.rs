//! Settings shared by every chorus program, from flags or `CHORUS_*` variables.
//! Clap turns each flag's text into its type; `check.rs` (`Config::validate`) holds
//! every bound and rule, and `error.rs` what it reports.

#[cfg(feature = "cli")]
mod args;
mod check;
mod error;

#[cfg(feature = "cli")]
pub use args::{parse_with, try_parse_with};
#[cfg(feature = "cli")]
pub use check::{parse_args, parse_checked};
pub use error::ConfigError;

use super::cli::{fmt_ns, parse_duration_ns};
use crate::base::trace_select::{PeList, TraceWindow};
use std::path::PathBuf;

/// Which machine layer runs the PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Layer {
    /// One OS thread per PE in this process.
    Threads,
    /// Every PE inside one deterministic discrete-event simulation, in virtual time.
    Sim,
    /// One PE per MPI rank, under mpirun (needs the `mpi` cargo feature).
    Mpi,
}

impl Layer {
    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Threads => "threads",
            Layer::Sim => "sim",
            Layer::Mpi => "mpi",
        }
    }
}

/// What the runtime does when a message cannot be delivered or a handler fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ErrorPolicy {
    /// End the job; `Runtime::run` returns the first error.
    Abort,
    /// Log the error, drop the message, go on; errors are listed in the run report.
    Drop,
}

/// How `ctx.work(d)` spends `d` on real machine layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum WorkMode {
    /// Sleep, leaving the core to other PEs (right when PEs outnumber cores).
    Sleep,
    /// Busy-wait, as real computation would.
    Spin,
}

/// Network and CPU parameters the sim layer starts from (flags override them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum SimPreset {
    /// Blue Gene/P, the machine of the papers behind chorus: slow cores, 3D torus.
    Bgp,
    /// A current InfiniBand (HDR) cluster of x86 nodes.
    #[default]
    Cluster,
    /// Every cost zero: only `ctx.work` advances time.
    Ideal,
}

/// How `--stats` prints the run's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum StatsFormat {
    /// Lines for people.
    Text,
    /// One JSON object.
    Json,
}

/// A PE the sim layer stops at a virtual time (`--sim-kill PE@TIME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillSpec {
    /// The PE that fails.
    pub pe: u32,
    /// Virtual time of the failure, in nanoseconds.
    pub at_ns: u64,
}

impl std::str::FromStr for KillSpec {
    type Err = String;

    /// `PE@TIME`, with TIME a number and a unit: `ns`, `us`, `ms` or `s` (e.g. `7@1.5ms`).
    fn from_str(s: &str) -> Result<Self, String> {
        let (pe, time) = s
            .split_once('@')
            .ok_or_else(|| format!("expected PE@TIME (e.g. 7@150us), got {s:?}"))?;
        let pe = pe
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("{pe:?} in {s:?} is not a PE number"))?;
        // PE 0, which runs main, parses: `Config::validate` refuses it, for kills
        // built in code too.
        let at_ns = parse_duration_ns(time.trim()).ok_or_else(|| {
            format!(
                "{time:?} in {s:?} is not a time of at most 1e6 s: use a number with ns, us, ms or s (e.g. 150us)"
            )
        })?;
        Ok(KillSpec { pe, at_ns })
    }
}

impl std::fmt::Display for KillSpec {
    /// As the flag takes it: `7@150us`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.pe, fmt_ns(self.at_ns))
    }
}

/// Settings of the sim layer; unset costs come from the preset.
#[derive(Debug, Clone, Default)]
#[cfg_attr(
    feature = "cli",
    derive(clap::Args),
    command(next_help_heading = "Simulation")
)]
pub struct SimArgs {
    /// Machine the network model starts from [default: cluster].
    #[cfg_attr(
        feature = "cli",
        arg(long = "sim-preset", env = "CHORUS_SIM_PRESET", value_enum)
    )]
    pub preset: Option<SimPreset>,
    /// Network latency per message, microseconds (alpha).
    #[cfg_attr(feature = "cli", arg(long = "sim-alpha-us", value_parser = crate::base::cli::sim_us))]
    pub alpha_us: Option<f64>,
    /// Network time per byte, nanoseconds (beta; 1/bandwidth).
    #[cfg_attr(feature = "cli", arg(long = "sim-beta-ns-per-byte", value_parser = crate::base::cli::sim_ns_per_byte))]
    pub beta_ns_per_byte: Option<f64>,
    /// CPU overhead to send and to receive a message, microseconds (sets both).
    #[cfg_attr(feature = "cli", arg(long = "sim-overhead-us", value_parser = crate::base::cli::sim_us))]
    pub overhead_us: Option<f64>,
    /// CPU overhead to send a message, microseconds (o_send; overrides --sim-overhead-us).
    #[cfg_attr(feature = "cli", arg(long = "sim-send-overhead-us", value_parser = crate::base::cli::sim_us))]
    pub send_overhead_us: Option<f64>,
    /// CPU overhead to receive a message, microseconds (o_recv; overrides --sim-overhead-us).
    #[cfg_attr(feature = "cli", arg(long = "sim-recv-overhead-us", value_parser = crate::base::cli::sim_us))]
    pub recv_overhead_us: Option<f64>,
    /// Receiver CPU time per byte (copying, decoding), nanoseconds (gamma).
    #[cfg_attr(feature = "cli", arg(long = "sim-gamma-ns-per-byte", value_parser = crate::base::cli::sim_ns_per_byte))]
    pub gamma_ns_per_byte: Option<f64>,
    /// Fixed CPU cost of running any handler, microseconds.
    #[cfg_attr(feature = "cli", arg(long = "sim-handler-us", value_parser = crate::base::cli::sim_us))]
    pub handler_us: Option<f64>,
    /// Extra delay of each network message, microseconds, drawn from 0..=this by
    /// --seed: reorders messages (adversarial timing, reproducible per seed).
    #[cfg_attr(feature = "cli", arg(long = "sim-jitter-us", value_parser = crate::base::cli::sim_us))]
    pub jitter_us: Option<f64>,
    /// Model contention: each PE's outgoing and incoming link carries one message at a time.
    #[cfg_attr(feature = "cli", arg(long = "sim-contention"))]
    pub contention: bool,
    /// Stop PE at a virtual time, e.g. 7@150us (repeatable).
    #[cfg_attr(feature = "cli", arg(long = "sim-kill", value_name = "PE@TIME"))]
    pub kill: Vec<KillSpec>,
    /// Digest every delivered message (time, PE, chare, encoded payload) into the
    /// run's SimStats; costs one encoding per message.
    #[cfg_attr(feature = "cli", arg(long = "sim-digest"))]
    pub digest: bool,
}

impl SimArgs {
    /// The preset the network model starts from: `--sim-preset`, or the default.
    pub fn chosen_preset(&self) -> SimPreset {
        self.preset.unwrap_or_default()
    }

    /// The first flag of the sim layer's model given (a cost, a preset, contention
    /// or the digest), which no other layer reads.
    pub fn model_flag_given(&self) -> Option<&'static str> {
        let costs = [
            ("--sim-alpha-us", self.alpha_us),
            ("--sim-beta-ns-per-byte", self.beta_ns_per_byte),
            ("--sim-overhead-us", self.overhead_us),
            ("--sim-send-overhead-us", self.send_overhead_us),
            ("--sim-recv-overhead-us", self.recv_overhead_us),
            ("--sim-gamma-ns-per-byte", self.gamma_ns_per_byte),
            ("--sim-handler-us", self.handler_us),
            ("--sim-jitter-us", self.jitter_us),
        ];
        let switches = [
            ("--sim-preset", self.preset.is_some()),
            ("--sim-contention", self.contention),
            ("--sim-digest", self.digest),
        ];
        costs
            .into_iter()
            .find_map(|(flag, v)| v.map(|_| flag))
            .or_else(|| switches.into_iter().find_map(|(f, set)| set.then_some(f)))
    }
}

/// Most PEs the threads layer runs (one OS thread each).
pub const MAX_THREAD_PES: u32 = 4096;
/// Most PEs one MPI rank runs (one thread each).
pub const MAX_PES_PER_RANK: u32 = 256;

/// Most PEs of any job (`--pes`).
pub const MAX_PES: u32 = 16_777_216;
/// Fewest children a node of the spanning tree may have (`--tree-arity`).
pub const MIN_TREE_ARITY: u32 = 2;
/// Most children a node of the spanning tree may have (`--tree-arity`).
pub const MAX_TREE_ARITY: u32 = 64;
/// Longest `--fault-hold-long-ms`: an hour.
pub const MAX_FAULT_HOLD_MS: u64 = 3_600_000;

/// PEs of a job that does not say (`--pes`).
pub const DEFAULT_PES: u32 = 4;

/// The number of ranks of the MPI job this process was started in, as its launcher
/// announces it (OpenMPI, MPICH/Intel MPI and other PMI launchers, MVAPICH), or
/// `None` when no MPI launcher started it.
pub fn mpi_launch_size() -> Option<u32> {
    launcher_number(&["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"])
}

/// This process's rank in the MPI job its launcher started, or `None` when no MPI
/// launcher started it.
pub fn mpi_launch_rank() -> Option<u32> {
    launcher_number(&["OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"])
}

/// The first of these launcher variables that holds a number.
fn launcher_number(vars: &[&str]) -> Option<u32> {
    vars.iter()
        .find_map(|var| std::env::var(var).ok()?.trim().parse().ok())
}

/// Whether this process prints what is said once per job (results, errors every
/// rank would report alike): rank 0 under an MPI launcher, or the only process.
pub fn is_root_process() -> bool {
    mpi_launch_rank().is_none_or(|rank| rank == 0)
}

/// Job configuration; flatten it into an app's clap parser.
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "cli",
    derive(clap::Args),
    command(next_help_heading = "Job")
)]
pub struct Config {
    /// Number of processing elements (threads layer: at most 4096; mpi: ranks x --pes-per-rank, set by mpirun).
    #[cfg_attr(feature = "cli", arg(long, env = "CHORUS_PES", default_value_t = DEFAULT_PES))]
    pub pes: u32,
    /// Machine layer to run on.
    #[cfg_attr(feature = "cli", arg(long, env = "CHORUS_LAYER", value_enum, default_value_t = Layer::Threads))]
    pub layer: Layer,
    /// Seed for everything random in the job.
    #[cfg_attr(feature = "cli", arg(long, env = "CHORUS_SEED", default_value_t = 1))]
    pub seed: u64,
    /// Write a Chrome/Perfetto trace of the run to this file.
    #[cfg_attr(
        feature = "cli",
        arg(long, env = "CHORUS_TRACE", help_heading = "Tracing")
    )]
    pub trace: Option<PathBuf>,
    /// Draw 1 in N message arrows in the trace (1 = all), so huge runs stay viewable.
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "trace-flow-every",
            env = "CHORUS_TRACE_FLOW_EVERY",
            default_value_t = 1,
            help_heading = "Tracing"
        )
    )]
    pub trace_flow_every: u64,
    /// Trace only these PEs: PEs and inclusive ranges, e.g. 0..63 or 0,5,8..15.
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "trace-pes",
            env = "CHORUS_TRACE_PES",
            value_name = "LIST|RANGE",
            help_heading = "Tracing"
        )
    )]
    pub trace_pes: Option<PeList>,
    /// Trace only events in this span of the layer's clock, e.g. 1ms..2.5ms (either end may be left out).
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "trace-window",
            env = "CHORUS_TRACE_WINDOW",
            value_name = "T0..T1",
            help_heading = "Tracing"
        )
    )]
    pub trace_window: Option<TraceWindow>,
    /// Write the runtime's own tracing spans (thread-level debugging of chorus) as Chrome JSON.
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "debug-trace",
            env = "CHORUS_DEBUG_TRACE",
            help_heading = "Tracing"
        )
    )]
    pub debug_trace: Option<PathBuf>,
    /// What to do on an undeliverable message or a failed handler.
    #[cfg_attr(feature = "cli", arg(long = "on-error", env = "CHORUS_ON_ERROR", value_enum, default_value_t = ErrorPolicy::Abort))]
    pub on_error: ErrorPolicy,
    /// How ctx.work() spends time on real layers.
    #[cfg_attr(feature = "cli", arg(long, env = "CHORUS_WORK", value_enum, default_value_t = WorkMode::Sleep))]
    pub work: WorkMode,
    /// Arity of the spanning tree used by broadcasts, reductions and quiescence waves.
    #[cfg_attr(
        feature = "cli",
        arg(long = "tree-arity", env = "CHORUS_TREE_ARITY", default_value_t = 4)
    )]
    pub tree_arity: u32,
    /// Print the run's statistics on stderr when it ends.
    #[cfg_attr(feature = "cli", arg(long, env = "CHORUS_STATS", value_enum, num_args = 0..=1, default_missing_value = "text", help_heading = "Output"))]
    pub stats: Option<StatsFormat>,
    /// PEs per MPI rank (mpi layer): above 1, worker threads run the PEs and the
    /// rank's thread owns MPI (Charm++'s SMP mode); the job has ranks x this PEs
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "pes-per-rank",
            env = "CHORUS_PES_PER_RANK",
            default_value_t = 1
        )
    )]
    pub pes_per_rank: u32,
    /// PEs per node on the threads and sim layers: nodegroups have one member per
    /// block of this many PEs (the last block may be smaller); on mpi a node is a rank
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "pes-per-node",
            env = "CHORUS_PES_PER_NODE",
            default_value_t = 1
        )
    )]
    pub pes_per_node: u32,
    /// Fault injection: every Nth user message a PE sends to another PE arrives
    /// damaged and fails to decode (threads and mpi layers)
    #[cfg_attr(
        feature = "cli",
        arg(long = "fault-corrupt-every", env = "CHORUS_FAULT_CORRUPT_EVERY")
    )]
    pub fault_corrupt_every: Option<u64>,
    /// Fault injection (mpi layer): the body of every envelope too long for one
    /// posted receive, and its segments, leave this many ms after its notice, as from
    /// a slow or paused sender
    #[cfg_attr(
        feature = "cli",
        arg(long = "fault-hold-long-ms", env = "CHORUS_FAULT_HOLD_LONG_MS")
    )]
    pub fault_hold_long_ms: Option<u64>,
    /// Load-balancing strategy for chare arrays whose elements call ctx.at_sync()
    /// (none: each element resumes at once, nothing is measured or moved).
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "array-lb",
            env = "CHORUS_ARRAY_LB",
            value_name = "STRATEGY",
            default_value = "none",
            help_heading = "Load balancing"
        )
    )]
    pub array_lb: String,
    /// Balance arrays at the first AtSync step and then every Nth (1 = at every step).
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "lb-period",
            env = "CHORUS_LB_PERIOD",
            help_heading = "Load balancing"
        )
    )]
    pub lb_period: Option<u32>,
    /// Balance arrays at the first AtSync step and then at the first one this many
    /// seconds (virtual seconds on sim) after the last balancing step began.
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "lb-period-secs",
            env = "CHORUS_LB_PERIOD_SECS",
            value_name = "SECONDS",
            help_heading = "Load balancing"
        )
    )]
    pub lb_period_secs: Option<f64>,
    /// Balance arrays only when a program calls `ctx.start_lb`: AtSync steps wait for it.
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "lb-manual",
            env = "CHORUS_LB_MANUAL",
            help_heading = "Load balancing"
        )
    )]
    pub lb_manual: bool,
    /// Restart from the checkpoint in this directory (written by `ctx.checkpoint`).
    #[cfg_attr(
        feature = "cli",
        arg(
            long = "restart",
            env = "CHORUS_RESTART",
            value_name = "DIR",
            help_heading = "Checkpoints"
        )
    )]
    pub restart: Option<std::path::PathBuf>,
    /// The sim layer's network model and failures.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub sim: SimArgs,
    /// Show a spinner on stderr while a run lasts over two seconds, if stderr is a
    /// terminal: on for a program that takes its flags from the command line, off
    /// for a configuration built in code (a test's jobs).
    #[cfg_attr(feature = "cli", arg(skip = true))]
    pub progress: bool,
    /// The threads layer fails a PE (a test hook, no flag): see `InjectedFailure`.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub inject_failure: Option<InjectedFailure>,
}

/// A PE the threads layer fails on purpose, the test hook of the rollback to an
/// in-memory checkpoint (`Ctx::checkpoint_in_memory`): PE `pe` stops when it has
/// taken `after` arrivals from its inbox, and the job is told it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFailure {
    /// The PE that fails (not PE 0, which runs main).
    pub pe: u32,
    /// Arrivals it takes before it fails.
    pub after: u64,
}

/// When the AtSync steps of arrays balance, under an `--array-lb` strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LbPeriod {
    /// The first step and every Nth after it (`--lb-period N`).
    Steps(u32),
    /// The first step and then the first one this many seconds after the last
    /// balancing step began (`--lb-period-secs S`; virtual seconds on sim).
    Seconds(f64),
    /// Each step waits until `ctx.start_lb` asks for it (`--lb-manual`).
    Manual,
}

/// The `--array-lb` value that balances nothing.
pub const NO_ARRAY_LB: &str = "none";

/// The largest `--lb-period`.
pub const MAX_LB_PERIOD: u32 = 1_000_000;

/// The largest `--lb-period-secs`: a day.
pub const MAX_LB_PERIOD_SECS: f64 = 86_400.0;

impl Default for Config {
    fn default() -> Self {
        Config {
            pes: DEFAULT_PES,
            layer: Layer::Threads,
            seed: 1,
            trace: None,
            trace_flow_every: 1,
            trace_pes: None,
            trace_window: None,
            debug_trace: None,
            on_error: ErrorPolicy::Abort,
            work: WorkMode::Sleep,
            tree_arity: 4,
            stats: None,
            pes_per_rank: 1,
            pes_per_node: 1,
            fault_corrupt_every: None,
            fault_hold_long_ms: None,
            array_lb: NO_ARRAY_LB.to_string(),
            lb_period: None,
            lb_period_secs: None,
            lb_manual: false,
            restart: None,
            sim: SimArgs::default(),
            progress: false,
            inject_failure: None,
        }
    }
}

impl Config {
    /// `--fault-hold-long-ms` as a duration.
    #[cfg(feature = "mpi")]
    pub(crate) fn fault_hold(&self) -> Option<std::time::Duration> {
        self.fault_hold_long_ms
            .map(std::time::Duration::from_millis)
    }

    /// When AtSync steps balance: `--lb-manual`, `--lb-period-secs` or `--lb-period`
    /// (default: every step).
    pub fn lb_when(&self) -> LbPeriod {
        match (self.lb_manual, self.lb_period_secs) {
            (true, _) => LbPeriod::Manual,
            (false, Some(secs)) => LbPeriod::Seconds(secs),
            (false, None) => LbPeriod::Steps(self.lb_period.unwrap_or(1)),
        }
    }

    /// PEs per node (a nodegroup's member each): a rank's PEs on mpi, else `--pes-per-node`.
    pub fn node_size(&self) -> u32 {
        match self.layer {
            Layer::Mpi => self.pes_per_rank,
            Layer::Threads | Layer::Sim => self.pes_per_node,
        }
    }

    /// The default configuration with `pes` PEs.
    pub fn with_pes(pes: u32) -> Self {
        Config {
            pes,
            ..Config::default()
        }
    }
}
