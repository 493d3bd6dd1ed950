//! The exactly-once ledger: tokens hop between random array elements, every message
//! with an id of its own, and every chare counts what it sent and what it was
//! delivered (ids kept, to find one delivered twice), while the run's report counts
//! what was dropped and why. Then delivered + dropped == sent, no id twice, and the
//! delivered ids are the sent ones (a hash of the id set on both sides).
//!
//! Under `--fault-corrupt-every` (threads, mpi) a damaged message ends its token's
//! walk; the end-of-run reports travel as counted messages too, so the identity
//! covers them, and the driver asks again until every element has reported.

use crate::{config, pes, splitmix64};
use chorus_core::{
    ArrayMap, ArrayProxy, Callback, Chare, ChareProxy, Ctx, Entry, ErrorPolicy, Layer, Registry,
    RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How much traffic a ledger run makes: `elements * tokens * hops` token messages.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Load {
    /// Array elements the tokens hop between.
    pub elements: u64,
    /// Tokens each element starts.
    pub tokens: u64,
    /// Messages each token's walk is made of.
    pub hops: u64,
}

impl Load {
    /// Token messages of a run without faults.
    pub fn messages(self) -> u64 {
        self.elements * self.tokens * self.hops
    }
}

/// Ids above this are control messages (reports and acks), not token hops.
const CONTROL: u64 = 1 << 62;

/// One chare's account: what it sent, what it was delivered.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Account {
    sent: u64,
    /// Wrapping sum of `splitmix64`-mixed ids sent: equal sums with equal counts and
    /// no id twice mean equal sets, but for a 2^-64 chance.
    sent_hash: u64,
    delivered: Vec<u64>,
}

impl Account {
    fn send(&mut self, id: u64) {
        self.sent += 1;
        self.sent_hash = self.sent_hash.wrapping_add(mixed(id));
    }

    /// (sent, delivered, delivered twice, sent hash, delivered hash).
    fn row(&self) -> [u64; 5] {
        let mut ids = self.delivered.clone();
        ids.sort_unstable();
        let twice = ids.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        let hash = ids.iter().fold(0u64, |h, &id| h.wrapping_add(mixed(id)));
        [self.sent, ids.len() as u64, twice, self.sent_hash, hash]
    }
}

fn mixed(id: u64) -> u64 {
    let mut s = id;
    splitmix64(&mut s)
}

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    load: Load,
    driver: ChareProxy<Driver>,
}

struct Walker {
    init: Init,
    account: Account,
    rng: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum WalkerMsg {
    Token { token: u64, hop: u64 },
    Report { id: u64 },
}

impl Walker {
    fn index(ctx: &Ctx) -> u64 {
        ctx.this_index::<usize>()
            .expect("walkers are array elements") as u64
    }

    /// Send hop `hop` of `token` to a random element.
    fn hop(&mut self, ctx: &mut Ctx, token: u64, hop: u64) {
        let me: ArrayProxy<Walker, usize> = ctx.this_array().expect("array element");
        let to = (splitmix64(&mut self.rng) % self.init.load.elements) as usize;
        self.account.send(token * self.init.load.hops + hop);
        me.send(ctx, &to, WalkerMsg::Token { token, hop });
    }
}

impl Chare for Walker {
    type Init = Init;
    type Msg = WalkerMsg;

    fn create(init: Init, ctx: &mut Ctx) -> Self {
        let index = Walker::index(ctx);
        let tokens = init.load.tokens;
        let mut walker = Walker {
            init,
            account: Account::default(),
            rng: index.wrapping_mul(7919) + 1,
        };
        // Started at creation, not by a broadcast: a damaged broadcast would be a
        // drop of a message no chare counted as sent.
        for t in 0..tokens {
            walker.hop(ctx, index * tokens + t, 0);
        }
        walker
    }

    fn handle(&mut self, msg: WalkerMsg, ctx: &mut Ctx) {
        let index = Walker::index(ctx);
        match msg {
            WalkerMsg::Token { token, hop } => {
                self.account
                    .delivered
                    .push(token * self.init.load.hops + hop);
                if hop + 1 < self.init.load.hops {
                    self.hop(ctx, token, hop + 1);
                }
            }
            WalkerMsg::Report { id } => {
                self.account.delivered.push(id);
                // The ack's id: this element's, per report it answers.
                let ack = CONTROL | (index << 20) | (id & 0xf_ffff);
                self.account.send(ack);
                // Published before the ack leaves, so the row counts it; a later
                // report replaces this row (the test keeps each element's last).
                ctx.publish("ledger", &(index, self.account.row()));
                self.init
                    .driver
                    .send(ctx, DriverMsg::Reported((index, ack)));
            }
        }
    }
}

struct Driver {
    walkers: Option<ArrayProxy<Walker, usize>>,
    elements: u64,
    quiet: Entry<Driver, ()>,
    reported: BTreeSet<u64>,
    account: Account,
    rounds: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum DriverMsg {
    Walkers(ArrayProxy<Walker, usize>),
    Quiet(()),
    Reported((u64, u64)),
}

/// Rounds of asking for reports before the test gives up (each loses a report or an
/// ack with a chance of at most one in `--fault-corrupt-every`).
const MAX_ROUNDS: u64 = 64;

impl Chare for Driver {
    type Init = (u64, Entry<Driver, ()>);
    type Msg = DriverMsg;

