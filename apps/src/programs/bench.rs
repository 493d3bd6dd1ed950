//! chorus-bench's command line.

use crate::bench::charm;
use crate::bench::checkpoint::CheckpointArgs;
use crate::bench::create_group::report::CreateGroupArgs;
use crate::bench::lb::LbArgs;
use crate::bench::messaging::report::MessagingArgs;
use crate::bench::mpi_pingpong::PingpongArgs;
use crate::bench::replay::ReplayArgs;
use crate::bench::sections::SectionsArgs;
use crate::bench::sections_vs_mpi::VsMpiArgs;
use crate::bench::sim_scale::SimScaleArgs;
use chorus_core::{Config, Layer};
use clap::{Parser, Subcommand};

/// The command line of chorus-bench.
#[derive(Parser)]
#[command(
    version,
    about = "chorus performance measurements, each against a baseline in the same run"
)]
pub struct Cli {
    /// The measurement to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The measurements chorus-bench makes.
#[derive(Subcommand)]
pub enum Command {
    /// Section creation: every algorithm and filler over --pes and --fractions, the
    /// same members for every algorithm (drawn per PE from --seed).
    Sections(SectionsArgs),
    /// Message throughput and latency against crossbeam and actix.
    Messaging(MessagingArgs),
    /// Chare latency and bandwidth on the mpi layer against raw MPI, between ranks 0
    /// and 1 (run under mpirun -n 2; needs a build with --features mpi).
    MpiPingpong(PingpongArgs),
    /// Section creation on the mpi layer against MPI_Comm_split and
    /// MPI_Comm_create_group, each alone and followed by an 8-byte broadcast to half
    /// the ranks (run under mpirun -n 8 --oversubscribe; needs --features mpi).
    SectionsVsMpi(VsMpiArgs),
    /// A broadcast and a sum reduction over a group on --pes simulated PEs (always the
    /// sim layer; every --sim-* flag applies).
    SimScale(SimScaleArgs),
    /// Communicator creation modelled as MPI does it, on the simulator: Dinan et
    /// al.'s noncollective algorithm against MPI_Comm_create over every PE and MPICH's
    /// MPI_Comm_create_group, with chorus's Shrink-and-Hash beside them, for groups of
    /// the first N PEs (always the sim layer).
    CreateGroup(CreateGroupArgs),
    /// A reproducible sim job (array broadcasts, random messages, migrations, sum
    /// reductions) and the digest of every delivery: two runs with the same flags
    /// print the same digest, in any process (needs --layer sim).
    Replay(ReplayArgs),
    /// Jacobi2D with a moving hot spot on the simulator, once per array
    /// load-balancing strategy (--strategies, default every one), each time per step
    /// beside the ideal (always the sim layer).
    Lb(LbArgs),
    /// Charm++'s pingpong: 1-D array and group round trips (on 1 or 2 PEs).
    CharmPingpong(charm::pingpong::PingpongArgs),
    /// Charm++'s kNeighbor: each array element exchanges with 3 neighbours each side.
    CharmKneighbor(charm::kneighbor::KNeighborArgs),
    /// Charm++'s xcastredn: array broadcast and sum reduction, sizes doubling.
    CharmXcastredn(charm::xcastredn::XcastArgs),
    /// Charm++'s migrate: one array element moving between two PEs.
    CharmMigrate(charm::migrate::MigrateArgs),
    /// Charm++'s streamingAllToAll: 32-byte items from every PE to every PE.
    CharmAlltoall(charm::alltoall::AllToAllArgs),
    /// Charm++'s jacobi2d-2d-decomposition: a 5-point stencil over a 2-D array of blocks.
    CharmJacobi2d(charm::jacobi2d::JacobiArgs),
    /// LeanMD: Lennard-Jones dynamics over 3-D cells and 6-D computes, the computes
    /// balanced by --array-lb every --ldb-period steps.
    CharmLeanmd(charm::leanmd::LeanmdArgs),
    /// Checkpoint bandwidth: a disk checkpoint, the restart from it and an in-memory
    /// checkpoint of --bytes of array state on --pes threads PEs, beside dd writing
    /// and reading as many bytes in the same directory.
    Checkpoint(CheckpointArgs),
}

impl Command {
    /// The job configuration to check before running, on the layer the subcommand
    /// runs on whatever --layer says (none for the subcommands without one).
    pub fn job_config(&self) -> Option<Config> {
        let on = |config: &Config, layer: Layer| Config {
            layer,
            ..config.clone()
        };
        match self {
            Command::MpiPingpong(a) => Some(on(&a.config, Layer::Mpi)),
            Command::SectionsVsMpi(a) => Some(on(&a.config, Layer::Mpi)),
            Command::SimScale(a) => Some(on(&a.config, Layer::Sim)),
            Command::CreateGroup(a) => Some(on(&a.config, Layer::Sim)),
            Command::Replay(a) => Some(a.config.clone()),
            // Checked as a strategy's run, so that --lb-period is checked too.
            Command::Lb(a) => Some(a.config_for(chorus_lb::array::NAMES[0])),
            // One job per --pes; the largest is the one to check.
            Command::Sections(a) => Some(Config {
                layer: a.layer,
                pes: a.pes.iter().copied().max().unwrap_or(1),
                seed: a.seed,
                sim: a.sim.clone(),
                ..Config::default()
            }),
            Command::CharmPingpong(a) => Some(a.config.clone()),
            Command::CharmKneighbor(a) => Some(a.config.clone()),
            Command::CharmXcastredn(a) => Some(a.config.clone()),
            Command::CharmMigrate(a) => Some(a.config.clone()),
            Command::CharmAlltoall(a) => Some(a.config.clone()),
            Command::CharmJacobi2d(a) => Some(a.config.clone()),
            Command::CharmLeanmd(a) => Some(a.config.clone()),
            Command::Checkpoint(a) => Some(Config {
                pes: a.pes,
                layer: Layer::Threads,
                ..Config::default()
            }),
            Command::Messaging(_) => None,
        }
    }

    /// A usage error clap cannot see: it exits with status 2.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Command::Sections(a) => crate::bench::sections::parse_algorithms(&a.algorithms)
                .map(|_| ())
                .map_err(|e| format!("--algorithms: {e}")),
            Command::CreateGroup(a) => a.check(),
            Command::Replay(a) => a.check(),
            Command::Lb(a) => a.check(),
            Command::CharmPingpong(a) => a.check(),
            Command::CharmKneighbor(a) => a.check(),
            Command::CharmXcastredn(a) => a.check(),
            Command::CharmMigrate(a) => a.check(),
            Command::CharmAlltoall(a) => a.check(),
            Command::CharmJacobi2d(a) => a.check(),
            Command::CharmLeanmd(a) => a.check(),
            Command::Checkpoint(a) => a.check(),
            _ => Ok(()),
        }
    }
}

impl super::ProgramArgs for Cli {
    const NAME: &'static str = "chorus-bench";

    fn job(&self) -> Option<Config> {
        self.command.job_config()
    }

    fn usage(&self) -> Result<(), String> {
        self.command.check()
    }
}
