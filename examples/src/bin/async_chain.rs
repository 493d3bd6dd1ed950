//! Sequential code over messages: each of 100 elements asks the next element, then
//! the one after with the first answer, and contributes the second to a sum.
use chorus_core::{chare, ArrayMap::Block, AskError, Callback, Ctx, Reducer, ReplyTo, Runtime};

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

    /// Ask element i+1, then element i+2 with its answer; contribute the result.
    #[entry]
    fn chain(&mut self, done: Callback, ctx: &mut Ctx) {
        let (i, cells) = (
            ctx.this_index::<usize>().unwrap(),
            ctx.this_array().unwrap(),
        );
        ctx.spawn(move |t| async move {
            let a = t.ask(move |ctx, r| cells.at((i + 1) % 100).square_plus(ctx, 0, r));
            let a = a.await?;
            let b = t.ask(move |ctx, r| cells.at((i + 2) % 100).square_plus(ctx, a, r));
            let b = b.await?;
            t.with(move |ctx| ctx.contribute(b, Reducer::Sum, done))
                .await;
            Ok::<(), AskError>(())
        });
    }
}

fn main() -> Result<(), chorus_core::RuntimeError> {
    let sum: u64 = Runtime::from_args(Cell::register)
        .run_for(|ctx, done| ctx.create_array_1d::<Cell>(100, (), Block).chain(ctx, done))?;
    println!("sum of chained answers: {sum}");
    Ok(())
}
