//! Communicator creation the MPI way, modelled as chorus programs on the simulator
//! (issue 25): the noncollective group-collective algorithm of Dinan et al. against
//! `MPI_Comm_create` over the whole parent, with MPICH's native
//! `MPI_Comm_create_group` alongside, for groups of the first `g` PEs of a machine of
//! `--pes` (the paper's Figure 1: 8,192 Blue Gene/P cores, output groups of 2 to
//! 8,192). Every figure is the virtual time from a common start to the last PE's end.

pub mod member;

use crate::mpi_model::comm_create::Method;
use chorus_core::{Config, Layer, Registry, Runtime, RuntimeError, SimStats};
use chorus_sections::collectives::Collectives;
use member::{Creator, CreatorInit, CreatorMsg, Run};
use serde::Serialize;

/// The three methods' times for one group size, microseconds.
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
    /// The simulator's statistics.
    pub stats: SimStats,
}

/// Measure every method for each size in `groups` (each 1..=pes) on the simulator.
pub fn run(mut config: Config, groups: &[u32], k: u32) -> Result<CreateGroupResult, RuntimeError> {
    config.layer = Layer::Sim;
    let pes = config.pes;
    if let Some(&bad) = groups.iter().find(|&&g| g == 0 || g > pes) {
        return Err(RuntimeError::Invalid(format!(
            "a group of {bad} PEs does not fit in --pes {pes}; give sizes from 1 to {pes}"
        )));
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
        return Err(RuntimeError::Invalid(e));
    }
    let times: Vec<u64> = report
        .output("times_ns")
        .ok_or_else(|| RuntimeError::Invalid("the runs never finished".into()))?;
    if times.len() != runs.len() {
        return Err(RuntimeError::Invalid(format!(
            "{} of {} runs finished",
            times.len(),
            runs.len()
        )));
    }
    let us = |i: usize| times[i] as f64 / 1e3;
    let rows = groups
        .iter()
        .enumerate()
        .map(|(i, &group)| CreateGroupRow {
            group,
            rounds: group.next_power_of_two().trailing_zeros(),
            dinan_us: us(3 * i),
            comm_create_us: us(3 * i + 1),
            create_group_us: us(3 * i + 2),
        })
        .collect();
    let stats = report
        .sim
        .clone()
        .ok_or_else(|| RuntimeError::Invalid("a sim run without sim statistics".into()))?;
    Ok(CreateGroupResult {
        pes,
        k,
        rows,
        stats,
    })
}
