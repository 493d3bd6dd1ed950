//! The sim layer itself: the network model to the nanosecond, determinism of the event
//! log, fault injection, a job that never exits, and its flags.

use chorus_core::{
    Callback, Chare, ChareProxy, Config, Ctx, Entry, ErrorPolicy, KillSpec, Layer, Registry,
    Runtime, RuntimeError, SimArgs, SimPreset, SimStats,
};
use chorus_tests::{config, splitmix64};
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn now_ns(ctx: &Ctx) -> u64 {
    (ctx.now() * 1e9).round() as u64
}

fn sim(pes: u32, sim: SimArgs) -> Config {
    Config {
        sim,
        ..config(Layer::Sim, pes, ErrorPolicy::Abort)
    }
}

/// [`sim`] under `--on-error drop`: the job goes on past messages lost with a killed PE.
fn sim_drop(pes: u32, sim: SimArgs) -> Config {
    Config {
        on_error: ErrorPolicy::Drop,
        ..self::sim(pes, sim)
    }
}

fn stats(r: &chorus_core::RunReport) -> &SimStats {
    r.sim.as_ref().expect("a sim run reports sim statistics")
}

// ---------------------------------------------------------------- ping-pong model

/// Serves a ball of `n` bytes to its peer once the peer says it is ready, and times
/// its return; the peer sends every ball straight back. (Waiting for "ready" keeps
/// the peer's own creation from delaying the ball.)
struct Player {
    bytes: usize,
    served_at: Option<u64>,
    peer: Option<ChareProxy<Player>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum PlayMsg {
    Ready(ChareProxy<Player>),
    Ball(Vec<u8>),
}

impl Chare for Player {
    /// The peer to announce itself to (for the returner), and the ball's size.
    type Init = (Option<ChareProxy<Player>>, usize);
    type Msg = PlayMsg;
    fn create((peer, bytes): Self::Init, ctx: &mut Ctx) -> Self {
        if let (Some(server), Some(me)) = (&peer, ctx.this_chare::<Player>()) {
            server.send(ctx, PlayMsg::Ready(me));
        }
        Player {
            bytes,
            served_at: None,
            peer,
        }
    }
    fn handle(&mut self, msg: PlayMsg, ctx: &mut Ctx) {
        match msg {
            PlayMsg::Ready(returner) => {
                self.served_at = Some(now_ns(ctx));
                returner.send(ctx, PlayMsg::Ball(vec![7; self.bytes]));
            }
            PlayMsg::Ball(ball) => match (self.served_at, &self.peer) {
                (Some(t0), _) => {
                    ctx.publish("rtt_ns", &(now_ns(ctx) - t0));
                    ctx.exit();
                }
                (None, Some(server)) => server.send(ctx, PlayMsg::Ball(ball)),
                (None, None) => {}
            },
        }
    }
}

fn pingpong_rtt_ns(bytes: usize, args: SimArgs) -> u64 {
    let mut reg = Registry::new();
    reg.chare::<Player>("Player");
    let report = Runtime::new(reg, sim(2, args))
        .run(move |ctx| {
            let server = ctx.create_chare::<Player>((None, bytes), 0);
            ctx.create_chare::<Player>((Some(server), 0), 1);
        })
        .expect("ping-pong runs");
    report.output("rtt_ns").expect("the ball came back")
}

#[test]
fn a_two_pe_ping_pong_takes_exactly_what_the_model_says() {
    let (alpha, beta, o_send, o_recv, handler) = (1_500u64, 0.25f64, 300u64, 700u64, 100u64);
    for gamma in [0.0f64, 0.5] {
        for n in [0usize, 1, 1000, 65_536] {
            let args = SimArgs {
                preset: Some(SimPreset::Ideal),
                alpha_us: Some(alpha as f64 / 1e3),
                beta_ns_per_byte: Some(beta),
                send_overhead_us: Some(o_send as f64 / 1e3),
                recv_overhead_us: Some(o_recv as f64 / 1e3),
                gamma_ns_per_byte: Some(gamma),
                handler_us: Some(handler as f64 / 1e3),
                ..SimArgs::default()
            };
            // On the wire: 32-byte header, 12-byte chare address, then the bincode
            // message: 4-byte enum tag, 8-byte vector length, the bytes.
            let b = (32 + 12 + 4 + 8 + n) as f64;
            let one_way = o_send
                + alpha
                + (beta * b).round() as u64
                + o_recv
                + (gamma * b).round() as u64
                + handler;
            assert_eq!(
                pingpong_rtt_ns(n, args),
                2 * one_way,
                "{n} bytes, gamma {gamma}"
            );
        }
    }
}

#[test]
fn presets_order_as_their_machines_do() {
    let preset = |p| SimArgs {
        preset: Some(p),
        ..SimArgs::default()
    };
    let bgp = pingpong_rtt_ns(1024, preset(SimPreset::Bgp));
    let cluster = pingpong_rtt_ns(1024, preset(SimPreset::Cluster));
    let ideal = pingpong_rtt_ns(1024, preset(SimPreset::Ideal));
    assert_eq!(ideal, 0, "the ideal machine costs nothing");
    assert!(
        bgp > 3 * cluster,
        "Blue Gene/P {bgp} ns vs cluster {cluster} ns"
    );
}

// ---------------------------------------------------------------- determinism

/// Passes tokens around at random, charging random work; counts what it saw.
struct Juggler {
    peers: u32,
    rng: u64,
    seen: u64,
    order: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum JuggleMsg {
    Token { id: u64, hops: u32 },
    Report,
}

impl Chare for Juggler {
    type Init = u32;
    type Msg = JuggleMsg;
    fn create(peers: u32, ctx: &mut Ctx) -> Self {
        Juggler {
            peers,
            rng: ctx.seed() ^ u64::from(ctx.my_pe()),
            seen: 0,
            order: 0,
        }
    }
    fn handle(&mut self, msg: JuggleMsg, ctx: &mut Ctx) {
        match msg {
            JuggleMsg::Token { id, hops } => {
                self.seen += 1;
                self.order = self.order.wrapping_mul(31).wrapping_add(id);
                ctx.work(Duration::from_nanos(splitmix64(&mut self.rng) % 5_000));
                if hops > 0 {
                    let to = (splitmix64(&mut self.rng) % u64::from(self.peers)) as u32;
                    let prio = (splitmix64(&mut self.rng) % 3) as i32;
                    if let Some(g) = ctx.this_group::<Juggler>() {
                        g.send_with(
                            ctx,
                            to,
                            JuggleMsg::Token { id, hops: hops - 1 },
                            chorus_core::SendOpts::prio(prio),
                        );
                    }
                }
            }
            JuggleMsg::Report => {
                let me = ctx.my_pe();
                ctx.publish("seen", &(me, self.seen, self.order, now_ns(ctx)));
            }
        }
    }
}

/// Callback target for quiescence: asks every juggler to report, then exits on the
/// next quiescence.
struct Referee {
    group: chorus_core::GroupProxy<Juggler>,
}

#[derive(Clone, Serialize, Deserialize)]
enum RefereeMsg {
    Quiet(()),
}

impl Chare for Referee {
    type Init = chorus_core::GroupProxy<Juggler>;
    type Msg = RefereeMsg;
    fn create(group: chorus_core::GroupProxy<Juggler>, _: &mut Ctx) -> Self {
        Referee { group }
    }
    fn handle(&mut self, _: RefereeMsg, ctx: &mut Ctx) {
        self.group.broadcast(ctx, JuggleMsg::Report);
        ctx.exit_on_quiescence();
    }
}

type Seen = (u32, u64, u64, u64);

fn juggle(seed: u64) -> (u64, Vec<Seen>) {
    let mut reg = Registry::new();
    reg.chare::<Juggler>("Juggler");
    reg.chare::<Referee>("Referee");
    let quiet: Entry<Referee, ()> = reg.entry("Referee::quiet", RefereeMsg::Quiet);
    let pes = 16;
    let cfg = Config {
        seed,
        ..sim(pes, SimArgs::default())
    };
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let g = ctx.create_group::<Juggler>(pes);
            let referee = ctx.create_chare::<Referee>(g, 3);
            for id in 0..64u64 {
                g.send(
                    ctx,
                    (id % u64::from(pes)) as u32,
                    JuggleMsg::Token { id, hops: 40 },
                );
            }
            ctx.start_quiescence(Callback::chare(&referee, quiet));
        })
        .expect("juggling runs");
    let seen: Vec<Seen> = report.outputs("seen").into_iter().map(|(_, s)| s).collect();
    (stats(&report).digest, seen)
}

