//! chorus messaging measured from inside the runtime: throughput on one PE and across
//! two, and the ping-pong round trip between two PEs, with chare handlers and with a
//! task's `ask().await` (`ask.rs`).

pub mod ask;
pub mod report;

use crate::bench::error::BenchError;
use crate::bench::median;
use crate::bench::round_trips::RoundTrips;
use chorus_core::{Chare, ChareProxy, Config, Ctx, Registry, Runtime, TraceReport};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Messages a sender emits per handler before yielding to the scheduler.
const BATCH: u64 = 1000;
/// Batches a sender may have outstanding (unacknowledged) at once.
const WINDOW: u64 = 8;

/// Sends `total` fire-and-forget messages to a sink it creates on `sink_pe`, BATCH at
/// a time, with at most WINDOW batches unacknowledged so queues stay bounded.
struct Source {
    total: u64,
    sink_pe: u32,
    sink: Option<ChareProxy<Sink>>,
    sent: u64,
    acked: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum SourceMsg {
    Go,
    Ack,
}

impl Source {
    fn pump(&mut self, ctx: &mut Ctx) {
        let Some(sink) = self.sink else { return };
        while self.sent < self.total && self.sent - self.acked < WINDOW * BATCH {
            for _ in 0..BATCH.min(self.total - self.sent) {
                sink.send(ctx, self.sent);
                self.sent += 1;
            }
        }
    }
}

impl Chare for Source {
    /// Messages to send, and the PE of the sink.
    type Init = (u64, u32);
    type Msg = SourceMsg;
    fn create((total, sink_pe): (u64, u32), _: &mut Ctx) -> Self {
        Source {
            total,
            sink_pe,
            sink: None,
            sent: 0,
            acked: 0,
        }
    }
    fn handle(&mut self, msg: SourceMsg, ctx: &mut Ctx) {
        match msg {
            SourceMsg::Go => {
                // The sink learns who to acknowledge from its constructor, so the items
                // can be plain u64s, as the actix baseline's are.
                let me: ChareProxy<Source> = ctx.this_chare().expect("singleton");
                self.sink = Some(ctx.create_chare::<Sink>((self.total, me), self.sink_pe));
                ctx.publish("start", &ctx.now());
            }
            SourceMsg::Ack => self.acked += BATCH,
        }
        self.pump(ctx);
    }
}

/// Counts items and acknowledges every batch.
///
/// Its items are bare u64s: an enum mixing a u64 with a 12-byte proxy made both the
/// sender and the handler move each message through the stack in pieces that a
/// wider read then straddled, which stalls store forwarding on x86 and halved the
/// rate (a property of that message type, not of the runtime; README, "Benchmarks").
struct Sink {
    total: u64,
    got: u64,
    checksum: u64,
    source: ChareProxy<Source>,
}

impl Chare for Sink {
    /// Messages to expect, and the source to acknowledge.
    type Init = (u64, ChareProxy<Source>);
    type Msg = u64;
    fn create((total, source): (u64, ChareProxy<Source>), _: &mut Ctx) -> Self {
        Sink {
            total,
            got: 0,
            checksum: 0,
            source,
        }
    }
    fn handle(&mut self, i: u64, ctx: &mut Ctx) {
        self.got += 1;
        self.checksum = self.checksum.wrapping_add(i);
        if self.got.is_multiple_of(BATCH) {
            self.source.send(ctx, SourceMsg::Ack);
        }
        if self.got == self.total {
            ctx.publish("end", &ctx.now());
            ctx.publish("checksum", &self.checksum);
            ctx.exit();
        }
    }
}

/// A job on `pes` threads-layer PEs, traced to `trace` if given.
fn config(pes: u32, trace: Option<&Path>) -> Config {
    Config {
        trace: trace.map(Path::to_path_buf),
        ..Config::with_pes(pes)
    }
}

fn flood(pes: u32, sink_pe: u32, total: u64, trace: Option<&Path>) -> Result<Measured, BenchError> {
    let mut reg = Registry::new();
    reg.chare::<Source>("Source").chare::<Sink>("Sink");
    let report = Runtime::new(reg, config(pes, trace)).run(move |ctx| {
        let source = ctx.create_chare::<Source>((total, sink_pe), 0);
        source.send(ctx, SourceMsg::Go);
    })?;
    let (start, end) = (report.output::<f64>("start"), report.output::<f64>("end"));
    let checksum = report.output::<u64>("checksum");
    let expected = total * (total - 1) / 2;
    match (start, end, checksum) {
        (Some(s), Some(e), Some(c)) if c == expected => Ok(Measured {
            value: total as f64 / (e - s),
            trace: report.trace,
        }),
        (_, _, got) => Err(BenchError::LostMessages { got, expected }),
    }
}

/// One measurement, and the trace it wrote when traced.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The figure measured (messages per second, or nanoseconds per round trip).
    pub value: f64,
    /// What the trace writer produced, if the run was traced.
    pub trace: Option<TraceReport>,
}

