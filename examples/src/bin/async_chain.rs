//! Sequential code over messages: each of 100 elements asks the next element, then
//! the one after with the first answer, and contributes the second to a sum.
use chorus_core::{
    chare, ArrayMap::Block, AskError, Callback, Ctx, Reducer, ReplyTo, Runtime, Task,
};

#[derive(Default)]
struct Cell;

#[chare]
impl Cell {
    /// Answer `x` plus the square of this element's index.
    #[entry]
    fn square_plus(&mut self, x: u64, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().unwrap() as u64;
        reply.send(ctx, x + i * i);
    }

    /// An async entry runs as a task of the element: ask element i+1, then element
    /// i+2 with its answer, and contribute the result.
    #[entry]
    async fn chain(t: Task, done: Callback) -> Result<(), AskError> {
        let (i, cells) = t
            .with(|ctx| (ctx.this_index::<usize>(), ctx.this_array()))
            .await;
        let (i, cells) = (i.unwrap(), cells.unwrap());
        let a = t
            .ask(move |ctx, r| cells.at((i + 1) % 100).square_plus(ctx, 0, r))
            .await?;
        let b = t
            .ask(move |ctx, r| cells.at((i + 2) % 100).square_plus(ctx, a, r))
            .await?;
        t.with(move |ctx| ctx.contribute(b, Reducer::Sum, done))
            .await;
        Ok(())
    }
}

fn main() -> Result<(), chorus_core::RuntimeError> {
    let sum: u64 = Runtime::from_args(Cell::register)
        .run_for(|ctx, done| ctx.create_array_1d::<Cell>(100, (), Block).chain(ctx, done))?;
    println!("sum of chained answers: {sum}");
    Ok(())
}
