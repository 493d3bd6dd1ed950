//! Split the PEs by pe % 3 (MPI_Comm_split) and sum each colour's PE numbers.
use chorus_core::{chare, Callback, Ctx, Reducer, RuntimeError};
use chorus_sections::{Sections, Split};

struct Worker;
#[chare]
impl Worker {
    #[init]
    fn new(sections: Sections, done: Callback, ctx: &mut Ctx) -> Self {
        let p = u64::from(ctx.my_pe());
        sections.split_reduce(ctx, Split::by(p % 3), vec![p % 3, 1, p], Reducer::Sum, done);
        Worker
    }
}

fn main() -> Result<(), RuntimeError> {
    let mut sums: Vec<Vec<u64>> = Sections::run_for_all(Worker::register, |ctx, s, done| {
        ctx.create_group::<Worker>((s, done));
    })?;
    sums.sort_unstable(); // one sum per colour, in any order
    for [c, n, sum] in sums.iter().map(|v| [v[0] / v[1], v[1], v[2]]) {
        println!("colour {c}: {n} members, sum {sum}");
    }
    Ok(())
}
