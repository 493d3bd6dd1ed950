//! Criterion benches of the runtime's hot paths: same-PE send and dispatch, cross-PE
//! send, and a group reduction, each timed from inside a running job.

use chorus_core::{
    Callback, Chare, ChareProxy, Config, Ctx, Entry, GroupProxy, Reducer, Registry, Runtime,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Time for a feeder on PE 0 to deliver `n` messages to a sink on the last PE.
fn run_pump(pes: u32, n: u64) -> Duration {
    let mut reg = Registry::new();
    reg.chare::<Sink>("Sink").chare::<Feeder>("Feeder");
    let report = Runtime::new(reg, Config::with_pes(pes))
        .run(move |ctx| {
            let sink = ctx.create_chare::<Sink>(n, pes - 1);
            let feeder = ctx.create_chare::<Feeder>((sink, n), 0);
            feeder.send(ctx, FeederMsg::More);
        })
        .expect("pump run");
    let start: f64 = report.output("start").expect("start");
    let end: f64 = report.output("end").expect("end");
    Duration::from_secs_f64(end - start)
}

struct Feeder {
    sink: ChareProxy<Sink>,
    left: u64,
    started: bool,
}

#[derive(Clone, Serialize, Deserialize)]
enum FeederMsg {
    More,
}

impl Chare for Feeder {
    type Init = (ChareProxy<Sink>, u64);
    type Msg = FeederMsg;
    fn create((sink, left): (ChareProxy<Sink>, u64), _: &mut Ctx) -> Self {
        Feeder {
            sink,
            left,
            started: false,
        }
    }
    fn handle(&mut self, _: FeederMsg, ctx: &mut Ctx) {
        if !self.started {
            self.started = true;
            ctx.publish("start", &ctx.now());
        }
        let k = self.left.min(256);
        for i in 0..k {
            self.sink.send(ctx, i);
        }
        self.left -= k;
        if self.left > 0 {
            ctx.this_chare::<Feeder>()
                .expect("singleton")
                .send(ctx, FeederMsg::More);
        }
    }
}

struct Sink {
    expect: u64,
    got: u64,
}

impl Chare for Sink {
    type Init = u64;
    type Msg = u64;
    fn create(expect: u64, _: &mut Ctx) -> Self {
        Sink { expect, got: 0 }
    }
    fn handle(&mut self, _: u64, ctx: &mut Ctx) {
        self.got += 1;
        if self.got == self.expect {
            ctx.publish("end", &ctx.now());
            ctx.exit();
        }
    }
}

/// A group that runs `rounds` max reductions back to back, each result starting the next.
struct Reducing {
    rounds: u64,
    done: Entry<Reducing, u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum ReducingMsg {
    Round(u64),
}

impl Chare for Reducing {
    type Init = (u64, Entry<Reducing, u64>);
    type Msg = ReducingMsg;
    fn create((rounds, done): (u64, Entry<Reducing, u64>), _: &mut Ctx) -> Self {
        Reducing { rounds, done }
    }
    fn handle(&mut self, ReducingMsg::Round(r): ReducingMsg, ctx: &mut Ctx) {
        if r == 1 && ctx.my_pe() == 0 {
            ctx.publish("start", &ctx.now());
        }
        if r > self.rounds {
            if ctx.my_pe() == 0 {
                ctx.publish("end", &ctx.now());
                ctx.exit();
            }
            return;
        }
        let g: GroupProxy<Reducing> = ctx.this_group().expect("group");
        ctx.contribute(r, Reducer::Max, Callback::group_all(&g, self.done));
    }
}

fn run_reductions(pes: u32, rounds: u64) -> Duration {
    let mut reg = Registry::new();
    reg.chare::<Reducing>("Reducing");
    let done = reg.entry::<Reducing, u64>("Reducing::round", |s| ReducingMsg::Round(s + 1));
    let report = Runtime::new(reg, Config::with_pes(pes))
        .run(move |ctx| {
            let g = ctx.create_group::<Reducing>((rounds, done));
            g.broadcast(ctx, ReducingMsg::Round(1));
        })
        .expect("reduction run");
    let start: f64 = report.output("start").expect("start");
    let end: f64 = report.output("end").expect("end");
    Duration::from_secs_f64(end - start)
}

fn send_dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("send_dispatch");
    let n = 100_000u64;
    g.throughput(Throughput::Elements(n));
    for pes in [1u32, 2] {
        g.bench_with_input(BenchmarkId::new("pes", pes), &pes, |b, &pes| {
            b.iter_custom(|iters| (0..iters).map(|_| run_pump(pes, n)).sum());
        });
    }
    g.finish();
}

fn reduction(c: &mut Criterion) {
    let mut g = c.benchmark_group("group_reduction");
    let rounds = 2_000u64;
    g.throughput(Throughput::Elements(rounds));
    for pes in [1u32, 4] {
        g.bench_with_input(BenchmarkId::new("pes", pes), &pes, |b, &pes| {
            b.iter_custom(|iters| (0..iters).map(|_| run_reductions(pes, rounds)).sum());
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3));
    targets = send_dispatch, reduction
}
criterion_main!(benches);