#[test]
fn one_seed_replays_the_identical_event_log_and_results() {
    let (d1, s1) = juggle(11);
    let (d2, s2) = juggle(11);
    assert_eq!(d1, d2, "event-log digests differ between identical runs");
    assert_eq!(s1, s2);
    assert_eq!(s1.len(), 16, "every juggler reported");
    let tokens: u64 = s1.iter().map(|s| s.1).sum();
    assert_eq!(tokens, 64 * 41, "every hop of every token was seen once");
    let (d3, s3) = juggle(12);
    assert_ne!(d1, d3, "another seed gives another run");
    assert_eq!(s3.iter().map(|s| s.1).sum::<u64>(), 64 * 41);
}

// ---------------------------------------------------------------- faults

/// Keeps sending to a sink on another PE, charging 10 us of work per send.
struct Feeder {
    sink: ChareProxy<Sink>,
}

#[derive(Clone, Serialize, Deserialize)]
enum FeedMsg {
    Tick,
}

impl Chare for Feeder {
    type Init = ChareProxy<Sink>;
    type Msg = FeedMsg;
    fn create(sink: ChareProxy<Sink>, _: &mut Ctx) -> Self {
        Feeder { sink }
    }
    fn handle(&mut self, _: FeedMsg, ctx: &mut Ctx) {
        self.sink.send(ctx, SinkMsg::Item);
        ctx.work(Duration::from_micros(10));
        if let Some(me) = ctx.this_chare::<Feeder>() {
            me.send(ctx, FeedMsg::Tick);
        }
    }
}

