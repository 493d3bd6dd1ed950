//! custom_lb: a load-balancing strategy written outside chorus-lb, plugged into the
//! MCMC walkers (see README, *Load balancing*) and compared with none and with the
//! built-in collective regrouping on the same workload.
//!
//! ```sh
//! cargo run -p chorus-examples --bin custom_lb -- --layer sim --pes 16
//! ```
//!
//! Walker groups of 2 PEs each walk a Markov chain of a random length (from
//! `--seed`); an item costs T / (group size) on each member. Every 8 steps all PEs
//! exchange their groups' load and the strategy says how to regroup them. On sim
//! with 16 PEs and the default seed the makespans are none 0.515 s, collective:8
//! 0.383 s and this file's even:8 0.370 s (virtual times: the same on every run).

use chorus_core::{Config, Layer};
use chorus_lb::regroup::GroupLoad;
use chorus_lb::{Collective, LbError, McmcParams, McmcReport, NoBalancing, Strategy, Workload};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;
use std::time::Duration;

/// Steps between two load exchanges, for both strategies that exchange.
const EVERY: u32 = 8;

/// The user's strategy: at each exchange, split all PEs evenly among the chains
/// still running (sizes differ by at most one). Why even and not in proportion to
/// the work left: between two exchanges every running chain walks exactly EVERY
/// items, and the exchange waits for all of them, so each round lasts as long as
/// the smallest group takes; equal groups make the smallest one as large as it can
/// be. The built-in `collective` only gives idle PEs to their busy neighbour, so a
/// chain far from the idle PEs keeps its 2 PEs. (Proportional sizes, tried first,
/// were slower than `none`: the chains with little left got one PE each.)
///
/// A strategy is data: it travels to every PE in the walkers' init, hence serde.
/// Every PE runs `regroup` on the same exchanged loads, so it must be a pure
/// function of them: then every PE computes the same groups.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Even;

impl Strategy for Even {
    fn name(&self) -> String {
        format!("even:{EVERY}")
    }

    fn exchange_every(&self) -> Option<u32> {
        Some(EVERY)
    }

    fn regroup(&self, groups: &[GroupLoad]) -> Vec<GroupLoad> {
        let busy: Vec<&GroupLoad> = groups.iter().filter(|g| g.busy()).collect();
        if busy.is_empty() {
            return groups.to_vec(); // nothing left to balance
        }
        let npes = groups.last().map_or(0, |g| g.last + 1);
        let (base, extra) = (npes / busy.len() as u32, npes % busy.len() as u32);
        // Groups are contiguous ranges of PEs tiling them in order (each walks over
        // a range section), each running chain in exactly one, with its state:
        // chorus-lb checks every partition a strategy returns against these rules.
        let mut first = 0;
        let mut out = Vec::new();
        for (i, g) in busy.into_iter().enumerate() {
            let last = first + base + u32::from((i as u32) < extra) - 1;
            out.push(GroupLoad { first, last, ..*g });
            first = last + 1;
        }
        out
    }
}

/// The same workload under none, the built-in collective and `Even`:
/// `chorus_lb::run` takes any `Strategy`.
fn compare(c: &Config, params: McmcParams) -> Result<Vec<McmcReport>, LbError> {
    Ok(vec![
        chorus_lb::run(c, params, NoBalancing)?,
        chorus_lb::run(c, params, Collective { interval: EVERY })?,
        chorus_lb::run(c, params, Even)?,
    ])
}

fn main() -> ExitCode {
    // --pes, --layer, --seed, --trace, ... and the CHORUS_* variables.
    let config = Config::from_args();
    let params = McmcParams {
        group_size: 2,
        item: Duration::from_millis(4),
        // Chain lengths drawn from --seed: the same workload for every strategy.
        workload: Workload::Random { seed: config.seed },
    };
    // Three whole chorus jobs in one process: fine on threads and sim; under
    // mpirun MPI would need holding across them and one rank to print (apps'
    // `mcmc --layer mpi` does both), which this example leaves out.
    if config.layer == Layer::Mpi {
        eprintln!("custom_lb: runs on threads or sim; under mpirun use apps' mcmc");
        return ExitCode::FAILURE;
    }
    let c = &config;
    let reports = match compare(c, params) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("custom_lb: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The makespan is the time the last chain ended: on sim a virtual time, the
    // same in every run with the same flags; on threads a measured one.
    let none = reports[0].makespan_s;
    println!(
        "{} PEs in groups of 2, T = 4 ms, random workload (seed {}): ideal {:.3} s",
        c.pes, c.seed, reports[0].ideal_s
    );
    for r in &reports {
        println!(
            "{:<14} makespan {:.3} s, speed-up over none {:.2}x, regroups per PE {:.2}",
            r.name,
            r.makespan_s,
            none / r.makespan_s,
            r.regroups.avg
        );
    }
    ExitCode::SUCCESS
}
