//! nodegroup: one member per node (Charm++'s `NodeGroup`). Every PE tells its own
//! node's member it is there (`local`, Charm++'s `ckLocalBranch()`, reached by
//! message); once a member has heard from all its node's PEs it contributes
//! (1 node, its PEs) to a reduction that counts one contribution per node.
//!
//! A node is a rank on mpi (`--pes-per-rank` PEs), a block of `--pes-per-node` PEs
//! on threads and sim:
//!
//! ```sh
//! cargo run -p chorus-examples --bin nodegroup -- --layer sim --pes 64 --pes-per-node 8
//! ```
use chorus_core::{chare, Callback, Ctx, NodeGroupProxy, Reducer, Runtime};
use std::process::ExitCode;

/// A node's member: the PEs of its node it has heard from.
#[derive(Default)]
struct Tally {
    seen: Vec<u32>,
}

#[chare]
impl Tally {
    #[entry]
    fn here(&mut self, pe: u32, done: Callback, ctx: &mut Ctx) {
        self.seen.push(pe);
        let first = ctx.my_node() * ctx.pes_per_node();
        let pes_here = ctx.pes_per_node().min(ctx.num_pes() - first);
        if self.seen.len() == pes_here {
            ctx.contribute(vec![1u64, pes_here as u64], Reducer::Sum, done);
        }
    }
}

/// One per PE: says where it is, then nothing more.
struct Pe;

#[chare]
impl Pe {
    #[init]
    fn new(to: (NodeGroupProxy<Tally>, Callback), ctx: &mut Ctx) -> Self {
        let (tally, done) = to;
        let me = ctx.my_pe();
        tally.local(ctx).here(ctx, me, done);
        Pe
    }
}

fn main() -> ExitCode {
    let mut reg = chorus_core::Registry::new();
    Pe::register(Tally::register(&mut reg));
    let run = Runtime::from_args(reg);
    let counts = run.run_for::<Vec<u64>>(|ctx, done| {
        let tally = ctx.create_node_group::<Tally>(());
        ctx.create_group::<Pe>((tally, done));
    });
    match counts {
        // Every rank has the result under mpirun: rank 0 prints it.
        Ok(_) if chorus_core::mpi_launch_rank().unwrap_or(0) != 0 => ExitCode::SUCCESS,
        Ok(counts) => {
            println!("{} nodes counted {} PEs", counts[0], counts[1]);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nodegroup: {e}");
            ExitCode::FAILURE
        }
    }
}
