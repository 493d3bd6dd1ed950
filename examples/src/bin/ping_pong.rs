//! Ping-pong: 100,000 round trips between the group members on PEs 0 and 1.
use chorus_core::{chare, Callback, Ctx, Runtime, RuntimeError};

#[derive(Default)]
struct Player;

#[chare]
impl Player {
    #[entry]
    fn ball(&mut self, hits: u64, done: Callback, ctx: &mut Ctx) {
        if hits == 200_000 {
            return ctx.send_to_callback(&done, hits / 2);
        }
        let other = (ctx.my_pe() + 1) % ctx.num_pes().min(2) as u32;
        let players = ctx.this_group::<Player>().unwrap();
        players.at(other).ball(ctx, hits + 1, done);
    }
}

fn main() -> Result<(), RuntimeError> {
    let trips: u64 = Runtime::from_args(Player::register)
        .run_for(|ctx, done| ctx.create_group::<Player>(()).at(0).ball(ctx, 0, done))?;
    println!("{trips} round trips");
    Ok(())
}
