//! chorus-bench: performance measurements of chorus against baselines, run side by side.

use chorus_apps::bench::charm;
use chorus_apps::bench::create_group::report::{self as create_group, CreateGroupArgs};
use chorus_apps::bench::lb::{self, LbArgs};
use chorus_apps::bench::messaging::report::{self as messaging, MessagingArgs};
use chorus_apps::bench::mpi_pingpong::{self, PingpongArgs};
use chorus_apps::bench::replay::{self, ReplayArgs};
use chorus_apps::bench::report::{print, Report};
use chorus_apps::bench::sections::{self, SectionsArgs};
use chorus_apps::bench::sections_vs_mpi::{self, VsMpiArgs};
use chorus_apps::bench::sim_scale::{self, SimScaleArgs};
use chorus_apps::cli;
use chorus_core::{Config, Layer};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

// PEs allocate messages on one thread and free them on another; mimalloc handles
// that pattern far better than glibc's arenas (chorus and the baselines alike).
// `Cap` counts live heap bytes for the memory figures.
#[global_allocator]
static ALLOC: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

#[derive(Parser)]
#[command(
    version,
    about = "chorus performance measurements, each against a baseline in the same run"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
}

impl Command {
    /// The job configuration to check before running, on the layer the subcommand
    /// runs on whatever --layer says (none for the subcommands without one).
    fn job_config(&self) -> Option<Config> {
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
            Command::Lb(a) => Some(a.config_for(&a.config.array_lb)),
            Command::CharmPingpong(a) => Some(a.config.clone()),
            Command::CharmKneighbor(a) => Some(a.config.clone()),
            Command::CharmXcastredn(a) => Some(a.config.clone()),
            Command::CharmMigrate(a) => Some(a.config.clone()),
            Command::CharmAlltoall(a) => Some(a.config.clone()),
            Command::CharmJacobi2d(a) => Some(a.config.clone()),
            Command::Sections(_) | Command::Messaging(_) => None,
        }
    }

    /// A usage error clap cannot see: it exits with status 2.
    fn check(&self) -> Result<(), String> {
        match self {
            Command::CreateGroup(a) => a.check(),
            Command::Replay(a) => a.check(),
            Command::Lb(a) => a.check(),
            Command::CharmPingpong(a) => a.check(),
            Command::CharmKneighbor(a) => a.check(),
            Command::CharmXcastredn(a) => a.check(),
            Command::CharmMigrate(a) => a.check(),
            Command::CharmAlltoall(a) => a.check(),
            Command::CharmJacobi2d(a) => a.check(),
            _ => Ok(()),
        }
    }

    /// Run the bench and print its report; the ranks of an MPI bench other than 0
    /// print nothing.
    fn run(&self) -> Result<(), String> {
        match self {
            Command::Sections(a) => show(sections::measure(a), a.json),
            Command::Messaging(a) => show(messaging::measure(a), a.json),
            Command::MpiPingpong(a) => show_rank0(mpi_pingpong::measure(a), a.json),
            Command::SectionsVsMpi(a) => show_rank0(sections_vs_mpi::measure(a), a.json),
            Command::SimScale(a) => {
                let _ = sim_scale::HEAP_BYTES.set(|| ALLOC.allocated());
                show(sim_scale::measure(a), a.json)
            }
            Command::CreateGroup(a) => show(create_group::measure(a), a.json),
            Command::Replay(a) => show(replay::measure(a), a.json),
            Command::Lb(a) => show(lb::measure(a), a.json),
            Command::CharmPingpong(a) => charm::pingpong::measure(a),
            Command::CharmKneighbor(a) => charm::kneighbor::measure(a),
            Command::CharmXcastredn(a) => charm::xcastredn::measure(a),
            Command::CharmMigrate(a) => charm::migrate::measure(a),
            Command::CharmAlltoall(a) => charm::alltoall::measure(a),
            Command::CharmJacobi2d(a) => charm::jacobi2d::measure(a),
        }
    }
}

/// Print a report as JSON or as its table.
fn show(report: Result<impl Report, String>, as_json: bool) -> Result<(), String> {
    print(&report?, as_json);
    Ok(())
}

/// Print a report only where there is one (rank 0 of an MPI bench).
fn show_rank0(report: Result<Option<impl Report>, String>, as_json: bool) -> Result<(), String> {
    if let Some(r) = report? {
        print(&r, as_json);
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli: Cli = cli::parse(|c: &Cli| c.command.job_config());
    if let Err(e) = cli.command.check() {
        eprintln!("chorus-bench: {e}");
        return ExitCode::from(2);
    }
    cli::exit_status("chorus-bench", cli.command.run().map(|()| true))
}
