//! 1,000 array elements contribute their indices to a sum; main gets the sum back.
use chorus_core::{chare, ArrayMap::Block, Callback, Ctx, Reducer, Runtime, RuntimeError};

#[derive(Default)]
struct Elem;

#[chare]
impl Elem {
    #[entry]
    fn sum(&mut self, done: Callback, ctx: &mut Ctx) {
        ctx.contribute(ctx.this_index::<usize>().unwrap(), Reducer::Sum, done);
    }
}

fn main() -> Result<(), RuntimeError> {
    let sum: u64 = Runtime::from_args(Elem::register)
        .run_for(|ctx, done| ctx.create_array_1d::<Elem>(1000, (), Block).sum(ctx, done))?;
    println!("sum of indices: {sum}");
    Ok(())
}
