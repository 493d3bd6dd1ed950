//! `chorus-bench charm-migrate`: Charm++'s `benchmarks/charm++/migrate`
//! (migrateHello). One array element carrying `--data-size` bytes moves itself to
//! the other PE `--iterations` times: each hello migrates it, and on arrival it
//! sends itself the next hello. Prints the original's line (total seconds and
//! microseconds per migration, timed from the second hello). Checks on every
//! arrival that the element's data came with it, byte for byte, and that no hello
//! was lost or repeated.
//!
//! The data is a `Bytes`, serialized in one piece as the original's `p(data,
//! dataSize)` packs its buffer: a `Vec<u8>` goes through serde one byte at a time,
//! which cost about 4 ns a byte each way (290 us of a 64 KiB move against
//! Charm++'s 64 us), a cost of the port, not of migration.

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{ArrayMap, Bytes, Chare, Config, Ctx, Migratable, Registry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The byte the original fills the element's data with.
const FILL: u8 = b'1';

/// A block of `FILL` the data is compared with, a block at a time (a comparison of
/// slices, not a loop over bytes, so the check costs little beside the move).
static FILLED: [u8; 4096] = [FILL; 4096];

/// The flags of `chorus-bench charm-migrate` (the original's `[numIterations]
/// [dataSize]`; its Makefile's test runs +p2 10000 with 1, 4096 and 65536 bytes).
#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    /// The job (2 PEs or more; the element moves between PEs 0 and 1).
    #[command(flatten)]
    pub config: Config,
    /// Hellos, each one migration.
    #[arg(long, default_value_t = 1000)]
    pub iterations: u32,
    /// Bytes of data the element carries.
    #[arg(long, default_value_t = 1)]
    pub data_size: usize,
    /// Print one JSON object instead of the original's line.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The migrations timed.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateReport {
    /// Bytes the element carried.
    pub data_size: usize,
    /// Seconds from the second hello to the last.
    pub total_s: f64,
    /// Microseconds per migration.
    pub per_migration_us: f64,
}

/// The element that moves.
#[derive(Serialize, Deserialize)]
struct Hello {
    iterations: u32,
    data: Bytes,
    hi: u32,
    start: f64,
}

impl Chare for Hello {
    /// Hellos, data bytes.
    type Init = (u32, usize);
    /// A hello's number.
    type Msg = u32;
    fn create((iterations, size): Self::Init, _: &mut Ctx) -> Self {
        Hello {
            iterations,
            data: Bytes::from(vec![FILL; size]),
            hi: 0,
            start: 0.0,
        }
    }
    fn handle(&mut self, hi: u32, ctx: &mut Ctx) {
        if hi != self.hi + u32::from(hi > 0) {
            return ctx.fail(
                "charm-migrate",
                format!("hello {hi} arrived after hello {}", self.hi),
            );
        }
        if hi < 2 {
            self.start = ctx.now();
        } else if hi >= self.iterations {
            let total = ctx.now() - self.start;
            ctx.publish("total_s", &total);
            ctx.publish("per_migration_us", &(total / f64::from(hi - 1) * 1e6));
            return ctx.exit();
        }
        self.hi = hi;
        let to = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
        if let Err(e) = ctx.migrate_me(to) {
            ctx.fail("charm-migrate", e);
        }
    }
}

impl Migratable for Hello {
    fn migrated(&mut self, ctx: &mut Ctx) {
        let blocks = self.data.chunks(FILLED.len());
        if let Some(b) = blocks.into_iter().position(|c| c != &FILLED[..c.len()]) {
            return ctx.fail(
                "charm-migrate",
                format!("block {b} of the element's data changed on the move"),
            );
        }
        if let (Some(arr), Some(me)) = (ctx.this_array::<Hello, usize>(), ctx.this_index_1d()) {
            arr.send(ctx, &me, self.hi + 1);
        }
    }
}

/// The parameters the original refuses too.
fn validate(iterations: u32, data_size: usize) -> Result<(), CharmError> {
    if iterations < 3 {
        return Err(CharmError::Usage {
            bench: "charm-migrate",
            what: "give --iterations of at least 3 (the timing starts at the second hello)".into(),
        });
    }
    super::at_most(
        "charm-migrate",
        "--data-size",
        data_size,
        super::MAX_MESSAGE_BYTES,
    )
}

impl MigrateArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.iterations, self.data_size).map_err(|e| e.to_string())
    }
}

/// Run the migrations on the job `config` describes.
pub fn run(
    config: &Config,
    iterations: u32,
    data_size: usize,
) -> Result<MigrateReport, CharmError> {
    validate(iterations, data_size)?;
    let mut reg = Registry::new();
    reg.migratable::<Hello>("Hello");
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        if ctx.num_pes() < 2 {
            return ctx.fail(
                "charm-migrate",
                "run it on 2 PEs or more: the element moves between PEs",
            );
        }
        let arr = ctx.create_array_1d::<Hello>(1, (iterations, data_size), ArrayMap::Block);
        arr.send(ctx, &0, 0);
    })?;
    Ok(MigrateReport {
        data_size,
        total_s: output(&report, "total_s", "the migrations' time")?,
        per_migration_us: output(&report, "per_migration_us", "the time per migration")?,
    })
}

/// `chorus-bench charm-migrate`.
pub fn measure(args: &MigrateArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(&args.config, args.iterations, args.data_size)
    })
}

impl Report for MigrateReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        format!(
            " migration cost total : {:.6} sec single migration cost: {:.6} us\n",
            self.total_s, self.per_migration_us
        )
    }
}
