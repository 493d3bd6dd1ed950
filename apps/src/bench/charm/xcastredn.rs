//! `chorus-bench charm-xcastredn`: Charm++'s `benchmarks/charm++/xcastredn`, its
//! chare-array rows. One array element per PE; the main chare broadcasts a message
//! and every element answers with a sum reduction, for message sizes doubling from
//! `--msg-size-min` bytes to `--msg-size-max` KB, `--repeats` loops each. Two
//! mechanisms, as the original's "Charm-Bcast" (the broadcast carries the size, the
//! reduction one double) and "Charm-Redn" (the broadcast carries one double, the
//! reduction the size). Every reduction's result is checked: each double must sum
//! to 100 per element, as the original's contributions are. Prints the original's
//! per-mechanism tables (average, min, max and standard deviation in ms).

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{ArrayMap, ArrayProxy, Callback, Chare, ChareProxy, Config, Ctx, Entry};
use chorus_core::{Reducer, Registry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fmt::Write;

/// Each element's contribution per double (the original's `returnData`).
const CONTRIBUTION: f64 = 100.0;
/// The mechanisms ported, in the original's names and order.
pub const MECHANISMS: [&str; 2] = ["Charm-Bcast", "Charm-Redn"];

/// The flags of `chorus-bench charm-xcastredn` (the original's `numRepeats
/// msgSizeMin msgSizeMax`, and its defaults).
#[derive(Debug, Clone, clap::Args)]
pub struct XcastArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi build).
    #[command(flatten)]
    pub config: Config,
    /// Broadcast-and-reduce loops per size.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The smallest message, bytes.
    #[arg(long, default_value_t = 8)]
    pub msg_size_min: usize,
    /// The largest message, KB.
    #[arg(long, default_value_t = 64)]
    pub msg_size_max: usize,
    /// Print one JSON object instead of the original's tables.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// One mechanism at one size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct XcastRow {
    /// Index into [`MECHANISMS`].
    pub mechanism: usize,
    /// Message bytes.
    pub bytes: usize,
    /// Mean loop time, ms.
    pub avg_ms: f64,
    /// Fastest loop, ms.
    pub min_ms: f64,
    /// Slowest loop, ms.
    pub max_ms: f64,
    /// Standard deviation, ms.
    pub std_ms: f64,
}

/// Every row measured.
#[derive(Debug, Clone, Serialize)]
pub struct XcastReport {
    /// Array elements (one per PE).
    pub elements: usize,
    /// Rows, mechanism by mechanism, sizes ascending.
    pub rows: Vec<XcastRow>,
}

/// One array element.
struct Elem {
    main: ChareProxy<Main>,
    done: Entry<Main, Vec<f64>>,
}

/// The broadcast: the data (the original's `data[i] = i`) and how many doubles to
/// contribute. The data is packed, one block of bytes as the original's varsize
/// array is copied: serde's number-at-a-time form took 250,000 instructions a
/// 64 KiB broadcast, a cost of the port, not of broadcasting.
#[derive(Clone, Serialize, Deserialize)]
struct Crunch {
    #[serde(with = "chorus_core::packed")]
    data: Vec<f64>,
    redn_units: usize,
}

impl Chare for Elem {
    type Init = (ChareProxy<Main>, Entry<Main, Vec<f64>>);
    type Msg = Crunch;
    fn create((main, done): Self::Init, _: &mut Ctx) -> Self {
        Elem { main, done }
    }
    fn handle(&mut self, msg: Crunch, ctx: &mut Ctx) {
        let cb = Callback::chare(&self.main, self.done);
        ctx.contribute(vec![CONTRIBUTION; msg.redn_units], Reducer::Sum, cb);
    }
}

/// Loops over mechanisms, sizes and repeats, timing each broadcast-and-reduce.
struct Main {
    repeats: usize,
    min: usize,
    max: usize,
    done: Entry<Main, Vec<f64>>,
    array: Option<ArrayProxy<Elem, usize>>,
    elements: usize,
    mechanism: usize,
    size: usize,
    start: f64,
    warm: bool,
    loops: Vec<f64>,
    rows: Vec<XcastRow>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Go,
    Reduced(Vec<f64>),
}

/// (broadcast doubles, reduction doubles) of a mechanism at `size` bytes.
fn units(mechanism: usize, size: usize) -> (usize, usize) {
    let n = (size / 8).max(1);
    if mechanism == 0 {
        (n, 1)
    } else {
        (1, n)
    }
}

/// Mean, min, max and standard deviation, as the original computes them.
fn stats(loops: &[f64]) -> (f64, f64, f64, f64) {
    let n = loops.len().max(1) as f64;
    let avg = loops.iter().sum::<f64>() / n;
    let sq = loops.iter().map(|t| t * t).sum::<f64>() / n;
    let min = loops.iter().copied().fold(f64::INFINITY, f64::min);
    let max = loops.iter().copied().fold(0.0, f64::max);
    (avg, min, max, (sq - avg * avg).max(0.0).sqrt())
}

/// Check a reduction's result: `want` doubles, each 100 per element.
fn check(sum: &[f64], want: usize, elements: usize) -> Result<(), String> {
    let each = CONTRIBUTION * elements as f64;
    if sum.len() != want {
        return Err(format!(
            "the reduction returned {} doubles, {want} were contributed",
            sum.len()
        ));
    }
    match sum.iter().position(|&v| v != each) {
        Some(i) => Err(format!(
            "double {i} of the reduction is {}, expected {each}",
            sum[i]
        )),
        None => Ok(()),
    }
}

