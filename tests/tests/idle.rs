//! Idle PEs park instead of spinning: 16 PEs on a 2-core machine wait for one busy PE
//! without burning the cores. (Its own test binary, so no other test's CPU time counts.)

use chorus_core::{Chare, Config, Ctx, Registry, Runtime, WorkMode};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// CPU seconds (user + system) this process has used, from /proc/self/stat.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

struct Sleeper;

#[derive(Clone, Serialize, Deserialize)]
enum SleeperMsg {
    Nap(u64),
}

impl Chare for Sleeper {
    type Init = ();
    type Msg = SleeperMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Sleeper
    }
    fn handle(&mut self, SleeperMsg::Nap(ms): SleeperMsg, ctx: &mut Ctx) {
        ctx.work(Duration::from_millis(ms));
        ctx.exit();
    }
}

#[test]
fn sixteen_idle_pes_use_little_cpu_while_one_pe_works() {
    let Some(before) = process_cpu_seconds() else {
        eprintln!("no /proc/self/stat on this system; skipping");
        return;
    };
    let mut reg = Registry::new();
    reg.chare::<Sleeper>("Sleeper");
    let cfg = Config {
        pes: 16,
        work: WorkMode::Sleep,
        ..Config::default()
    };
    let report = Runtime::new(reg, cfg)
        .run(|ctx| {
            let s = ctx.create_chare::<Sleeper>((), 5);
            s.send(ctx, SleeperMsg::Nap(600));
        })
        .expect("run");
    let cpu = process_cpu_seconds().expect("stat readable") - before;
    assert!(report.wall_s >= 0.6, "the job waited for the nap");
    // Spinning PEs would use both cores for the whole nap (about 1.2 CPU-seconds).
    assert!(
        cpu < 0.25 * report.wall_s,
        "idle PEs used {cpu:.3} CPU-s during {:.3} s",
        report.wall_s
    );
}
