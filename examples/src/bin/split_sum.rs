//! Split the PEs by pe % 3 (MPI_Comm_split) and allreduce each colour's PE numbers.
use chorus_core::{chare, Callback, Ctx, Reducer, Registry, Runtime, RuntimeError};
use chorus_sections::{collectives::CollectiveError, Section, Sections, Split};

struct Worker(Sections, Callback);

#[chare]
impl Worker {
    #[init]
    fn new(sections: Sections, done: Callback, ctx: &mut Ctx) -> Self {
        let split = Split::new(3).colour(ctx.my_pe() % 3).key(ctx.my_pe());
        let joined = Self::joined_callback(ctx);
        sections.split(ctx, split, joined).expect("3 colours");
        Worker(sections, done)
    }
    #[entry(callback)]
    fn joined(&mut self, s: Section, ctx: &mut Ctx) -> Result<(), CollectiveError> {
        let (pe, Worker(sections, done)) = (u64::from(ctx.my_pe()), &*self);
        sections.allreduce(ctx, &s, vec![pe % 3, 1, pe], Reducer::Sum, done.clone())
    }
}

fn main() -> Result<(), RuntimeError> {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    let run = Runtime::from_args(Worker::register(&mut reg));
    let mut sums: Vec<Vec<u64>> = run.run_for_all(move |ctx, done| {
        let sections = sections.setup(ctx);
        ctx.create_group::<Worker>((sections, done));
    })?;
    sums.sort_unstable(); // every member's sum: one distinct per colour
    sums.dedup();
    for [c, n, sum] in sums.iter().map(|v| [v[0] / v[1], v[1], v[2]]) {
        println!("colour {c}: {n} members, sum {sum}");
    }
    Ok(())
}
