//! Quiescence detection fires exactly once per request, only after every message of
//! a cascade has been processed.

use crate::{config, pes, pes_each};
use chorus_core::{
    Callback, Chare, ChareProxy, Ctx, Entry, ErrorPolicy, GroupProxy, Layer, Registry, Runtime,
};
use serde::{Deserialize, Serialize};

const FANOUT: u32 = 3;
const DEPTH: u32 = 7;

#[derive(Clone, Serialize, Deserialize)]
struct CascadeInit {
    tally: ChareProxy<Tally>,
    quiet: Entry<Tally, ()>,
    last: Entry<Tally, ()>,
}

/// Each message spawns FANOUT more on other PEs until DEPTH is reached.
struct Node {
    init: CascadeInit,
    processed: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum NodeMsg {
    Spread { depth: u32 },
    Count,
}

impl Chare for Node {
    type Init = CascadeInit;
    type Msg = NodeMsg;
    fn create(init: CascadeInit, _: &mut Ctx) -> Self {
        Node { init, processed: 0 }
    }
    fn handle(&mut self, msg: NodeMsg, ctx: &mut Ctx) {
        let group: GroupProxy<Node> = ctx.this_group().expect("group member");
        match msg {
            NodeMsg::Spread { depth } => {
                self.processed += 1;
                if depth == 3 {
                    // Ask for quiescence in the middle of the cascade, from many PEs.
                    ctx.start_quiescence(Callback::chare(&self.init.tally, self.init.quiet));
                    self.init.tally.send(ctx, TallyMsg::Requested);
                }
                if depth < DEPTH {
                    let n = ctx.num_pes() as u32;
                    for i in 0..FANOUT {
                        let to = (ctx.my_pe() * 7 + i * 5 + depth) % n;
                        group.send(ctx, to, NodeMsg::Spread { depth: depth + 1 });
                    }
                }
            }
            NodeMsg::Count => self
                .init
                .tally
                .send(ctx, TallyMsg::Processed(self.processed)),
        }
    }
}

/// Counts quiescence notices and cascade messages.
struct Tally {
    group: Option<GroupProxy<Node>>,
    last: Option<Entry<Tally, ()>>,
    requested: u64,
    notices: u64,
    processed: u64,
    reports: usize,
}

#[derive(Clone, Serialize, Deserialize)]
enum TallyMsg {
    Start(GroupProxy<Node>, Entry<Tally, ()>),
    Requested,
    Last(()),
    Quiet(()),
    Processed(u64),
}

impl Chare for Tally {
    type Init = ();
    type Msg = TallyMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Tally {
            group: None,
            last: None,
            requested: 0,
            notices: 0,
            processed: 0,
            reports: 0,
        }
    }
    fn handle(&mut self, msg: TallyMsg, ctx: &mut Ctx) {
        match msg {
            TallyMsg::Start(g, last) => {
                self.group = Some(g);
                self.last = Some(last);
            }
            TallyMsg::Requested => self.requested += 1,
            TallyMsg::Quiet(()) => {
                self.notices += 1;
                if self.notices == 1 {
                    if let Some(g) = self.group {
                        g.broadcast(ctx, NodeMsg::Count);
                    }
                }
            }
            TallyMsg::Processed(n) => {
                self.processed += n;
                self.reports += 1;
                if self.reports == ctx.num_pes() {
                    // One more detection: any duplicate notice would arrive before it.
                    let me: ChareProxy<Tally> = ctx.this_chare().expect("singleton");
                    let last = self.last.expect("started");
                    ctx.start_quiescence(Callback::chare(&me, last));
                }
            }
            TallyMsg::Last(()) => {
                ctx.publish("processed", &self.processed);
                ctx.publish("requested", &self.requested);
                ctx.publish("notices", &self.notices);
                ctx.exit();
            }
        }
    }
}

