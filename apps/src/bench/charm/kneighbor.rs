//! `chorus-bench charm-kneighbor`: Charm++'s `benchmarks/charm++/kNeighbor`. An
//! array of `--elements` blocks (block-mapped) each exchanges a message of
//! `--msg-size` bytes with its 3 neighbours on either side (wrapping round) and
//! waits for the 6 replies, 100 times per step; the main chare starts every step
//! and times it. Prints the original's two lines (lowest, median and highest step
//! time, and the average of the fastest up to 100 steps, per exchange). Checks that
//! every block received every request and reply: a reduction of the counts.

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{ArrayMap, ArrayProxy, Bytes, Callback, Chare, ChareProxy, Config, Ctx, Entry};
use chorus_core::{Reducer, Registry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Neighbours on each side (the original's STRIDEK).
pub const STRIDE_K: usize = 3;
/// Exchanges per step (the original's CALCPERSTEP).
pub const CALC_PER_STEP: u32 = 100;

/// The flags of `chorus-bench charm-kneighbor` (the original's `<#elements>
/// <#iterations> <msg size>`; its Makefile's test runs 5 10 64).
#[derive(Debug, Clone, clap::Args)]
pub struct KNeighborArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi build).
    #[command(flatten)]
    pub config: Config,
    /// Array elements (raised to the PE count, as the original does).
    #[arg(long, default_value_t = 5)]
    pub elements: usize,
    /// Steps, each of 100 exchanges.
    #[arg(long, default_value_t = 10)]
    pub steps: usize,
    /// Bytes per message (rounded down to whole 4-byte ints, as the original's).
    #[arg(long, default_value_t = 64)]
    pub msg_size: usize,
    /// Print one JSON object instead of the original's lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The step times measured, in microseconds per exchange.
#[derive(Debug, Clone, Serialize)]
pub struct KNeighborReport {
    /// Bytes per message.
    pub msg_size: usize,
    /// Elements in the array.
    pub elements: usize,
    /// The fastest step.
    pub lowest_us: f64,
    /// The median step.
    pub median_us: f64,
    /// The slowest step.
    pub highest_us: f64,
    /// The mean of the fastest min(100, steps - 1) steps (the original's figure).
    pub average_us: f64,
    /// Requests and replies received by every block, checked against the count sent.
    pub messages: u64,
}

/// The element indices block `me` of `n` exchanges with (the original's wrap-round
/// list: 3 below, then 3 above; repeats and itself when n is small).
pub fn neighbours(me: usize, n: usize) -> Vec<usize> {
    let below = (1..=STRIDE_K).rev().map(|d| (me + n * STRIDE_K - d) % n);
    let above = (1..=STRIDE_K).map(|d| (me + d) % n);
    below.chain(above).collect()
}

/// One block of the array.
struct Block {
    n: usize,
    main: ChareProxy<Main>,
    counted: Entry<Main, u64>,
    size: usize,
    received: u64,
    replies: usize,
    exchanges: u32,
    start: f64,
}

#[derive(Clone, Serialize, Deserialize)]
enum BlockMsg {
    /// Start a step of 100 exchanges with messages of `size` bytes.
    Comm { size: usize },
    /// A neighbour's request: reply to block `from` as its neighbour `nid`.
    Request { from: usize, nid: u32, data: Bytes },
    /// A neighbour's reply.
    Reply { data: Bytes },
    /// Contribute the count of requests and replies received.
    Count,
}

impl Block {
    fn exchange(&mut self, ctx: &mut Ctx) {
        let (Some(arr), Some(me)) = (ctx.this_array::<Block, usize>(), ctx.this_index_1d()) else {
            return;
        };
        self.replies = 0;
        let data = Bytes::from(vec![0u8; self.size / 4 * 4]);
        for (nid, to) in neighbours(me, self.n).into_iter().enumerate() {
            let msg = BlockMsg::Request {
                from: me,
                nid: nid as u32,
                data: data.clone(),
            };
            arr.send(ctx, &to, msg);
        }
    }
}

impl Chare for Block {
    /// Elements, the main chare and its entry taking the count.
    type Init = (usize, ChareProxy<Main>, Entry<Main, u64>);
    type Msg = BlockMsg;
    fn create((n, main, counted): Self::Init, _: &mut Ctx) -> Self {
        Block {
            n,
            main,
            counted,
            size: 0,
            received: 0,
            replies: 0,
            exchanges: 0,
            start: 0.0,
        }
    }
    fn handle(&mut self, msg: BlockMsg, ctx: &mut Ctx) {
        match msg {
            BlockMsg::Comm { size } => {
                self.size = size;
                self.exchanges = 0;
                self.start = ctx.now();
                self.exchange(ctx);
            }
            BlockMsg::Request { from, data, .. } => {
                self.received += 1;
                if let Some(arr) = ctx.this_array::<Block, usize>() {
                    arr.send(ctx, &from, BlockMsg::Reply { data });
                }
            }
            BlockMsg::Reply { .. } => {
                self.received += 1;
                self.replies += 1;
                if self.replies < 2 * STRIDE_K {
                    return;
                }
                self.exchanges += 1;
                if self.exchanges < CALC_PER_STEP {
                    return self.exchange(ctx);
                }
                let took = ctx.now() - self.start;
                self.main.send(ctx, MainMsg::StepDone(took));
            }
            BlockMsg::Count => {
                let cb = Callback::chare(&self.main, self.counted);
                ctx.contribute(self.received, Reducer::Sum, cb);
            }
        }
    }
}

/// Starts every step, times it, and checks the count at the end.
struct Main {
    n: usize,
    steps: usize,
    size: usize,
    counted: Entry<Main, u64>,
    array: Option<ArrayProxy<Block, usize>>,
    step: usize,
    arrived: usize,
    step_start: f64,
    times: Vec<f64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Go,
    /// A block finished its step's exchanges in this many seconds.
    StepDone(f64),
    /// The array's total of requests and replies received.
    Counted(u64),
}

impl Main {
    fn begin_step(&mut self, ctx: &mut Ctx) {
        let Some(arr) = self.array else { return };
        if self.step == self.steps {
            return arr.broadcast(ctx, BlockMsg::Count);
        }
        self.arrived = 0;
        self.step_start = ctx.now();
        for i in 0..self.n {
            arr.send(ctx, &i, BlockMsg::Comm { size: self.size });
        }
    }
}

impl Chare for Main {
    /// Elements, steps, message bytes, and this chare's entry for the count.
    type Init = (usize, usize, usize, Entry<Main, u64>);
    type Msg = MainMsg;
    fn create((n, steps, size, counted): Self::Init, _: &mut Ctx) -> Self {
        Main {
            n,
            steps,
            size,
            counted,
            array: None,
            step: 0,
            arrived: 0,
            step_start: 0.0,
            times: Vec::with_capacity(steps),
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Go => {
                let Some(me) = ctx.this_chare::<Main>() else {
                    return;
                };
                self.n = self.n.max(ctx.num_pes());
                ctx.publish("elements", &self.n);
                let init = (self.n, me, self.counted);
                self.array = Some(ctx.create_array_1d::<Block>(self.n, init, ArrayMap::Block));
                self.begin_step(ctx);
            }
            MainMsg::StepDone(_) => {
                self.arrived += 1;
                if self.arrived == self.n {
                    let per_exchange = (ctx.now() - self.step_start) / f64::from(CALC_PER_STEP);
                    self.times.push(per_exchange * 1e6);
                    self.step += 1;
                    self.begin_step(ctx);
                }
            }
            MainMsg::Counted(total) => {
                ctx.publish("times_us", &self.times);
                ctx.publish("messages", &total);
                ctx.exit();
            }
        }
    }
}

/// The most array elements a run creates (the original makes 10 per PE).
const MAX_ELEMENTS: usize = 1 << 20;

/// The most message bytes the elements hold at once: 4 GiB.
const MAX_HELD_BYTES: usize = 1 << 32;

/// The parameters the original refuses too, and sizes beyond memory.
fn validate(elements: usize, steps: usize, msg_size: usize) -> Result<(), CharmError> {
    if steps < 2 || elements == 0 {
        return Err(CharmError::Usage {
            bench: "charm-kneighbor",
            what: "give --steps of at least 2 and --elements above 0".into(),
        });
    }
    const BENCH: &str = "charm-kneighbor";
    super::at_most(BENCH, "--elements", elements, MAX_ELEMENTS)?;
    super::at_most(BENCH, "--msg-size", msg_size, super::MAX_MESSAGE_BYTES)?;
    // Each element holds a message from each of its six neighbours at once.
    let held = elements.saturating_mul(msg_size).saturating_mul(6);
    super::at_most(BENCH, "--elements x --msg-size x 6", held, MAX_HELD_BYTES)
}

impl KNeighborArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.elements, self.steps, self.msg_size).map_err(|e| e.to_string())
    }
}

