//! Split the PEs by pe % 3 (MPI_Comm_split) and allreduce each colour's PE numbers.
use chorus_core::{chare, Callback, Ctx, Reducer, Registry, Runtime, RuntimeError};
use chorus_sections::{Section, Sections, Split};

struct Worker(Sections, Callback);

#[chare]
impl Worker {
    #[init]
    fn new(sections: Sections, done: Callback, ctx: &mut Ctx) -> Self {
        let (pe, joined) = (ctx.my_pe(), Self::joined_callback(ctx));
        sections
            .split(ctx, Split::new(3).colour(pe % 3).key(pe), joined)
            .unwrap();
        Worker(sections, done)
    }
    #[entry(callback)]
    fn joined(&mut self, s: Section, ctx: &mut Ctx) {
        let (pe, Worker(sections, done)) = (u64::from(ctx.my_pe()), &*self);
        let sum = vec![pe % 3, 1, pe];
        sections
            .allreduce(ctx, &s, sum, Reducer::Sum, done.clone())
            .unwrap();
    }
}

fn main() -> Result<(), RuntimeError> {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    let mut sums: Vec<Vec<u64>> =
        Runtime::from_args(Worker::register(&mut reg)).run_for_all(move |ctx, done| {
            let sections = sections.setup(ctx);
            ctx.create_group::<Worker>((sections, done));
        })?;
    // Every member got its colour's sum: one distinct value per colour.
    sums.sort_unstable();
    sums.dedup();
    for [c, n, sum] in sums.iter().map(|v| [v[0] / v[1], v[1], v[2]]) {
        println!("colour {c}: {n} members, sum {sum}");
    }
    Ok(())
}