/// Quiescence fires once per request, after the whole cascade (1, 4 and 9 PEs; on mpi
/// every rank).
pub fn quiescence_fires_once_per_request_after_the_whole_cascade(layer: Layer) {
    for pes in pes_each(layer, &[1, 4, 9]) {
        let mut reg = Registry::new();
        reg.chare::<Node>("Node").chare::<Tally>("Tally");
        let quiet = reg.entry::<Tally, ()>("Tally::quiet", TallyMsg::Quiet);
        let last = reg.entry::<Tally, ()>("Tally::last", TallyMsg::Last);
        let report = Runtime::new(reg, config(layer, pes, ErrorPolicy::Abort))
            .run(move |ctx| {
                let tally = ctx.create_chare::<Tally>((), 0);
                let group = ctx.create_group::<Node>(CascadeInit { tally, quiet, last });
                tally.send(ctx, TallyMsg::Start(group, last));
                group.send(ctx, 0, NodeMsg::Spread { depth: 0 });
            })
            .expect("cascade run");
        let expected: u64 = (0..=DEPTH).map(|d| u64::from(FANOUT).pow(d)).sum();
        assert_eq!(
            report.output::<u64>("processed"),
            Some(expected),
            "{pes} PEs"
        );
        let requested = report.output::<u64>("requested").expect("requested");
        assert_eq!(requested, u64::from(FANOUT).pow(3), "{pes} PEs");
        assert_eq!(
            report.output::<u64>("notices"),
            Some(requested),
            "{pes} PEs: one notice per request"
        );
        assert!(report.errors().is_empty());
    }
}

/// Counts what it receives and publishes the count when it reaches the target.
struct Counter {
    target: u64,
    got: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum CounterMsg {
    Flood(Vec<ChareProxy<Counter>>, u64),
    Item(u64),
}

impl Chare for Counter {
    type Init = u64;
    type Msg = CounterMsg;
    fn create(target: u64, _: &mut Ctx) -> Self {
        Counter { target, got: 0 }
    }
    fn handle(&mut self, msg: CounterMsg, ctx: &mut Ctx) {
        match msg {
            CounterMsg::Flood(sinks, n) => {
                // Consecutive sends to one sink travel as one run.
                for sink in &sinks {
                    for i in 0..n {
                        sink.send(ctx, CounterMsg::Item(i));
                    }
                }
            }
            CounterMsg::Item(_) => {
                self.got += 1;
                if self.got == self.target {
                    ctx.publish("complete", &ctx.my_pe());
                }
            }
        }
    }
}

/// Runs of messages are counted one by one by quiescence detection.
pub fn runs_of_messages_are_counted_one_by_one_by_quiescence_detection(layer: Layer) {
    let p = pes(layer, 3);
    let mut reg = Registry::new();
    reg.chare::<Counter>("Counter");
    let n = 20_000;
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let sinks: Vec<ChareProxy<Counter>> = (0..3)
                .map(|i| ctx.create_chare::<Counter>(n, i % p))
                .collect();
            let source = ctx.create_chare::<Counter>(0, 1 % p);
            source.send(ctx, CounterMsg::Flood(sinks, n));
            ctx.exit_on_quiescence();
        })
        .expect("run");
    let mut complete: Vec<u32> = report
        .outputs::<u32>("complete")
        .into_iter()
        .map(|(_, pe)| pe)
        .collect();
    complete.sort_unstable();
    // Sink i lives on PE i mod P.
    let mut want: Vec<u32> = (0..3).map(|i| i % p).collect();
    want.sort_unstable();
    assert_eq!(
        complete, want,
        "every sink got all {n} messages before quiescence"
    );
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "quiescence_fires_once_per_request_after_the_whole_cascade",
        quiescence_fires_once_per_request_after_the_whole_cascade,
    ),
    (
        "runs_of_messages_are_counted_one_by_one_by_quiescence_detection",
        runs_of_messages_are_counted_one_by_one_by_quiescence_detection,
    ),
];
