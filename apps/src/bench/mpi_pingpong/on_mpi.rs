//! The measurements of `chorus-bench mpi-pingpong`: the chares, the raw rsmpi
//! send/receive, and the run alternating them.

use super::SizeResult;
use crate::bench::error::BenchError;
use crate::bench::median;
use crate::bench::round_trips::RoundTrips;
use chorus_core::{
    Bytes, Chare, ChareProxy, Config, Ctx, Layer, MpiSession, Registry, Runtime, RuntimeError,
};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde::{Deserialize, Serialize};

/// What the pair of chares is asked to do.
#[derive(Clone, Copy, Serialize, Deserialize)]
enum Mode {
    /// `rounds` round trips of a message of `bytes`.
    PingPong { rounds: u32, bytes: usize },
    /// `count` messages of `bytes` streamed one way, then one acknowledgement.
    Stream { count: u32, bytes: usize },
}

/// Rank 0's side: times round trips or a stream.
struct Pitcher {
    mode: Mode,
    catcher: Option<ChareProxy<Catcher>>,
    trips: RoundTrips,
}

/// Rank 1's side: returns balls, or counts a stream and acknowledges it.
struct Catcher {
    pitcher: ChareProxy<Pitcher>,
    mode: Mode,
    got: u32,
}

#[derive(Clone, Serialize, Deserialize)]
enum PitchMsg {
    /// The catcher exists; start.
    Ready(ChareProxy<Catcher>),
    Ball(Bytes),
    Ack,
}

#[derive(Clone, Serialize, Deserialize)]
enum CatchMsg {
    Ball(Bytes),
}

impl Chare for Pitcher {
    type Init = Mode;
    type Msg = PitchMsg;
    fn create(mode: Mode, _: &mut Ctx) -> Self {
        Pitcher {
            mode,
            catcher: None,
            trips: RoundTrips::default(),
        }
    }
    fn handle(&mut self, msg: PitchMsg, ctx: &mut Ctx) {
        match (msg, self.mode) {
            (PitchMsg::Ready(catcher), Mode::PingPong { bytes, .. }) => {
                self.catcher = Some(catcher);
                self.trips.start(ctx.now());
                catcher.send(ctx, CatchMsg::Ball(Bytes::from(vec![1u8; bytes])));
            }
            (PitchMsg::Ready(catcher), Mode::Stream { count, bytes }) => {
                self.trips.start(ctx.now());
                let ball = Bytes::from(vec![1u8; bytes]);
                for _ in 0..count {
                    catcher.send(ctx, CatchMsg::Ball(ball.clone()));
                }
            }
            (PitchMsg::Ball(ball), Mode::PingPong { rounds, .. }) => {
                if self.trips.back(ctx.now()) as u32 >= rounds {
                    ctx.publish("rtt_s", self.trips.rtts());
                    ctx.exit();
                } else if let Some(c) = self.catcher {
                    self.trips.start(ctx.now());
                    c.send(ctx, CatchMsg::Ball(ball));
                }
            }
            (PitchMsg::Ack, Mode::Stream { .. }) => {
                ctx.publish("stream_s", &self.trips.since_start(ctx.now()));
                ctx.exit();
            }
            _ => {}
        }
    }
}

impl Chare for Catcher {
    type Init = (ChareProxy<Pitcher>, Mode);
    type Msg = CatchMsg;
    fn create((pitcher, mode): Self::Init, ctx: &mut Ctx) -> Self {
        if let Some(me) = ctx.this_chare::<Catcher>() {
            pitcher.send(ctx, PitchMsg::Ready(me));
        }
        Catcher {
            pitcher,
            mode,
            got: 0,
        }
    }
    fn handle(&mut self, CatchMsg::Ball(ball): CatchMsg, ctx: &mut Ctx) {
        match self.mode {
            Mode::PingPong { .. } => self.pitcher.send(ctx, PitchMsg::Ball(ball)),
            Mode::Stream { count, .. } => {
                self.got += 1;
                if self.got == count {
                    self.pitcher.send(ctx, PitchMsg::Ack);
                }
            }
        }
    }
}

fn chorus_run(config: &Config, mode: Mode) -> Result<chorus_core::RunReport, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Pitcher>("Pitcher").chare::<Catcher>("Catcher");
    let config = Config {
        layer: Layer::Mpi,
        ..config.clone()
    };
    Runtime::new(reg, config).run(move |ctx| {
        let pitcher = ctx.create_chare::<Pitcher>(mode, 0);
        ctx.create_chare::<Catcher>((pitcher, mode), 1);
    })
}

/// Chare round trips in seconds (after `rounds / 10` warm-up round trips, which are
/// dropped).
fn chorus_rtts(config: &Config, bytes: usize, rounds: u32) -> Result<Vec<f64>, BenchError> {
    let warm = rounds / 10;
    let report = chorus_run(
        config,
        Mode::PingPong {
            rounds: rounds + warm,
            bytes,
        },
    )?;
    let rtts: Vec<f64> = report.output("rtt_s").ok_or(BenchError::Unpublished {
        what: "the ping-pong's times",
    })?;
    Ok(rtts.get(warm as usize..).unwrap_or_default().to_vec())
}

