//! chorus messaging measured from inside the runtime: throughput on one PE and across
//! two, and the ping-pong round trip between two PEs.

use super::median;
use chorus_core::{Chare, ChareProxy, Config, Ctx, Registry, Runtime, RuntimeError, TraceReport};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Messages a sender emits per handler before yielding to the scheduler.
const BATCH: u64 = 1000;
/// Batches a sender may have outstanding (unacknowledged) at once.
const WINDOW: u64 = 8;

#[derive(Clone, Serialize, Deserialize)]
struct FloodInit {
    total: u64,
    sink: ChareProxy<Sink>,
}

/// Sends `total` fire-and-forget messages to the sink, BATCH at a time, with at most
/// WINDOW batches unacknowledged so queues stay bounded.
struct Source {
    init: FloodInit,
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
        while self.sent < self.init.total && self.sent - self.acked < WINDOW * BATCH {
            for _ in 0..BATCH.min(self.init.total - self.sent) {
                self.init.sink.send(ctx, SinkMsg::Item(self.sent));
                self.sent += 1;
            }
        }
    }
}

impl Chare for Source {
    type Init = FloodInit;
    type Msg = SourceMsg;
    fn create(init: FloodInit, _: &mut Ctx) -> Self {
        Source {
            init,
            sent: 0,
            acked: 0,
        }
    }
    fn handle(&mut self, msg: SourceMsg, ctx: &mut Ctx) {
        match msg {
            SourceMsg::Go => ctx.publish("start", &ctx.now()),
            SourceMsg::Ack => self.acked += BATCH,
        }
        self.pump(ctx);
    }
}

/// Counts items and acknowledges every batch.
struct Sink {
    total: u64,
    got: u64,
    checksum: u64,
    source: Option<ChareProxy<Source>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum SinkMsg {
    Source(ChareProxy<Source>),
    Item(u64),
}

impl Chare for Sink {
    type Init = u64;
    type Msg = SinkMsg;
    fn create(total: u64, _: &mut Ctx) -> Self {
        Sink {
            total,
            got: 0,
            checksum: 0,
            source: None,
        }
    }
    fn handle(&mut self, msg: SinkMsg, ctx: &mut Ctx) {
        match msg {
            SinkMsg::Source(s) => self.source = Some(s),
            SinkMsg::Item(i) => {
                self.got += 1;
                self.checksum = self.checksum.wrapping_add(i);
                if self.got.is_multiple_of(BATCH) {
                    if let Some(s) = self.source {
                        s.send(ctx, SourceMsg::Ack);
                    }
                }
                if self.got == self.total {
                    ctx.publish("end", &ctx.now());
                    ctx.publish("checksum", &self.checksum);
                    ctx.exit();
                }
            }
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

fn flood(
    pes: u32,
    sink_pe: u32,
    total: u64,
    trace: Option<&Path>,
) -> Result<Measured, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Source>("Source").chare::<Sink>("Sink");
    let report = Runtime::new(reg, config(pes, trace)).run(move |ctx| {
        let sink = ctx.create_chare::<Sink>(total, sink_pe);
        let source = ctx.create_chare::<Source>(FloodInit { total, sink }, 0);
        sink.send(ctx, SinkMsg::Source(source));
        source.send(ctx, SourceMsg::Go);
    })?;
    let (start, end) = (report.output::<f64>("start"), report.output::<f64>("end"));
    let checksum = report.output::<u64>("checksum");
    match (start, end, checksum) {
        (Some(s), Some(e), Some(c)) if c == total * (total - 1) / 2 => Ok(Measured {
            value: total as f64 / (e - s),
            trace: report.trace,
        }),
        _ => Err(RuntimeError::Invalid("flood run lost messages".into())),
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
pub fn same_pe_msgs_per_s(total: u64, trace: Option<&Path>) -> Result<Measured, RuntimeError> {
    flood(1, 0, total, trace)
}

/// Fire-and-forget messages per second from a chare on PE 0 to one on PE 1.
pub fn cross_pe_msgs_per_s(total: u64, trace: Option<&Path>) -> Result<Measured, RuntimeError> {
    flood(2, 1, total, trace)
}

/// Bounces a ball with its partner, timing each round trip.
struct Player {
    rounds: u64,
    partner: Option<ChareProxy<Player>>,
    sent_at: f64,
    rtts: Vec<f64>,
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
            sent_at: 0.0,
            rtts: Vec::with_capacity(rounds as usize),
        }
    }
    fn handle(&mut self, msg: PlayerMsg, ctx: &mut Ctx) {
        let me: ChareProxy<Player> = ctx.this_chare().expect("singleton");
        match msg {
            PlayerMsg::Serve(partner) => {
                self.partner = Some(partner);
                self.sent_at = ctx.now();
                partner.send(ctx, PlayerMsg::Ball(me));
            }
            PlayerMsg::Ball(from) => match self.partner {
                None => from.send(ctx, PlayerMsg::Ball(me)),
                Some(partner) => {
                    let now = ctx.now();
                    self.rtts.push(now - self.sent_at);
                    if self.rtts.len() as u64 == self.rounds {
                        ctx.publish("rtts", &self.rtts);
                        return ctx.exit();
                    }
                    self.sent_at = ctx.now();
                    partner.send(ctx, PlayerMsg::Ball(me));
                }
            },
        }
    }
}

/// Median round trip in nanoseconds of a chare ping-pong between PE 0 and PE 1.
pub fn pingpong_rtt_ns(rounds: u64, trace: Option<&Path>) -> Result<Measured, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Player>("Player");
    let report = Runtime::new(reg, config(2, trace)).run(move |ctx| {
        let a = ctx.create_chare::<Player>(rounds, 0);
        let b = ctx.create_chare::<Player>(rounds, 1);
        a.send(ctx, PlayerMsg::Serve(b));
    })?;
    let rtts: Vec<f64> = report
        .output("rtts")
        .ok_or_else(|| RuntimeError::Invalid("ping-pong published no round trips".into()))?;
    Ok(Measured {
        value: median(&rtts) * 1e9,
        trace: report.trace,
    })
}