impl Main {
    fn send(&mut self, ctx: &mut Ctx) {
        let Some(arr) = self.array else { return };
        let (xcast, redn_units) = units(self.mechanism, self.size);
        let data = (0..xcast).map(|i| i as f64).collect();
        self.start = ctx.now();
        arr.broadcast(ctx, Crunch { data, redn_units });
    }

    fn reduced(&mut self, ctx: &mut Ctx, sum: Vec<f64>) {
        let ms = 1e3 * (ctx.now() - self.start);
        let want = units(self.mechanism, self.size).1;
        if let Err(e) = check(&sum, want, self.elements) {
            return ctx.fail("charm-xcastredn", e);
        }
        // The original drops its first loop (tree setup); so does the port.
        if std::mem::take(&mut self.warm) {
            return self.send(ctx);
        }
        self.loops.push(ms);
        if self.loops.len() < self.repeats {
            return self.send(ctx);
        }
        let (avg_ms, min_ms, max_ms, std_ms) = stats(&self.loops);
        self.loops.clear();
        let (mechanism, bytes) = (self.mechanism, self.size);
        self.rows.push(XcastRow {
            mechanism,
            bytes,
            avg_ms,
            min_ms,
            max_ms,
            std_ms,
        });
        self.size *= 2;
        if self.size > self.max * 1024 {
            self.size = self.min;
            self.mechanism += 1;
        }
        if self.mechanism == MECHANISMS.len() {
            ctx.publish("rows", &self.rows);
            ctx.publish("elements", &self.elements);
            return ctx.exit();
        }
        self.send(ctx);
    }
}

impl Chare for Main {
    /// Repeats, smallest bytes, largest KB, this chare's reduction entry.
    type Init = (usize, usize, usize, Entry<Main, Vec<f64>>);
    type Msg = MainMsg;
    fn create((repeats, min, max, done): Self::Init, _: &mut Ctx) -> Self {
        Main {
            repeats,
            min,
            max,
            done,
            array: None,
            elements: 0,
            mechanism: 0,
            size: min,
            start: 0.0,
            warm: true,
            loops: Vec::with_capacity(repeats),
            rows: Vec::new(),
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        match msg {
            MainMsg::Go => {
                let Some(me) = ctx.this_chare::<Main>() else {
                    return;
                };
                self.elements = ctx.num_pes();
                let arr =
                    ctx.create_array_1d::<Elem>(self.elements, (me, self.done), ArrayMap::Block);
                self.array = Some(arr);
                self.send(ctx);
            }
            MainMsg::Reduced(sum) => self.reduced(ctx, sum),
        }
    }
}

/// The parameters the original refuses too.
fn validate(repeats: usize, min: usize, max_kb: usize) -> Result<(), CharmError> {
    let max_kb_allowed = super::MAX_MESSAGE_BYTES / 1024;
    super::at_most(
        "charm-xcastredn",
        "--msg-size-max (KB)",
        max_kb,
        max_kb_allowed,
    )?;
    if repeats == 0 || min < 8 || min > max_kb * 1024 {
        return Err(CharmError::Usage {
            bench: "charm-xcastredn",
            what: "give --repeats above 0 and 8 <= --msg-size-min (bytes) <= --msg-size-max (KB) * 1024".into(),
        });
    }
    Ok(())
}

impl XcastArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.repeats, self.msg_size_min, self.msg_size_max).map_err(|e| e.to_string())
    }
}

/// Run every mechanism and size on the job `config` describes.
pub fn run(
    config: &Config,
    repeats: usize,
    min: usize,
    max_kb: usize,
) -> Result<XcastReport, CharmError> {
    validate(repeats, min, max_kb)?;
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Elem>("Elem");
    let done = reg.entry::<Main, Vec<f64>>("Main::reduced", MainMsg::Reduced);
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((repeats, min, max_kb, done), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    Ok(XcastReport {
        elements: output(&report, "elements", "the array's size")?,
        rows: output(&report, "rows", "the timed rows")?,
    })
}

/// `chorus-bench charm-xcastredn`.
pub fn measure(args: &XcastArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(
            &args.config,
            args.repeats,
            args.msg_size_min,
            args.msg_size_max,
        )
    })
}

impl Report for XcastReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        let mut s = String::new();
        for (m, name) in MECHANISMS.iter().enumerate() {
            let _ = writeln!(
                s,
                "Finished timing the collectives mechanism: {name}. Results: "
            );
            let _ = writeln!(
                s,
                "{:>15}{:>15}{:>15}{:>15}{:>15}",
                "Msg size (KB)", "Avg time (ms)", "Min time (ms)", "Max time (ms)", "Std Dev  (ms)"
            );
            for r in self.rows.iter().filter(|r| r.mechanism == m) {
                let kb = r.bytes as f64 / 1024.0;
                let _ = writeln!(
                    s,
                    "{kb:>15.6}{:>15.6}{:>15.6}{:>15.6}{:>15.6}",
                    r.avg_ms, r.min_ms, r.max_ms, r.std_ms
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_the_originals_population_figures() {
        let (avg, min, max, std) = stats(&[1.0, 3.0]);
        assert_eq!((avg, min, max, std), (2.0, 1.0, 3.0, 1.0));
    }

    #[test]
    fn a_lost_or_doubled_contribution_fails_the_check() {
        assert!(check(&[200.0, 200.0], 2, 2).is_ok());
        assert!(check(&[200.0, 100.0], 2, 2).is_err());
        assert!(check(&[300.0], 1, 2).is_err());
        assert!(check(&[200.0], 2, 2).is_err());
    }

    #[test]
    fn bcast_carries_the_size_and_redn_returns_it() {
        assert_eq!(units(0, 64), (8, 1));
        assert_eq!(units(1, 64), (1, 8));
    }
}