struct Sink;

#[derive(Clone, Serialize, Deserialize)]
enum SinkMsg {
    Item,
}

impl Chare for Sink {
    type Init = ();
    type Msg = SinkMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Sink
    }
    fn handle(&mut self, _: SinkMsg, ctx: &mut Ctx) {
        ctx.work(Duration::from_micros(1));
    }
}

/// Subscribes to failures when built; publishes the first one and ends the job.
struct Watcher;

#[derive(Clone, Serialize, Deserialize)]
enum WatchMsg {
    Failed(u32),
}

impl Chare for Watcher {
    type Init = Entry<Watcher, u32>;
    type Msg = WatchMsg;
    fn create(entry: Entry<Watcher, u32>, ctx: &mut Ctx) -> Self {
        if let Some(me) = ctx.this_chare::<Watcher>() {
            ctx.on_pe_failure(Callback::chare(&me, entry));
        }
        Watcher
    }
    fn handle(&mut self, WatchMsg::Failed(pe): WatchMsg, ctx: &mut Ctx) {
        ctx.publish("failed", &(pe, now_ns(ctx)));
        ctx.exit();
    }
}

#[test]
fn a_killed_pe_drops_its_messages_and_subscribers_hear_of_it() {
    let mut reg = Registry::new();
    reg.chare::<Feeder>("Feeder");
    reg.chare::<Sink>("Sink");
    reg.chare::<Watcher>("Watcher");
    let failed = reg.entry::<Watcher, u32>("Watcher::failed", WatchMsg::Failed);
    let args = SimArgs {
        kill: vec![KillSpec {
            pe: 2,
            at_ns: 100_000,
        }],
        ..SimArgs::default()
    };
    let report = Runtime::new(reg, sim_drop(4, args))
        .run(move |ctx| {
            ctx.create_chare::<Watcher>(failed, 3);
            let sink = ctx.create_chare::<Sink>((), 2);
            let feeder = ctx.create_chare::<Feeder>(sink, 1);
            feeder.send(ctx, FeedMsg::Tick);
        })
        .expect("the job survives the failure and exits");
    let heard: Vec<(u32, u64)> = report
        .outputs("failed")
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    assert_eq!(heard.len(), 1, "one notification: {heard:?}");
    assert_eq!(heard[0].0, 2, "the killed PE is named");
    assert!(
        heard[0].1 >= 100_000,
        "notified at {} ns, before the kill",
        heard[0].1
    );
    let s = stats(&report);
    assert_eq!(s.pes_killed, 1);
    assert!(
        s.dropped >= 1,
        "the feeder's items to the dead PE were dropped: {s:?}"
    );
    // The sink ran until the kill and never after.
    assert!(
        report.per_pe[2].processed >= 5,
        "the sink worked before it died"
    );
}

