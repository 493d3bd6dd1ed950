//! Replay: a sim job whose delivery order depends on every hash map the runtime
//! iterates (array broadcasts, the location table of migrated elements), run with
//! `--sim-digest` so the digest of its deliveries can be compared between processes.
//!
//! Rounds of: a broadcast to an array of `per_pe` elements per PE; each element sends
//! `tokens` messages to elements drawn from `--seed`, and some elements migrate to
//! a drawn PE (so later messages are forwarded through the location table); a sum
//! reduction of the tokens received ends the round at the main chare.

use chorus_core::{
    mix64, ArrayMap, ArrayProxy, Callback, Chare, Config, Ctx, Entry, Layer, Migratable, Reducer,
    Registry, Runtime, RuntimeError, SimStats,
};
use serde::{Deserialize, Serialize};

/// The shape of one replay job.
#[derive(Debug, Clone, Copy)]
pub struct ReplaySpec {
    /// Array elements per PE.
    pub per_pe: u32,
    /// Messages each element sends per round.
    pub tokens: u32,
    /// Broadcast rounds.
    pub rounds: u32,
}

/// What one replay run measured.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    /// PEs simulated.
    pub pes: u32,
    /// Digest of every delivery (virtual time, PE, chare, payload bytes).
    pub digest: u64,
    /// Deliveries in the digest.
    pub events: u64,
    /// The sum of every round's reduction (tokens received, counted once each).
    pub tokens_received: u64,
    /// The simulator's statistics.
    pub stats: SimStats,
}

/// One element of the replayed array.
#[derive(Serialize, Deserialize)]
struct Cell {
    spec: Spec,
    received: u64,
}

/// What every element is built from (serde, so it travels with a migration).
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Spec {
    n: u64,
    tokens: u32,
}

#[derive(Clone, Serialize, Deserialize)]
enum CellMsg {
    Round {
        round: u32,
        done: Callback,
    },
    /// A drawn number: only its bytes matter, to the digest.
    Token(u64),
}

impl Chare for Cell {
    type Init = Spec;
    type Msg = CellMsg;
    fn create(spec: Spec, _: &mut Ctx) -> Self {
        Cell { spec, received: 0 }
    }
    fn handle(&mut self, msg: CellMsg, ctx: &mut Ctx) {
        match msg {
            CellMsg::Round { round, done } => {
                let me: usize = ctx.this_index().unwrap_or_default();
                let array: Option<ArrayProxy<Cell, usize>> = ctx.this_array();
                let Some(array) = array else { return };
                let base = mix64(ctx.seed() ^ mix64(me as u64) ^ u64::from(round) << 40);
                for t in 0..u64::from(self.spec.tokens) {
                    let draw = mix64(base ^ t);
                    let to = (draw % self.spec.n) as usize;
                    array.send(ctx, &to, CellMsg::Token(draw >> 48));
                }
                ctx.contribute(std::mem::take(&mut self.received), Reducer::Sum, done);
                // One element in eight moves each round, so news and forwarding
                // reach the location table of most PEs.
                if base & 7 == 0 {
                    let to = (mix64(base) % ctx.num_pes() as u64) as u32;
                    if to != ctx.my_pe() {
                        if let Err(e) = ctx.migrate_me(to) {
                            ctx.fail("Cell", e);
                        }
                    }
                }
            }
            CellMsg::Token(_) => self.received += 1,
        }
    }
}

impl Migratable for Cell {}

/// Starts the rounds and collects their reductions.
struct Main {
    array: ArrayProxy<Cell, usize>,
    me: Entry<Main, u64>,
    rounds: u32,
    round: u32,
    total: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Start,
    RoundDone(u64),
}

impl Chare for Main {
    type Init = (ArrayProxy<Cell, usize>, Entry<Main, u64>, u32);
    type Msg = MainMsg;
    fn create((array, me, rounds): Self::Init, _: &mut Ctx) -> Self {
        Main {
            array,
            me,
            rounds,
            round: 0,
            total: 0,
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        if let MainMsg::RoundDone(sum) = msg {
            self.total += sum;
            self.round += 1;
        }
        if self.round < self.rounds {
            let Some(me) = ctx.this_chare::<Main>() else {
                return;
            };
            let done = Callback::chare(&me, self.me);
            let round = self.round;
            self.array.broadcast(ctx, CellMsg::Round { round, done });
        } else {
            ctx.publish("tokens", &self.total);
            // Tokens of the last round are still in flight: end when all are in.
            ctx.exit_on_quiescence();
        }
    }
}

/// Run the replay job on `config.pes` simulated PEs with `--sim-digest` on.
pub fn run(mut config: Config, spec: ReplaySpec) -> Result<ReplayResult, RuntimeError> {
    config.layer = Layer::Sim;
    config.sim.digest = true;
    let pes = config.pes;
    let n = u64::from(pes) * u64::from(spec.per_pe);
    let mut reg = Registry::new();
    reg.migratable::<Cell>("Cell").chare::<Main>("Main");
    let done = reg.entry::<Main, u64>("Main::round_done", MainMsg::RoundDone);
    let cell = Spec {
        n,
        tokens: spec.tokens,
    };
    let rounds = spec.rounds;
    let report = Runtime::new(reg, config).run(move |ctx| {
        let array = ctx.create_array_1d::<Cell>(n as usize, cell, ArrayMap::Block);
        let main = ctx.create_chare::<Main>((array, done, rounds), 0);
        main.send(ctx, MainMsg::Start);
    })?;
    let stats = report
        .sim
        .clone()
        .ok_or_else(|| RuntimeError::Invalid("a sim run without sim statistics".into()))?;
    Ok(ReplayResult {
        pes,
        digest: stats.delivery_digest.unwrap_or_default(),
        events: stats.delivered,
        tokens_received: report.output("tokens").unwrap_or_default(),
        stats,
    })
}
