//! nodecast: a nodegroup is created with its main chare's handle, and every member
//! reports its creation to main by message; once all nodes have, main broadcasts a
//! checked message and every member checks it and reports again. Main counts each
//! node's reports: one per round from each node, each from the node's first PE.

use super::{node_shapes, run_on_nodes};
use chorus_core::{chare, Callback, ChareProxy, Ctx, Layer, NodeGroupProxy};
use serde::{Deserialize, Serialize};

/// The broadcast message's fixed contents.
fn pattern() -> Vec<u64> {
    (0..16).map(|i| i * 0x9E37_79B9 + 7).collect()
}

/// Where a member's report came from.
#[derive(Clone, Serialize, Deserialize)]
pub struct Report {
    node: usize,
    pe: u32,
}

impl Report {
    /// A report from the running member.
    fn here(ctx: &Ctx) -> Self {
        Report {
            node: ctx.my_node(),
            pe: ctx.my_pe(),
        }
    }
}

/// The main chare: counts reports per node and broadcasts after the first round.
struct NodeCastMain {
    group: NodeGroupProxy<NodeCastMember>,
    reports: Vec<u32>,
    done: Callback,
}

#[chare]
impl NodeCastMain {
    /// Create the nodegroup, handing it this chare.
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<NodeCastMain>().expect("a chare");
        let group = ctx.create_node_group::<NodeCastMember>(me);
        NodeCastMain {
            group,
            reports: vec![0; ctx.num_nodes()],
            done,
        }
    }
    /// A member reported; after a round with every node in it, broadcast (after the
    /// creation) or finish with the total (after the broadcast).
    #[entry]
    fn reply(&mut self, from: Report, ctx: &mut Ctx) {
        assert_eq!(
            from.pe as usize,
            from.node * ctx.pes_per_node(),
            "nodecast: node {}'s member ran on PE {}",
            from.node,
            from.pe
        );
        self.reports[from.node] += 1;
        let total: u32 = self.reports.iter().sum();
        let nodes = self.reports.len() as u32;
        let round = total / nodes;
        if !total.is_multiple_of(nodes) {
            return;
        }
        assert!(
            self.reports.iter().all(|&n| n == round),
            "nodecast: reports per node after round {round}: {:?}",
            self.reports
        );
        if round == 1 {
            self.group.do_broadcast(ctx, pattern());
        } else {
            ctx.send_to_callback(&self.done, total);
        }
    }
}

/// A member: reports to main when created and after the broadcast.
struct NodeCastMember {
    main: ChareProxy<NodeCastMain>,
}

#[chare]
impl NodeCastMember {
    #[init]
    fn new(main: ChareProxy<NodeCastMain>, ctx: &mut Ctx) -> Self {
        main.reply(ctx, Report::here(ctx));
        NodeCastMember { main }
    }
    /// Check the broadcast and report.
    #[entry]
    fn do_broadcast(&mut self, data: Vec<u64>, ctx: &mut Ctx) {
        assert_eq!(data, pattern(), "nodecast: broadcast message corrupted");
        self.main.reply(ctx, Report::here(ctx));
    }
}

fn register(reg: &mut chorus_core::Registry) -> &mut chorus_core::Registry {
    NodeCastMain::register(reg);
    NodeCastMember::register(reg)
}

/// Two rounds of one report from every node, main living on the last PE (off node 0
/// when there are several nodes).
pub fn nodecast(layer: Layer) {
    for shape in node_shapes(layer) {
        let nodes = shape.0.div_ceil(shape.1);
        let last = shape.0 - 1;
        let total: u32 = run_on_nodes(layer, shape, register, move |ctx, done| {
            ctx.create_chare::<NodeCastMain>(done, last);
        });
        assert_eq!(total, 2 * nodes, "{shape:?}");
    }
}