/// Floods PE 1 from PEs 2 and 3 in batches sent from continuations (flow control
/// paces them by PE 1's credit); PE 0's member counts the producers that finished.
struct Flooder {
    sent: u64,
    finished: u32,
}

/// Messages each producer sends PE 1: far more than one window.
const FLOOD: u64 = 40_000;

#[derive(Clone, Serialize, Deserialize)]
enum FloodMsg {
    Pump,
    Item,
    Finished,
}

impl Chare for Flooder {
    type Init = ();
    type Msg = FloodMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Flooder {
            sent: 0,
            finished: 0,
        }
    }
    fn handle(&mut self, msg: FloodMsg, ctx: &mut Ctx) {
        let group = ctx.this_group::<Flooder>().expect("a group member");
        match msg {
            FloodMsg::Pump => {
                for _ in 0..100 {
                    group.send(ctx, 1, FloodMsg::Item);
                }
                self.sent += 100;
                let next = if self.sent < FLOOD {
                    (ctx.my_pe(), FloodMsg::Pump)
                } else {
                    (0, FloodMsg::Finished)
                };
                group.send(ctx, next.0, next.1);
            }
            FloodMsg::Item => ctx.work(Duration::from_micros(10)),
            FloodMsg::Finished => {
                self.finished += 1;
                if self.finished == 2 {
                    ctx.publish("finished_at_ns", &now_ns(ctx));
                    ctx.exit();
                }
            }
        }
    }
}

#[test]
fn producers_held_by_a_pe_that_dies_go_on() {
    let mut reg = Registry::new();
    reg.chare::<Flooder>("Flooder");
    // By 20 ms both producers have a full window at PE 1 and are held.
    let args = SimArgs {
        kill: vec![KillSpec {
            pe: 1,
            at_ns: 20_000_000,
        }],
        ..SimArgs::default()
    };
    let report = Runtime::new(reg, sim_drop(4, args))
        .run(|ctx| {
            let group = ctx.create_group::<Flooder>(());
            group.send(ctx, 2, FloodMsg::Pump);
            group.send(ctx, 3, FloodMsg::Pump);
        })
        .expect("the producers finish after PE 1 dies instead of stalling");
    let at: Vec<(u32, u64)> = report.outputs("finished_at_ns");
    assert_eq!(at.len(), 1, "both producers finished");
    assert!(at[0].1 > 20_000_000, "{at:?}: the flood outlasted the kill");
    let s = stats(&report);
    assert!(s.dropped > 0, "messages to the dead PE were dropped: {s:?}");
}

