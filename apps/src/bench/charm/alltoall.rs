//! `chorus-bench charm-alltoall`: Charm++'s `benchmarks/charm++/streamingAllToAll`
//! (ataTest), its point-to-point test. Every PE's group member sends `size / 32`
//! rounds of one 32-byte item to every PE, in a shuffled order of PEs fixed per PE,
//! giving the scheduler a turn every 1024 sends (the original's `CthYield`); a member
//! that has received all `P * size / 32` items joins a reduction to the main chare,
//! which times each size from `--data-size-min` to `--data-size-max` bytes, doubling.
//! Checks that the members received exactly the items sent. Prints the original's
//! "Elapsed time for all-to-all ..." lines (TRAM, its aggregating library, is not
//! ported: the rows compare with the original's "not using TRAM" ones).

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{mix64, Callback, Chare, ChareProxy, Config, Ctx, Entry, GroupProxy};
use chorus_core::{Reducer, Registry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fmt::Write;

/// Bytes per item (the original's DATA_ITEM_SIZE).
pub const ITEM: usize = 32;
/// Sends between turns given to the scheduler (the original's yield period).
const YIELD_EVERY: usize = 1024;

/// The flags of `chorus-bench charm-alltoall` (the original's `dataSizeMin
/// dataSizeMax` and defaults).
#[derive(Debug, Clone, clap::Args)]
pub struct AllToAllArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi build).
    #[command(flatten)]
    pub config: Config,
    /// Smallest bytes sent to each PE.
    #[arg(long, default_value_t = 32)]
    pub data_size_min: usize,
    /// Largest bytes sent to each PE.
    #[arg(long, default_value_t = 16384)]
    pub data_size_max: usize,
    /// Print one JSON object instead of the original's lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// One size's all-to-all.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AllToAllRow {
    /// Bytes each PE sent to each PE.
    pub bytes: usize,
    /// Rounds of 32-byte items.
    pub iterations: usize,
    /// Seconds from the start to the reduction's arrival.
    pub seconds: f64,
}

/// Every size measured.
#[derive(Debug, Clone, Serialize)]
pub struct AllToAllReport {
    /// PEs in the job.
    pub pes: usize,
    /// Rows, sizes ascending.
    pub rows: Vec<AllToAllRow>,
}

