//! Communicator creation the MPI way, modelled as chorus programs on the simulator
//! (issue 25): the noncollective group-collective algorithm of Dinan et al. against
//! `MPI_Comm_create` over the whole parent, with MPICH's native
//! `MPI_Comm_create_group` alongside, for groups of the first `g` PEs of a machine of
//! `--pes` (the paper's Figure 1: 8,192 Blue Gene/P cores, output groups of 2 to
//! 8,192). Every figure is the virtual time from a common start to the last PE's end.
//! Beside them, chorus's own Shrink-and-Hash builds a section of the same PEs from the
//! world, in a second job on the same machine model (the batch runner of
//! chorus-sections, as `chorus-bench sections` runs it).

pub mod member;
pub mod report;

use crate::bench::error::BenchError;
use crate::mpi_model::comm_create::Method;
use chorus_core::{Config, Layer, Registry, Runtime, SimStats};
use chorus_sections::collectives::Collectives;
use chorus_sections::host::batch::{self, Planned, PlannedParent};
use chorus_sections::host::Membership;
use chorus_sections::protocol::{Algorithm, Filler};
use member::{Creator, CreatorInit, CreatorMsg, Run};
use serde::Serialize;

/// The three MPI methods' and Shrink-and-Hash's times for one group size,
/// microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct CreateGroupRow {
    /// Members of the new communicator (PEs 0..group).
    pub group: u32,
    /// Rounds of Dinan et al.'s algorithm: ceil(log2 group).
    pub rounds: u32,
    /// Dinan et al.'s recursive intercommunicator create and merge.
    pub dinan_us: f64,
    /// `MPI_Comm_create` over every PE.
    pub comm_create_us: f64,
    /// MPICH's native `MPI_Comm_create_group` (an allreduce over the members).
    pub create_group_us: f64,
    /// chorus's Shrink-and-Hash building the section of the same PEs from the world
    /// (first join to last finish; every PE of the world takes part).
    pub shrink_and_hash_us: f64,
}

/// What one run of the bench measured.
#[derive(Debug, Clone, Serialize)]
pub struct CreateGroupResult {
    /// PEs of the parent (the world).
    pub pes: u32,
    /// Branching factor of the collectives' trees.
    pub k: u32,
    /// One row per group size.
    pub rows: Vec<CreateGroupRow>,
    /// The simulator's statistics of the MPI models' job (not the Shrink-and-Hash one).
    pub stats: SimStats,
}

/// Measure every method for each size in `groups` (each 1..=pes) on the simulator.
pub fn run(mut config: Config, groups: &[u32], k: u32) -> Result<CreateGroupResult, BenchError> {
    config.layer = Layer::Sim;
    let pes = config.pes;
    if let Some(&bad) = groups.iter().find(|&&g| g == 0 || g > pes) {
        return Err(BenchError::GroupDoesNotFit { group: bad, pes });
    }
    let runs: Vec<Run> = groups
        .iter()
        .flat_map(|&group| Method::ALL.map(|method| Run { method, group }))
        .collect();
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Creator>("chorus_apps::bench::create_group::Creator");
    let step = reg.entry::<Creator, Vec<u64>>("Creator::step", CreatorMsg::Step);
    let finished = reg.entry::<Creator, u64>("Creator::finished", CreatorMsg::Finished);
    let plan = runs.clone();
    let config_again = config.clone();
    let report = Runtime::new(reg, config).run(move |ctx| {
        let collectives = Collectives::create(ctx);
        let group = ctx.create_group::<Creator>(CreatorInit {
            runs: plan,
            collectives,
            k,
            step,
            finished,
        });
        group.send(ctx, 0, CreatorMsg::Next);
    })?;
    if let Some(e) = report.output::<String>("error") {
        return Err(BenchError::ModelFailed(e));
    }
    let times: Vec<u64> = report.output("times_ns").ok_or(BenchError::Unpublished {
        what: "the creation times",
    })?;
    if times.len() != runs.len() {
        return Err(BenchError::Unfinished {
            finished: times.len(),
            planned: runs.len(),
        });
    }
    let stats = report.sim.clone().ok_or(BenchError::NotSimulated)?;
    let built = shrink_and_hash(config_again, groups, k)?;
    let us = |i: usize| times[i] as f64 / 1e3;
    let rows = groups
        .iter()
        .zip(built)
        .enumerate()
        .map(|(i, (&group, shrink_and_hash_us))| CreateGroupRow {
            group,
            rounds: group.next_power_of_two().trailing_zeros(),
            dinan_us: us(3 * i),
            comm_create_us: us(3 * i + 1),
            create_group_us: us(3 * i + 2),
            shrink_and_hash_us,
        })
        .collect();
    Ok(CreateGroupResult {
        pes,
        k,
        rows,
        stats,
    })
}

/// chorus's Shrink-and-Hash making the section of PEs `0..g` from the world, for each
/// g, one after another in one job: microseconds each.
fn shrink_and_hash(config: Config, groups: &[u32], k: u32) -> Result<Vec<f64>, BenchError> {
    let plan = |membership, algorithm| Planned {
        creator: 0,
        parent: PlannedParent::World,
        algorithm,
        k,
        membership,
    };
    // The job's first creation would pay for the spreading of the plan itself (as in
    // `chorus-bench sections`): an empty creation goes first, unreported.
    let none = Membership::Run { first: 1, last: 0 };
    let mut stages = vec![vec![plan(none, Algorithm::Centralized).into()]];
    for &g in groups {
        // A run, not a list: a list of each size would sit on every PE.
        let members = Membership::Run {
            first: 0,
            last: g - 1,
        };
        stages.push(vec![
            plan(members, Algorithm::ShrinkAndHash(Filler::None)).into()
        ]);
    }
    let out = batch::run(config, stages, false)?;
    Ok(out.reports.iter().skip(1).map(|r| r.time_us).collect())
}