/// Sends one item to each of two sinks per tick, for a fixed number of ticks.
struct TwoSinkFeeder {
    sinks: [ChareProxy<Sink>; 2],
}

#[derive(Clone, Serialize, Deserialize)]
enum TwoSinkMsg {
    Tick(u32),
}

impl Chare for TwoSinkFeeder {
    type Init = [ChareProxy<Sink>; 2];
    type Msg = TwoSinkMsg;
    fn create(sinks: [ChareProxy<Sink>; 2], _: &mut Ctx) -> Self {
        TwoSinkFeeder { sinks }
    }
    fn handle(&mut self, TwoSinkMsg::Tick(left): TwoSinkMsg, ctx: &mut Ctx) {
        for sink in self.sinks {
            sink.send(ctx, SinkMsg::Item);
        }
        ctx.work(Duration::from_micros(10));
        match ctx.this_chare::<TwoSinkFeeder>() {
            Some(me) if left > 0 => me.send(ctx, TwoSinkMsg::Tick(left - 1)),
            _ => ctx.publish("fed_until_ns", &now_ns(ctx)),
        }
    }
}

/// Publishes when quiescence came and ends the job.
struct QuietWitness;

#[derive(Clone, Serialize, Deserialize)]
enum QuietMsg {
    Quiet(()),
}

impl Chare for QuietWitness {
    type Init = ();
    type Msg = QuietMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        QuietWitness
    }
    fn handle(&mut self, _: QuietMsg, ctx: &mut Ctx) {
        ctx.publish("quiet_at_ns", &now_ns(ctx));
        ctx.exit();
    }
}

#[test]
fn quiescence_comes_after_a_pe_dies() {
    // PE 1 is an inner node of the PE tree (its subtree holds the feeder's PE 3 and
    // the live sink's PE 5 for any arity up to 4); it dies with items of the feeder
    // queued and more on their way, which are dropped.
    let mut reg = Registry::new();
    reg.chare::<Sink>("Sink");
    reg.chare::<TwoSinkFeeder>("TwoSinkFeeder");
    reg.chare::<QuietWitness>("QuietWitness");
    let quiet: Entry<QuietWitness, ()> = reg.entry("QuietWitness::quiet", QuietMsg::Quiet);
    let args = SimArgs {
        kill: vec![KillSpec {
            pe: 1,
            at_ns: 100_000,
        }],
        ..SimArgs::default()
    };
    let report = Runtime::new(reg, sim_drop(8, args))
        .run(move |ctx| {
            let dead = ctx.create_chare::<Sink>((), 1);
            let live = ctx.create_chare::<Sink>((), 5);
            let feeder = ctx.create_chare::<TwoSinkFeeder>([dead, live], 3);
            feeder.send(ctx, TwoSinkMsg::Tick(30));
            let witness = ctx.create_chare::<QuietWitness>((), 6);
            ctx.start_quiescence(Callback::chare(&witness, quiet));
        })
        .expect("quiescence comes although PE 1 died (before: RuntimeError::Stalled)");
    let fed: Vec<(u32, u64)> = report.outputs("fed_until_ns");
    let quiet: Vec<(u32, u64)> = report.outputs("quiet_at_ns");
    assert_eq!(quiet.len(), 1, "quiescence reached the witness once");
    assert!(fed[0].1 > 200_000, "{fed:?}: the feeder outlived the kill");
    assert!(
        quiet[0].1 >= fed[0].1,
        "{quiet:?} before the feeder ended {fed:?}"
    );
    let s = stats(&report);
    assert_eq!(s.pes_killed, 1);
    assert!(
        s.dropped >= 20,
        "the items for the dead sink were dropped: {s:?}"
    );
    assert_eq!(
        report.per_pe[5].processed,
        31 + 1,
        "the live sink got every item"
    );
}

