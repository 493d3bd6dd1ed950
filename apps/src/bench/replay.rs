//! Replay: a sim job whose delivery order depends on every hash map the runtime
//! iterates (array broadcasts, the location table of migrated elements), run with
//! `--sim-digest` so the digest of its deliveries can be compared between processes.
//!
//! Rounds of: a broadcast to an array of `per_pe` elements per PE; each element sends
//! `tokens` messages to elements drawn from `--seed`, and some elements migrate to
//! a drawn PE (so later messages are forwarded through the location table); a sum
//! reduction of the tokens received ends the round at the main chare.

use crate::bench::error::BenchError;
use crate::bench::report::Report;
use chorus_core::{
    mix64, ArrayMap, ArrayProxy, Callback, Chare, Config, Ctx, Entry, Layer, Migratable, Reducer,
    Registry, Runtime, SimStats,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The shape of one replay job.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct ReplaySpec {
    /// Array elements per PE.
    #[arg(long = "per-pe", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub per_pe: u32,
    /// Messages each element sends to drawn elements per round.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub tokens: u32,
    /// Broadcast rounds.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
}

/// The flags of `chorus-bench replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The job (on the sim layer only).
    #[command(flatten)]
    pub config: Config,
    /// The job's shape.
    #[command(flatten)]
    pub spec: ReplaySpec,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

impl ReplayArgs {
    /// Refuse a layer other than sim: the digest is the sim layer's, other layers'
    /// timing is real.
    pub fn check(&self) -> Result<(), String> {
        match self.config.layer {
            Layer::Sim => Ok(()),
            other => Err(format!(
                "replay runs on the sim layer only; add --layer sim (got --layer {})",
                other.name()
            )),
        }
    }
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
pub fn run(mut config: Config, spec: ReplaySpec) -> Result<ReplayResult, BenchError> {
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
    let stats = report.sim.clone().ok_or(BenchError::NotSimulated)?;
    Ok(ReplayResult {
        pes,
        digest: stats.delivery_digest.unwrap_or_default(),
        events: stats.delivered,
        tokens_received: report.output("tokens").unwrap_or_default(),
        stats,
    })
}

/// What `chorus-bench replay` measured, with the job it ran.
#[derive(Debug, Clone)]
pub struct ReplayReport {
    /// The job's seed.
    pub seed: u64,
    /// The job's shape.
    pub spec: ReplaySpec,
    /// The run's figures.
    pub result: ReplayResult,
}

/// Run the replay job `args` describes.
pub fn measure(args: &ReplayArgs) -> Result<ReplayReport, String> {
    let result = run(args.config.clone(), args.spec).map_err(|e| e.to_string())?;
    Ok(ReplayReport {
        seed: args.config.seed,
        spec: args.spec,
        result,
    })
}

impl Report for ReplayReport {
    fn json(&self) -> String {
        let r = &self.result;
        json!({
            "digest": format!("{:016x}", r.digest),
            "events": r.events,
            "pes": r.pes,
            "seed": self.seed,
            "per_pe": self.spec.per_pe,
            "tokens": self.spec.tokens,
            "rounds": self.spec.rounds,
            "tokens_received": r.tokens_received,
            "sim_events": r.stats.events,
            "event_log_digest": format!("{:016x}", r.stats.digest),
            "messages": r.stats.messages,
            "makespan_us": r.stats.makespan_us,
            "wall_s": r.stats.wall_s,
        })
        .to_string()
    }

    fn table(&self) -> String {
        let r = &self.result;
        format!(
            "{} PEs, seed {}: {} deliveries, delivery digest {:016x}\n{}\n",
            r.pes,
            self.seed,
            r.events,
            r.digest,
            r.stats.to_text()
        )
    }
}