/// Fire-and-forget messages per second between two chares on one PE.
pub fn same_pe_msgs_per_s(total: u64, trace: Option<&Path>) -> Result<Measured, BenchError> {
    flood(1, 0, total, trace)
}

/// Fire-and-forget messages per second from a chare on PE 0 to one on PE 1.
pub fn cross_pe_msgs_per_s(total: u64, trace: Option<&Path>) -> Result<Measured, BenchError> {
    flood(2, 1, total, trace)
}

/// Bounces a ball with its partner, timing each round trip.
struct Player {
    rounds: u64,
    partner: Option<ChareProxy<Player>>,
    trips: RoundTrips,
}

#[derive(Clone, Serialize, Deserialize)]
enum PlayerMsg {
    Serve(ChareProxy<Player>),
    Ball(ChareProxy<Player>),
}

impl Chare for Player {
    type Init = u64;
    type Msg = PlayerMsg;
    fn create(rounds: u64, _: &mut Ctx) -> Self {
        Player {
            rounds,
            partner: None,
            trips: RoundTrips::with_capacity(rounds as usize),
        }
    }
    fn handle(&mut self, msg: PlayerMsg, ctx: &mut Ctx) {
        let me: ChareProxy<Player> = ctx.this_chare().expect("singleton");
        match msg {
            PlayerMsg::Serve(partner) => {
                self.partner = Some(partner);
                self.trips.start(ctx.now());
                partner.send(ctx, PlayerMsg::Ball(me));
            }
            PlayerMsg::Ball(from) => match self.partner {
                None => from.send(ctx, PlayerMsg::Ball(me)),
                Some(partner) => {
                    if self.trips.back(ctx.now()) as u64 == self.rounds {
                        ctx.publish("rtts", self.trips.rtts());
                        return ctx.exit();
                    }
                    self.trips.start(ctx.now());
                    partner.send(ctx, PlayerMsg::Ball(me));
                }
            },
        }
    }
}

/// Median round trip in nanoseconds of a chare ping-pong between PE 0 and PE 1.
pub fn pingpong_rtt_ns(rounds: u64, trace: Option<&Path>) -> Result<Measured, BenchError> {
    let mut reg = Registry::new();
    reg.chare::<Player>("Player");
    let report = Runtime::new(reg, config(2, trace)).run(move |ctx| {
        let a = ctx.create_chare::<Player>(rounds, 0);
        let b = ctx.create_chare::<Player>(rounds, 1);
        a.send(ctx, PlayerMsg::Serve(b));
    })?;
    let rtts: Vec<f64> = report.output("rtts").ok_or(BenchError::Unpublished {
        what: "the ping-pong's round trips",
    })?;
    Ok(Measured {
        value: median(&rtts) * 1e9,
        trace: report.trace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floods_deliver_every_item_on_one_pe_and_across_two() {
        // `flood` fails unless the sink's checksum covers every item exactly once.
        for measured in [
            same_pe_msgs_per_s(10_007, None),
            cross_pe_msgs_per_s(10_007, None),
        ] {
            let rate = measured.expect("flood completes").value;
            assert!(rate.is_finite() && rate > 0.0, "rate {rate}");
        }
    }

    #[test]
    fn pingpong_times_every_round_with_handlers_and_with_asks() {
        // `ask_rtt_ns` fails unless every one of its asks was answered.
        for measured in [pingpong_rtt_ns(50, None), ask::ask_rtt_ns(50, None)] {
            let rtt = measured.expect("ping-pong completes").value;
            assert!(rtt.is_finite() && rtt > 0.0, "round trip {rtt} ns");
        }
    }
}