#[test]
fn a_message_lost_with_a_killed_pe_ends_the_job_under_abort_and_is_counted_under_drop() {
    // The feeder on PE 3 sends the sink on PE 1, killed at 100 us, an item every
    // 10 us. Under abort (the default) the first loss ends the job, typed and naming
    // both PEs; before, the job exited Ok with the losses only in SimStats::dropped.
    let run = |config: fn(u32, SimArgs) -> Config| {
        let mut reg = Registry::new();
        reg.chare::<Sink>("Sink");
        reg.chare::<TwoSinkFeeder>("TwoSinkFeeder");
        let args = SimArgs {
            kill: vec![KillSpec {
                pe: 1,
                at_ns: 100_000,
            }],
            ..SimArgs::default()
        };
        Runtime::new(reg, config(8, args)).run(move |ctx| {
            let dead = ctx.create_chare::<Sink>((), 1);
            let live = ctx.create_chare::<Sink>((), 5);
            let feeder = ctx.create_chare::<TwoSinkFeeder>([dead, live], 3);
            feeder.send(ctx, TwoSinkMsg::Tick(30));
            ctx.exit_on_quiescence();
        })
    };
    let err = run(sim).expect_err("a loss under --on-error abort ends the job");
    assert!(
        matches!(err, RuntimeError::LostWithPe { pe: 3, failed: 1, messages } if messages >= 1),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("PE 3") && text.contains("failed PE 1") && text.contains("--on-error drop"),
        "{text}"
    );
    let report = run(sim_drop).expect("under --on-error drop the job goes on");
    assert!(stats(&report).dropped >= 20, "{:?}", stats(&report));
}

/// Sends PE 1 `left` more batches of 100 items, one batch per handler.
struct Burst;

#[derive(Clone, Serialize, Deserialize)]
enum BurstMsg {
    Pump(u32),
    Item,
}

impl Chare for Burst {
    type Init = ();
    type Msg = BurstMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Burst
    }
    fn handle(&mut self, msg: BurstMsg, ctx: &mut Ctx) {
        let group = ctx.this_group::<Burst>().expect("a group member");
        match msg {
            BurstMsg::Pump(left) => {
                for _ in 0..100 {
                    group.send(ctx, 1, BurstMsg::Item);
                }
                if left > 0 {
                    group.send(ctx, ctx.my_pe(), BurstMsg::Pump(left - 1));
                }
            }
            BurstMsg::Item => ctx.work(Duration::from_micros(10)),
        }
    }
}

#[test]
fn quiescence_comes_when_credit_goes_to_a_dead_sender() {
    // PE 2 sends PE 1 5,000 items in 5 ms and dies at 6 ms; PE 1, 10 us per item,
    // handles most of them afterwards and returns credit to the dead PE for every
    // 1,024. Credit is not counted by quiescence and must not count where it is lost
    // (it once did, and the waves never agreed: the run never ended).
    let mut reg = Registry::new();
    reg.chare::<Burst>("Burst");
    reg.chare::<QuietWitness>("QuietWitness");
    let quiet: Entry<QuietWitness, ()> = reg.entry("QuietWitness::quiet", QuietMsg::Quiet);
    let args = SimArgs {
        kill: vec![KillSpec {
            pe: 2,
            at_ns: 6_000_000,
        }],
        ..SimArgs::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let run = Runtime::new(reg, sim(4, args)).run(move |ctx| {
            let group = ctx.create_group::<Burst>(());
            group.send(ctx, 2, BurstMsg::Pump(49));
            let witness = ctx.create_chare::<QuietWitness>((), 3);
            ctx.start_quiescence(Callback::chare(&witness, quiet));
        });
        let _ = tx.send(run);
    });
    let report = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the job ends")
        .expect("quiescence comes although PE 2 died");
    let quiet: Vec<(u32, u64)> = report.outputs("quiet_at_ns");
    assert_eq!(quiet.len(), 1, "quiescence reached the witness once");
    assert!(
        quiet[0].1 > 40_000_000,
        "{quiet:?}: after PE 1 handled the items"
    );
    // The 5,000 items and the group's creation.
    assert_eq!(
        report.per_pe[1].processed, 5001,
        "every item sent before the kill handled"
    );
}