/// A PE's participant: sends its rounds and counts what arrives.
struct Participant {
    main: ChareProxy<Main>,
    done: Entry<Main, u64>,
    order: Vec<u32>,
    iterations: usize,
    received: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum PartMsg {
    /// Start sending `iterations` rounds.
    Communicate { iterations: usize },
    /// Go on sending from send number `from` after a turn of the scheduler.
    Continue { from: usize },
    /// One item.
    Receive([u8; ITEM]),
}

/// The PEs in an order shuffled by a fixed hash of this PE (the original shuffles
/// with `rand`, unseeded, so its order is fixed too).
fn shuffled(me: u32, pes: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..pes as u32).collect();
    for i in (1..pes).rev() {
        let j = (mix64(u64::from(me) << 32 | i as u64) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

impl Participant {
    fn send_from(&mut self, ctx: &mut Ctx, from: usize) {
        let Some(group) = ctx.this_group::<Participant>() else {
            return;
        };
        let total = self.iterations * self.order.len();
        let end = total.min(from + YIELD_EVERY);
        let item = [ctx.my_pe() as u8; ITEM];
        for k in from..end {
            group.send(
                ctx,
                self.order[k % self.order.len()],
                PartMsg::Receive(item),
            );
        }
        if end < total {
            let me = ctx.my_pe();
            group.send(ctx, me, PartMsg::Continue { from: end });
        }
    }
}

impl Chare for Participant {
    type Init = (ChareProxy<Main>, Entry<Main, u64>);
    type Msg = PartMsg;
    fn create((main, done): Self::Init, ctx: &mut Ctx) -> Self {
        Participant {
            main,
            done,
            order: shuffled(ctx.my_pe(), ctx.num_pes()),
            iterations: 0,
            received: 0,
        }
    }
    fn handle(&mut self, msg: PartMsg, ctx: &mut Ctx) {
        match msg {
            PartMsg::Communicate { iterations } => {
                self.iterations = iterations;
                self.send_from(ctx, 0);
            }
            PartMsg::Continue { from } => self.send_from(ctx, from),
            PartMsg::Receive(_) => {
                self.received += 1;
                if self.received == (ctx.num_pes() * self.iterations) as u64 {
                    let cb = Callback::chare(&self.main, self.done);
                    ctx.contribute(std::mem::take(&mut self.received), Reducer::Sum, cb);
                }
            }
        }
    }
}

/// Times each size.
struct Main {
    min: usize,
    max: usize,
    done: Entry<Main, u64>,
    group: Option<GroupProxy<Participant>>,
    bytes: usize,
    start: f64,
    rows: Vec<AllToAllRow>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Go,
    /// Items received over every PE.
    AllDone(u64),
}

impl Main {
    fn start(&mut self, ctx: &mut Ctx) {
        let Some(group) = self.group else { return };
        self.start = ctx.now();
        group.broadcast(
            ctx,
            PartMsg::Communicate {
                iterations: self.bytes / ITEM,
            },
        );
    }

    fn all_done(&mut self, ctx: &mut Ctx, items: u64) {
        let seconds = ctx.now() - self.start;
        let iterations = self.bytes / ITEM;
        let pes = ctx.num_pes();
        let sent = (pes * pes * iterations) as u64;
        if items != sent {
            return ctx.fail(
                "charm-alltoall",
                format!("the PEs received {items} items, {sent} were sent"),
            );
        }
        self.rows.push(AllToAllRow {
            bytes: self.bytes,
            iterations,
            seconds,
        });
        self.bytes *= 2;
        if self.bytes > self.max {
            ctx.publish("rows", &self.rows);
            return ctx.exit();
        }
        self.start(ctx);
    }
}

impl Chare for Main {
    /// Smallest and largest bytes, this chare's reduction entry.
    type Init = (usize, usize, Entry<Main, u64>);
    type Msg = MainMsg;
    fn create((min, max, done): Self::Init, _: &mut Ctx) -> Self {
        Main {
            min,
            max,
            done,
            group: None,
            bytes: min,
            start: 0.0,
            rows: Vec::new(),
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Go => {
                let Some(me) = ctx.this_chare::<Main>() else {
                    return;
                };
                self.group = Some(ctx.create_group::<Participant>((me, self.done)));
                self.bytes = self.min;
                self.start(ctx);
            }
            MainMsg::AllDone(items) => self.all_done(ctx, items),
        }
    }
}

/// The parameters the original refuses too.
fn validate(min: usize, max: usize) -> Result<(), CharmError> {
    if min < ITEM || max < min {
        return Err(CharmError::Usage {
            bench: "charm-alltoall",
            what: format!("give {ITEM} <= --data-size-min <= --data-size-max"),
        });
    }
    super::at_most(
        "charm-alltoall",
        "--data-size-max",
        max,
        super::MAX_MESSAGE_BYTES,
    )
}

impl AllToAllArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.data_size_min, self.data_size_max).map_err(|e| e.to_string())
    }
}

/// Run every size on the job `config` describes.
pub fn run(config: &Config, min: usize, max: usize) -> Result<AllToAllReport, CharmError> {
    validate(min, max)?;
    let mut reg = Registry::new();
    reg.chare::<Main>("Main")
        .chare::<Participant>("Participant");
    let done = reg.entry::<Main, u64>("Main::all_done", MainMsg::AllDone);
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((min, max, done), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    Ok(AllToAllReport {
        pes: report.pes,
        rows: output(&report, "rows", "the timed sizes")?,
    })
}

/// `chorus-bench charm-alltoall`.
pub fn measure(args: &AllToAllArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(&args.config, args.data_size_min, args.data_size_max)
    })
}

impl Report for AllToAllReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        let mut s = String::new();
        for r in &self.rows {
            let what = if r.iterations == 1 {
                "iteration"
            } else {
                "iterations"
            };
            let _ = writeln!(
                s,
                "Elapsed time for all-to-all of {:>8} bytes sent in {:>6} {what:>10} of {ITEM:>2} bytes each (not using TRAM): {:.6} seconds",
                r.bytes, r.iterations, r.seconds
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pe_appears_once_in_each_order() {
        for me in 0..4 {
            let mut o = shuffled(me, 7);
            o.sort_unstable();
            assert_eq!(o, (0..7).collect::<Vec<u32>>());
        }
    }
}
