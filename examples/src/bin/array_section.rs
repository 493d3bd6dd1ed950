//! array_section: every third element of a 1,000-element array as a section
//! (Charm++'s `CkSectionInfo`). Three multicasts reach each member once; after each,
//! every member adds its index to a section reduction and moves one PE up, so the
//! next multicast and reduction race the moves, and still count each member once.
//!
//! ```sh
//! cargo run -p chorus-examples --bin array_section -- --layer sim --pes 64
//! ```
use chorus_core::{
    chare, ArrayMap::Block, ArraySection, Callback, Ctx, Migratable, Reducer, Runtime,
};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

#[derive(Default, Serialize, Deserialize)]
struct Elem {
    /// Its copy of the section, numbering its section reductions (it moves with it).
    sec: Option<ArraySection<Elem, usize>>,
}

#[chare(migratable)]
impl Elem {
    #[entry]
    fn step(&mut self, sec: ArraySection<Elem, usize>, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        let sec = self.sec.get_or_insert(sec);
        sec.contribute(ctx, i as u64, Reducer::Sum, done)
            .expect("a member");
        let up = (ctx.my_pe() as usize + 1) % ctx.num_pes();
        ctx.migrate_me(up as u32).expect("a valid PE");
    }
}

impl Migratable for Elem {}

fn main() -> ExitCode {
    let sums = Runtime::from_args(Elem::register).run_for_all::<u64>(|ctx, done| {
        let arr = ctx.create_array_1d::<Elem>(1000, (), Block);
        let sec = arr.section_where(ctx, |i| i % 3 == 0).expect("members");
        for _ in 0..3 {
            sec.broadcast(ctx, ElemMsg::Step(sec.clone(), done.clone()));
        }
    });
    match sums {
        // Every rank has the result under mpirun: rank 0 prints it.
        Ok(_) if chorus_core::mpi_launch_rank().unwrap_or(0) != 0 => ExitCode::SUCCESS,
        Ok(sums) => {
            let members = || (0..1000u64).filter(|i| i % 3 == 0);
            let (k, expected) = (members().count(), members().sum::<u64>());
            println!("{k} members, 3 multicasts: section sums {sums:?} (expected {expected} each)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("array_section: {e}");
            ExitCode::FAILURE
        }
    }
}