// ---------------------------------------------------------------- stall and flags

struct Idler;

impl Chare for Idler {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Idler
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

#[test]
fn a_job_that_never_exits_is_reported_as_stalled_not_hung() {
    let mut reg = Registry::new();
    reg.chare::<Idler>("Idler");
    let err = Runtime::new(reg, sim(3, SimArgs::default()))
        .run(|ctx| {
            let c = ctx.create_chare::<Idler>((), 2);
            c.send(ctx, ());
        })
        .expect_err("no exit");
    assert!(matches!(err, RuntimeError::Stalled(_)), "{err:?}");
    assert!(err.to_string().contains("ctx.exit()"), "{err}");
}

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    chorus: Config,
}

#[test]
fn sim_flags_parse_and_wrong_ones_are_named() {
    let ok = Cli::try_parse_from([
        "x",
        "--layer",
        "sim",
        "--pes",
        "131072",
        "--sim-preset",
        "bgp",
        "--sim-alpha-us",
        "3",
        "--sim-kill",
        "7@1.5ms",
        "--sim-kill",
        "9@250ns",
        "--stats",
    ])
    .expect("valid");
    let c = ok.chorus;
    assert_eq!(c.layer, Layer::Sim);
    assert_eq!(c.sim.preset, Some(SimPreset::Bgp));
    assert_eq!(
        c.sim.kill,
        vec![
            KillSpec {
                pe: 7,
                at_ns: 1_500_000
            },
            KillSpec { pe: 9, at_ns: 250 }
        ]
    );
    assert_eq!(c.stats, Some(chorus_core::StatsFormat::Text));
    assert!(c.validate().is_ok());

    for (args, says) in [
        (vec!["x", "--sim-kill", "3"], "PE@TIME"),
        (vec!["x", "--sim-kill", "3@soon"], "not a time"),
        (vec!["x", "--sim-kill", "x@1us"], "not a PE number"),
        (vec!["x", "--sim-preset", "cray"], "--sim-preset"),
        (vec!["x", "--sim-alpha-us", "soon"], "0..=1000000"),
    ] {
        let err = Cli::try_parse_from(&args).expect_err("invalid");
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
    for (args, says) in [
        (
            vec!["x", "--layer", "sim", "--sim-kill", "4@1us"],
            "names PE 4",
        ),
        (vec!["x", "--sim-kill", "1@1us"], "needs --layer sim"),
        (vec!["x", "--pes", "100000"], "--layer sim"),
        (vec!["x", "--sim-alpha-us=-1"], "0..=1000000"),
        (vec!["x", "--sim-beta-ns-per-byte", "1e300"], "0..=1000000"),
        (
            vec!["x", "--layer", "sim", "--sim-kill", "0@1us"],
            "PE 0 runs main",
        ),
    ] {
        let c = Cli::try_parse_from(&args).expect("parses").chorus;
        let err = c.validate().expect_err("invalid").to_string();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_kill_after_the_job_has_ended_is_ignored() {
    let run = |kill: Vec<KillSpec>| {
        let args = SimArgs {
            kill,
            ..SimArgs::default()
        };
        Runtime::new(Registry::new(), sim(4, args))
            .run(|ctx| ctx.exit())
            .expect("the job exits")
    };
    let plain = run(Vec::new());
    let late = run(vec![KillSpec {
        pe: 1,
        at_ns: 1_000_000_000_000,
    }]);
    assert_eq!(
        stats(&late).pes_killed,
        0,
        "a kill after the end is no kill"
    );
    assert_eq!(
        stats(&late).makespan_us,
        stats(&plain).makespan_us,
        "a kill after the end does not move the makespan"
    );
}