    fn create((elements, quiet): (u64, Entry<Driver, ()>), _: &mut Ctx) -> Self {
        Driver {
            walkers: None,
            elements,
            quiet,
            reported: BTreeSet::new(),
            account: Account::default(),
            rounds: 0,
        }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        let me: ChareProxy<Driver> = ctx.this_chare().expect("singleton");
        match msg {
            DriverMsg::Walkers(w) => self.walkers = Some(w),
            DriverMsg::Reported((index, ack)) => {
                self.account.delivered.push(ack);
                self.reported.insert(index);
            }
            DriverMsg::Quiet(()) => {
                let walkers = self.walkers.expect("told before quiescence");
                let missing: Vec<u64> = (0..self.elements)
                    .filter(|i| !self.reported.contains(i))
                    .collect();
                if missing.is_empty() || self.rounds == MAX_ROUNDS {
                    ctx.publish("driver", &self.account.row());
                    ctx.publish("rounds", &self.rounds);
                    ctx.exit();
                    return;
                }
                self.rounds += 1;
                for i in missing {
                    let id = CONTROL | (1 << 61) | (self.rounds << 40) | i;
                    self.account.send(id);
                    walkers.send(ctx, &(i as usize), WalkerMsg::Report { id });
                }
                ctx.start_quiescence(Callback::chare(&me, self.quiet));
            }
        }
    }
}

/// What a ledger run counted, summed over every chare and the report's errors.
#[derive(Debug, PartialEq, Eq)]
pub struct Ledger {
    /// Messages sent with an id (token hops, reports, acks).
    pub sent: u64,
    /// Of those, delivered.
    pub delivered: u64,
    /// Ids delivered more than once.
    pub twice: u64,
    /// Messages dropped on the wire (the report's count, by weight: one damaged
    /// run of messages is one error).
    pub dropped: u64,
    /// The errors those drops were reported with, by reason.
    pub reasons: BTreeMap<String, u64>,
    /// Whether the delivered ids hash as the sent ones do.
    pub same_ids: bool,
    /// Elements that reported.
    pub reported: u64,
}

/// Run `load` on `p` PEs of `layer`, every `corrupt_every`th message damaged if set
/// (under the drop policy), and return the ledger.
pub fn run(layer: Layer, p: u32, load: Load, corrupt_every: Option<u64>) -> Ledger {
    let mut reg = Registry::new();
    reg.chare::<Walker>("LedgerWalker")
        .chare::<Driver>("LedgerDriver");
    let quiet = reg.entry::<Driver, ()>("LedgerDriver::quiet", DriverMsg::Quiet);
    let policy = if corrupt_every.is_some() {
        ErrorPolicy::Drop
    } else {
        ErrorPolicy::Abort
    };
    let mut cfg = config(layer, p, policy);
    cfg.fault_corrupt_every = corrupt_every;
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let driver = ctx.create_chare::<Driver>((load.elements, quiet), 0);
            let init = Init { load, driver };
            let walkers =
                ctx.create_array_1d::<Walker>(load.elements as usize, init, ArrayMap::RoundRobin);
            driver.send(ctx, DriverMsg::Walkers(walkers));
            ctx.start_quiescence(Callback::chare(&driver, quiet));
        })
        .expect("the ledger run ends");
    tally(&report)
}

fn tally(report: &RunReport) -> Ledger {
    // Each element's last row: a repeated report replaces the one before.
    let mut rows: BTreeMap<u64, [u64; 5]> = BTreeMap::new();
    for (_, (index, row)) in report.outputs::<(u64, [u64; 5])>("ledger") {
        let keep = rows.get(&index).is_none_or(|old| row[1] >= old[1]);
        if keep {
            rows.insert(index, row);
        }
    }
    let driver = report
        .output::<[u64; 5]>("driver")
        .expect("the driver's row");
    let all = rows.values().chain(std::iter::once(&driver));
    let (mut sent, mut delivered, mut twice, mut sent_hash, mut hash) = (0, 0, 0, 0u64, 0u64);
    for r in all {
        sent += r[0];
        delivered += r[1];
        twice += r[2];
        sent_hash = sent_hash.wrapping_add(r[3]);
        hash = hash.wrapping_add(r[4]);
    }
    let mut reasons = BTreeMap::new();
    for e in report.errors() {
        *reasons.entry(reason(e)).or_insert(0) += 1;
    }
    let dropped: u64 = report.per_pe.iter().map(|p| p.dropped_on_wire).sum();
    Ledger {
        sent,
        delivered,
        twice,
        // Nothing dropped: the sets must be equal; with drops only the counts can
        // be compared (a damaged message's id cannot be read).
        same_ids: dropped > 0 || sent_hash == hash,
        dropped,
        reasons,
        reported: rows.len() as u64,
    }
}