/// Bytes per second of a stream of `count` chare messages of `bytes`, in MB/s.
fn chorus_bandwidth_mb_s(config: &Config, bytes: usize, count: u32) -> Result<f64, BenchError> {
    let report = chorus_run(config, Mode::Stream { count, bytes })?;
    let secs: f64 = report.output("stream_s").ok_or(BenchError::Unpublished {
        what: "the stream's time",
    })?;
    Ok(bytes as f64 * f64::from(count) / secs / 1e6)
}

/// Raw MPI round trips between ranks 0 and 1 in seconds, on rank 0 (empty elsewhere).
fn raw_rtts(world: &SimpleCommunicator, bytes: usize, rounds: u32) -> Vec<f64> {
    let buf = vec![1u8; bytes];
    let warm = rounds / 10;
    let mut rtts = Vec::with_capacity(rounds as usize);
    world.barrier();
    for i in 0..rounds + warm {
        match world.rank() {
            0 => {
                let t0 = mpi::time();
                world.process_at_rank(1).send(&buf[..]);
                let (back, _) = world.process_at_rank(1).receive_vec::<u8>();
                if i >= warm {
                    rtts.push(mpi::time() - t0);
                }
                debug_assert_eq!(back.len(), bytes);
            }
            1 => {
                let (got, _) = world.process_at_rank(0).receive_vec::<u8>();
                world.process_at_rank(0).send(&got[..]);
            }
            _ => {}
        }
    }
    world.barrier();
    rtts
}

/// Raw MPI streaming bandwidth from rank 0 to rank 1 (nonblocking sends, all
/// received, one acknowledgement), in MB/s.
fn raw_bandwidth_mb_s(world: &SimpleCommunicator, bytes: usize, count: u32) -> Option<f64> {
    let buf = vec![1u8; bytes];
    world.barrier();
    let out = match world.rank() {
        0 => {
            let t0 = mpi::time();
            mpi::request::multiple_scope(count as usize, |scope, coll| {
                for _ in 0..count {
                    coll.add(world.process_at_rank(1).immediate_send(scope, &buf[..]));
                }
                let mut statuses = Vec::new();
                coll.wait_all(&mut statuses);
            });
            let (_, _) = world.process_at_rank(1).receive::<u8>();
            Some(bytes as f64 * f64::from(count) / (mpi::time() - t0) / 1e6)
        }
        1 => {
            for _ in 0..count {
                let (_, _) = world.process_at_rank(0).receive_vec::<u8>();
            }
            world.process_at_rank(0).send(&1u8);
            None
        }
        _ => None,
    };
    world.barrier();
    out
}

/// Round trips for a latency measurement of `bytes`, in each of `CHUNKS` chunks.
fn rounds_for(bytes: usize) -> u32 {
    (((8 << 20) / bytes.max(1)) as u32).clamp(20, 5_000)
}

/// Latency and bandwidth are measured in this many chunks, chorus and raw MPI taking
/// turns, so a shared machine's slow spells hit both alike; a bandwidth is the median
/// over chunks.
const CHUNKS: usize = 4;

/// Half the median of round trips in seconds, in microseconds.
fn one_way_us(rtts: &[f64]) -> f64 {
    median(rtts) / 2.0 * 1e6
}

/// Messages in a bandwidth measurement of `bytes`, in each of `CHUNKS` chunks: a
/// long stream, so the buffers a run allocates and faults in first weigh little.
fn count_for(bytes: usize) -> u32 {
    (((256 << 20) / bytes.max(1)) as u32).clamp(32, 10_000)
}

/// Measure every size on chorus and on raw MPI, alternating them; rank 0 gets the
/// figures, the other ranks `None`. Needs at least two ranks.
pub fn run(
    session: &MpiSession,
    config: &Config,
    sizes: &[usize],
) -> Result<Option<Vec<SizeResult>>, BenchError> {
    let world = session.world();
    if world.size() < 2 {
        return Err(BenchError::TooFewRanks {
            bench: "mpi-pingpong",
            example: "mpirun -n 2 chorus-bench mpi-pingpong",
        });
    }
    let mut out = Vec::new();
    for &bytes in sizes {
        let rounds = rounds_for(bytes);
        let count = count_for(bytes);
        let (mut raw_rtt, mut chorus_rtt) = (Vec::new(), Vec::new());
        for _ in 0..CHUNKS {
            raw_rtt.extend(raw_rtts(&world, bytes, rounds));
            chorus_rtt.extend(chorus_rtts(config, bytes, rounds)?);
        }
        let raw_lat = (world.rank() == 0).then(|| one_way_us(&raw_rtt));
        let chorus_lat = one_way_us(&chorus_rtt);
        let (mut raw_bw, mut chorus_bw) = (Vec::new(), Vec::new());
        for _ in 0..CHUNKS {
            raw_bw.extend(raw_bandwidth_mb_s(&world, bytes, count));
            chorus_bw.push(chorus_bandwidth_mb_s(config, bytes, count)?);
        }
        let raw_bw = (world.rank() == 0).then(|| median(&raw_bw));
        let chorus_bw = median(&chorus_bw);
        if let (Some(raw_latency_us), Some(raw_bandwidth_mb_s)) = (raw_lat, raw_bw) {
            out.push(SizeResult {
                bytes,
                chorus_latency_us: chorus_lat,
                raw_latency_us,
                chorus_bandwidth_mb_s: chorus_bw,
                raw_bandwidth_mb_s,
            });
        }
    }
    Ok((world.rank() == 0).then_some(out))
}
