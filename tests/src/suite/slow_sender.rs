//! A slow sender delays only its own messages: on mpi, a long message's body (and a
//! segmented one's segments) may come well after its notice, as from a paused or busy
//! rank, and the receiving rank goes on with the other ranks' messages meanwhile,
//! with no timeout that could end the job (`--fault-hold-long-ms` holds them).

use crate::{config, pes};
use chorus_core::{Bytes, Chare, Ctx, ErrorPolicy, GroupProxy, Layer, Registry, Runtime};
use serde::{Deserialize, Serialize};

/// Round trips the pinger makes while the long messages are held.
const PINGS: u32 = 20;
/// How long the slow rank holds each long message's body, ms: long enough that the
/// pings, even on an oversubscribed machine, come first unless the receiver waits.
const HOLD_MS: u64 = 2000;
/// Bytes of the long message with a body (above one posted receive, below a segment).
const BODY_BYTES: usize = 48 << 10;
/// Bytes of the segmented message.
const SEGMENT_BYTES: usize = 256 << 10;

/// One member per PE: PE 0 counts, `slow` sends the long messages, `pinger` pings.
struct Node {
    pings: u32,
    longs: u32,
    pings_before_first_long: Option<u32>,
}

#[derive(Clone, Serialize, Deserialize)]
enum NodeMsg {
    /// To the slow PE: send the long messages to PE 0, then `Go` to the pinger.
    Start {
        pinger: u32,
    },
    Go,
    Ping {
        i: u32,
        from: u32,
    },
    Pong(u32),
    Body(Vec<u8>),
    Segmented(Bytes),
}

impl Chare for Node {
    type Init = ();
    type Msg = NodeMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Node {
            pings: 0,
            longs: 0,
            pings_before_first_long: None,
        }
    }
    fn handle(&mut self, msg: NodeMsg, ctx: &mut Ctx) {
        let group: GroupProxy<Node> = ctx.this_group().expect("a group member");
        match msg {
            NodeMsg::Start { pinger } => {
                group.send(ctx, 0, NodeMsg::Body(vec![7; BODY_BYTES]));
                group.send(
                    ctx,
                    0,
                    NodeMsg::Segmented(Bytes::from(vec![9; SEGMENT_BYTES])),
                );
                group.send(ctx, pinger, NodeMsg::Go);
            }
            NodeMsg::Go => {
                let from = ctx.my_pe();
                group.send(ctx, 0, NodeMsg::Ping { i: 0, from });
            }
            NodeMsg::Ping { i, from } => {
                self.pings += 1;
                if i + 1 < PINGS {
                    group.send(ctx, from, NodeMsg::Pong(i));
                }
                self.done(ctx);
            }
            NodeMsg::Pong(i) => {
                let from = ctx.my_pe();
                group.send(ctx, 0, NodeMsg::Ping { i: i + 1, from });
            }
            NodeMsg::Body(v) => {
                assert!(v.len() == BODY_BYTES && v.iter().all(|&b| b == 7));
                self.long_came(ctx);
            }
            NodeMsg::Segmented(b) => {
                assert!(b.len() == SEGMENT_BYTES && b.iter().all(|&x| x == 9));
                self.long_came(ctx);
            }
        }
    }
}

impl Node {
    fn long_came(&mut self, ctx: &mut Ctx) {
        self.longs += 1;
        self.pings_before_first_long.get_or_insert(self.pings);
        self.done(ctx);
    }

    fn done(&mut self, ctx: &mut Ctx) {
        if self.pings == PINGS && self.longs == 2 {
            ctx.publish("pings_before_long", &self.pings_before_first_long);
            ctx.exit();
        }
    }
}

/// Every message arrives whole; on mpi with three ranks or more, where the long
/// messages' bodies are held, every ping is handled before them.
pub fn a_slow_sender_delays_only_its_own_messages(layer: Layer) {
    let p = pes(layer, 3);
    let ppr = crate::pes_per_rank(layer);
    let ranks = p / ppr;
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    let held = layer == Layer::Mpi && ranks >= 3;
    if layer == Layer::Mpi {
        cfg.fault_hold_long_ms = Some(HOLD_MS);
    }
    // On other ranks than PE 0's and each other's.
    let (slow, pinger) = (ppr, 2 * ppr % p);
    let mut reg = Registry::new();
    reg.chare::<Node>("Node");
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let group = ctx.create_group::<Node>(());
            group.send(ctx, slow, NodeMsg::Start { pinger });
        })
        .expect("every message arrives and the job exits");
    let seen = report.outputs::<Option<u32>>("pings_before_long");
    assert_eq!(seen.len(), 1, "PE 0 saw every ping and both long messages");
    if held {
        assert_eq!(
            seen[0].1,
            Some(PINGS),
            "PE 0 handled every ping while the long messages' bodies were held"
        );
    }
}

/// This module's suite tests.
pub const TESTS: &[super::Test] = &[(
    "a_slow_sender_delays_only_its_own_messages",
    a_slow_sender_delays_only_its_own_messages,
)];