/// The kind of an error, as the ledger files drops by.
fn reason(e: &RuntimeError) -> String {
    let text = e.to_string();
    if text.contains("decode") {
        "damaged on the wire (decode error)".into()
    } else {
        text
    }
}

/// Check the ledger's identities, naming the run in the message.
pub fn assert_exact(ledger: &Ledger, load: Load, what: &str) {
    assert_eq!(ledger.twice, 0, "{what}: an id delivered twice: {ledger:?}");
    assert_eq!(
        ledger.delivered + ledger.dropped,
        ledger.sent,
        "{what}: delivered + dropped != sent: {ledger:?}"
    );
    assert!(
        ledger.same_ids,
        "{what}: delivered ids differ from sent: {ledger:?}"
    );
    assert_eq!(ledger.reported, load.elements, "{what}: {ledger:?}");
    // Every drop has its reason, and nothing else went wrong.
    assert_eq!(
        ledger.reasons.is_empty(),
        ledger.dropped == 0,
        "{what}: {ledger:?}"
    );
    if ledger.dropped == 0 {
        // Token hops, a report and an ack per element.
        assert_eq!(ledger.sent, load.messages() + 2 * load.elements, "{what}");
    }
}

/// 10^6 token messages between random elements on 8 PEs (on mpi: every rank), each
/// accounted for: delivered + dropped == sent, no id twice, the same ids.
pub fn a_million_messages_between_random_chares_on_8_pes_are_all_accounted_for(layer: Layer) {
    let load = Load {
        elements: 80,
        tokens: 5,
        hops: 2500,
    };
    assert_eq!(load.messages(), 1_000_000);
    let p = pes(layer, 8);
    let ledger = run(layer, p, load, None);
    assert_exact(&ledger, load, &format!("{layer:?}"));
    assert_eq!(ledger.dropped, 0, "{ledger:?}");
}

/// With every 997th message between PEs damaged on the wire, the ledger still
/// balances: every loss is a drop with its reason, nothing arrives twice.
pub fn the_ledger_balances_when_messages_are_damaged_on_the_wire(layer: Layer) {
    if layer == Layer::Sim {
        // The sim layer has no wire to damage (faults.rs checks it says so).
        return;
    }
    let load = Load {
        elements: 32,
        tokens: 4,
        hops: 500,
    };
    let p = pes(layer, 4);
    let ledger = run(layer, p, load, Some(997));
    assert_exact(&ledger, load, &format!("{layer:?}, damaged"));
    assert!(ledger.dropped > 0, "{ledger:?}");
    assert_eq!(ledger.reasons.len(), 1, "one reason: {ledger:?}");
    assert!(
        ledger.reasons.values().sum::<u64>() <= ledger.dropped,
        "an error covers one message or a run of them: {ledger:?}"
    );
}

/// The README's figure: 10^7 token messages, on 8 threads PEs, 4096 sim PEs or every
/// rank of an MPI job, each accounted for (heavy: not in `TESTS`; run by
/// `cargo test --release -p chorus-tests --test messaging -- --ignored`, and on mpi
/// by `mpirun -n 2 chorus-suite ten_million_messages_are_each_delivered_exactly_once`).
pub fn ten_million_messages_are_each_delivered_exactly_once(layer: Layer) {
    let (p, load) = match layer {
        Layer::Sim => (
            4096,
            Load {
                elements: 8192,
                tokens: 10,
                hops: 122,
            },
        ),
        Layer::Threads | Layer::Mpi => (
            pes(layer, 8),
            Load {
                elements: 400,
                tokens: 10,
                hops: 2500,
            },
        ),
    };
    let start = std::time::Instant::now();
    let l = run(layer, p, load, None);
    assert_exact(&l, load, &format!("{layer:?} x {p}"));
    assert!(l.sent >= 10_000_000, "{l:?}");
    eprintln!(
        "{layer:?} on {p} PEs: {} sent, {} delivered, {} dropped, {} twice, in {:.1} s",
        l.sent,
        l.delivered,
        l.dropped,
        l.twice,
        start.elapsed().as_secs_f64()
    );
}

/// Tests too heavy for every run: `chorus-suite` finds them by name only.
pub const HEAVY: &[super::Test] = &[(
    "ten_million_messages_are_each_delivered_exactly_once",
    ten_million_messages_are_each_delivered_exactly_once,
)];

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "a_million_messages_between_random_chares_on_8_pes_are_all_accounted_for",
        a_million_messages_between_random_chares_on_8_pes_are_all_accounted_for,
    ),
    (
        "the_ledger_balances_when_messages_are_damaged_on_the_wire",
        the_ledger_balances_when_messages_are_damaged_on_the_wire,
    ),
];