/// Run the benchmark on the job `config` describes; `elements` is raised to the PE
/// count inside the job, as the original does.
pub fn run(
    config: &Config,
    elements: usize,
    steps: usize,
    msg_size: usize,
) -> Result<KNeighborReport, CharmError> {
    validate(elements, steps, msg_size)?;
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Block>("Block");
    let counted = reg.entry::<Main, u64>("Main::counted", MainMsg::Counted);
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((elements, steps, msg_size, counted), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    let mut times: Vec<f64> = output(&report, "times_us", "the step times")?;
    let messages: u64 = output(&report, "messages", "the count of messages received")?;
    let n: usize = output(&report, "elements", "the array's size")?;
    let expected = (n * 2 * 2 * STRIDE_K * CALC_PER_STEP as usize * steps) as u64;
    if messages != expected {
        return Err(CharmError::Check {
            bench: "charm-kneighbor",
            what: format!(
                "the blocks received {messages} requests and replies, {expected} were sent"
            ),
        });
    }
    times.sort_by(f64::total_cmp);
    let samples = (times.len() - 1).min(100);
    Ok(KNeighborReport {
        msg_size,
        elements: n,
        lowest_us: times[0],
        median_us: times[times.len() / 2],
        highest_us: times[times.len() - 1],
        average_us: times[..samples].iter().sum::<f64>() / samples as f64,
        messages,
    })
}

/// `chorus-bench charm-kneighbor`.
pub fn measure(args: &KNeighborArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(&args.config, args.elements, args.steps, args.msg_size)
    })
}

impl Report for KNeighborReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        format!(
            "Time stats: lowest: {:.6}, median: {:.6}, highest: {:.6}\n\
             The average time for each {STRIDE_K}-kNeighbor iteration with msg size {} is {:.6} (us)\n",
            self.lowest_us, self.median_us, self.highest_us, self.msg_size, self.average_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_wrap_round_as_the_original() {
        assert_eq!(neighbours(0, 10), vec![7, 8, 9, 1, 2, 3]);
        assert_eq!(neighbours(9, 10), vec![6, 7, 8, 0, 1, 2]);
        // Two elements: the original's list repeats and names the block itself.
        assert_eq!(neighbours(0, 2), vec![1, 0, 1, 1, 0, 1]);
    }
}
