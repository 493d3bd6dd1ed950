//! Backpressure: fifteen PEs flood PE 0 with messages, each from a loop of its own
//! continuation messages (the producer pattern of a message-driven program), far
//! faster than PE 0 handles them. Credit-based flow control holds a producer's
//! continuations while it has too many messages unhandled at one PE, so the job's
//! peak memory stays bounded instead of growing with the flood.
//!
//! The test is alone in its binary: it reads the process's peak resident memory.

use chorus_core::{Chare, Config, Ctx, GroupProxy, Layer, Registry, Runtime};
use serde::{Deserialize, Serialize};

/// PEs of the job: PE 0 is flooded by the other fifteen.
const PES: u32 = 16;
/// Messages each producer sends PE 0.
const PER_PRODUCER: u64 = 100_000;
/// Messages a producer sends per continuation.
const BATCH: u64 = 100;
/// Peak resident memory the flood may add, bytes: without flow control the
/// backlog at PE 0 (1.5 million envelopes) takes several times this.
const BOUND: u64 = 32 << 20;

/// A member on every PE: PE 0 consumes, the others produce.
struct Node {
    sim: bool,
    sent: u64,
    got: u64,
    sum: u64,
}

#[derive(Clone, Serialize, Deserialize)]
enum NodeMsg {
    /// A producer's continuation: send the next batch, then this again.
    Pump,
    Item(u64),
}

impl Chare for Node {
    /// True on the sim layer.
    type Init = bool;
    type Msg = NodeMsg;
    fn create(sim: bool, _: &mut Ctx) -> Self {
        Node {
            sim,
            sent: 0,
            got: 0,
            sum: 0,
        }
    }
    fn handle(&mut self, msg: NodeMsg, ctx: &mut Ctx) {
        let group: GroupProxy<Node> = ctx.this_group().expect("a group member");
        match msg {
            NodeMsg::Pump => {
                for _ in 0..BATCH.min(PER_PRODUCER - self.sent) {
                    group.send(ctx, 0, NodeMsg::Item(self.sent));
                    self.sent += 1;
                }
                if self.sent < PER_PRODUCER {
                    group.send(ctx, ctx.my_pe(), NodeMsg::Pump);
                }
            }
            NodeMsg::Item(i) => {
                // Slower than fifteen producers together: a little work per item,
                // computed on threads, modelled on sim.
                if self.sim {
                    ctx.work(std::time::Duration::from_micros(1));
                } else {
                    let mut x = i;
                    for _ in 0..100 {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005) | 1);
                    }
                    std::hint::black_box(x);
                }
                self.sum += i;
                self.got += 1;
                if self.got == PER_PRODUCER * u64::from(PES - 1) {
                    ctx.publish("sum", &self.sum);
                    ctx.exit();
                }
            }
        }
    }
}

/// Peak resident memory of this process so far, bytes (Linux `VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status");
    kib << 10
}

/// Reset the peak to the current resident memory (Linux `clear_refs` 5).
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

fn flood(layer: Layer) -> u64 {
    let mut reg = Registry::new();
    reg.chare::<Node>("Node");
    let cfg = Config {
        layer,
        ..Config::with_pes(PES)
    };
    reset_peak_rss();
    let before = peak_rss();
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let group = ctx.create_group::<Node>(layer == Layer::Sim);
            for pe in 1..PES {
                group.send(ctx, pe, NodeMsg::Pump);
            }
        })
        .expect("the flood is handled and the job exits");
    let n = PER_PRODUCER * u64::from(PES - 1);
    let per_producer: u64 = (0..PER_PRODUCER).sum();
    assert_eq!(
        report.outputs::<u64>("sum"),
        vec![(0, per_producer * u64::from(PES - 1))],
        "PE 0 handled all {n} items"
    );
    peak_rss().saturating_sub(before)
}

#[test]
fn a_flood_into_one_pe_keeps_memory_bounded() {
    let mut over = Vec::new();
    for layer in [Layer::Threads, Layer::Sim] {
        let grew = flood(layer);
        println!("{layer:?}: peak resident memory grew by {} KiB", grew >> 10);
        if grew > BOUND {
            over.push(format!("{layer:?}: {} MiB", grew >> 20));
        }
    }
    assert!(
        over.is_empty(),
        "a flood of {} messages grew peak memory beyond {} MiB: {over:?}",
        PER_PRODUCER * u64::from(PES - 1),
        BOUND >> 20
    );
}
