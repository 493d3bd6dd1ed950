//! chorus-bench: performance measurements of chorus against baselines, run side by side.

use chorus_apps::bench::charm;
use chorus_apps::bench::checkpoint;
use chorus_apps::bench::create_group::report as create_group;
use chorus_apps::bench::lb;
use chorus_apps::bench::messaging::report as messaging;
use chorus_apps::bench::mpi_pingpong;
use chorus_apps::bench::replay;
use chorus_apps::bench::report::{print, Report};
use chorus_apps::bench::sections;
use chorus_apps::bench::sections_vs_mpi;
use chorus_apps::bench::sim_scale;
use chorus_apps::cli;
use chorus_apps::programs::bench::{Cli, Command};
use std::process::ExitCode;

// PEs allocate messages on one thread and free them on another; mimalloc handles
// that pattern far better than glibc's arenas (chorus and the baselines alike).
// `Cap` counts live heap bytes for the memory figures.
#[global_allocator]
static ALLOC: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

/// Run the bench and print its report; the ranks of an MPI bench other than 0
/// print nothing.
fn run(command: &Command) -> Result<(), String> {
    match command {
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
        Command::CharmLeanmd(a) => charm::leanmd::measure(a),
        Command::Checkpoint(a) => show(checkpoint::measure(a), a.json),
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
    let cli: Cli = cli::parse_program();
    cli::exit_status("chorus-bench", run(&cli.command).map(|()| true))
}
