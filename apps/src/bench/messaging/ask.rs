//! The async round trip: a task on PE 0 awaits `ask` after `ask` of a chare on PE 1,
//! the same exchange the chare ping-pong makes with two handlers.

use super::{config, Measured};
use crate::bench::error::BenchError;
use crate::bench::median;
use chorus_core::{Chare, Ctx, Registry, ReplyTo, Runtime};
use std::path::Path;
use std::time::Instant;

/// Answers every ask at once.
struct Answerer;

impl Chare for Answerer {
    type Init = ();
    type Msg = ReplyTo<u64>;
    fn create(_: (), _: &mut Ctx) -> Self {
        Answerer
    }
    fn handle(&mut self, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        reply.send(ctx, 1);
    }
}

/// Median round trip in nanoseconds of `ask().await` from a task on PE 0 to a chare
/// on PE 1.
pub fn ask_rtt_ns(rounds: u64, trace: Option<&Path>) -> Result<Measured, BenchError> {
    let mut reg = Registry::new();
    reg.chare::<Answerer>("Answerer");
    let report = Runtime::new(reg, config(2, trace)).run(move |ctx| {
        let answerer = ctx.create_chare::<Answerer>((), 1);
        ctx.spawn(move |t| async move {
            let mut rtts = Vec::with_capacity(rounds as usize);
            let mut answers = 0;
            for _ in 0..rounds {
                // The task's clock: `ctx.now()` would cost the task a poll a round.
                let start = Instant::now();
                answers += t.ask(move |ctx, r| answerer.send(ctx, r)).await?;
                rtts.push(start.elapsed().as_secs_f64());
            }
            t.with(move |ctx| {
                ctx.publish("rtts", &rtts);
                ctx.publish("answers", &answers);
                ctx.exit();
            })
            .await;
            Ok::<(), chorus_core::AskError>(())
        });
    })?;
    let answers: Option<u64> = report.output("answers");
    if answers != Some(rounds) {
        return Err(BenchError::LostMessages {
            got: answers,
            expected: rounds,
        });
    }
    let rtts: Vec<f64> = report.output("rtts").ok_or(BenchError::Unpublished {
        what: "the async ping-pong's round trips",
    })?;
    Ok(Measured {
        value: median(&rtts) * 1e9,
        trace: report.trace,
    })
}
