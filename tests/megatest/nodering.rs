//! nodering: a message travels round a nodegroup's members, node after node, ten
//! times; node 0 counts the rings, every member must see it once per ring, and each
//! runs on its node's first PE.

use super::{node_shapes, run_on_nodes};
use chorus_core::{chare, Callback, Ctx, Layer, Reducer};
use serde::{Deserialize, Serialize};

/// Rings the message makes.
const RINGS: u32 = 10;

/// The travelling message.
#[derive(Clone, Serialize, Deserialize)]
pub struct Lap {
    rings: u32,
    done: Callback,
}

/// A node's member of the ring: counts the times the message passed it.
struct NodeRingMember {
    seen: u32,
}

/// Panic unless the running PE is the first of its node, where a member lives.
fn check_home(ctx: &Ctx, what: &str) {
    let first = ctx.my_node() * ctx.pes_per_node();
    assert_eq!(
        ctx.my_pe() as usize,
        first,
        "nodering: {what} of node {} ran off its node's first PE",
        ctx.my_node()
    );
}

#[chare]
impl NodeRingMember {
    #[init]
    fn new(_: (), ctx: &mut Ctx) -> Self {
        check_home(ctx, "a member");
        NodeRingMember { seen: 0 }
    }
    /// Pass the message to the next node; node 0 counts rings and stops after the
    /// last, then asks every member for its count.
    #[entry]
    fn start(&mut self, mut lap: Lap, ctx: &mut Ctx) {
        check_home(ctx, "a lap");
        self.seen += 1;
        let ring = ctx
            .this_node_group::<NodeRingMember>()
            .expect("a nodegroup");
        let node = ctx.my_node();
        if node == 0 && lap.rings == RINGS {
            ring.report(ctx, lap.done);
            return;
        }
        if node == 0 {
            lap.rings += 1;
        }
        ring.at((node + 1) % ctx.num_nodes()).start(ctx, lap);
    }
    /// Contribute how many times the message passed: one contribution per node.
    #[entry]
    fn report(&mut self, done: Callback, ctx: &mut Ctx) {
        let want = if ctx.my_node() == 0 { RINGS + 1 } else { RINGS };
        assert_eq!(self.seen, want, "nodering: node {}", ctx.my_node());
        ctx.contribute(u64::from(self.seen), Reducer::Sum, done);
    }
}

/// Ten rings: node 0 sees the message eleven times, every other node ten, and the
/// sum has exactly one term per node.
pub fn nodering(layer: Layer) {
    for shape in node_shapes(layer) {
        let nodes = shape.0.div_ceil(shape.1);
        let total: u64 = run_on_nodes(layer, shape, NodeRingMember::register, |ctx, done| {
            let ring = ctx.create_node_group::<NodeRingMember>(());
            ring.at(0).start(ctx, Lap { rings: 0, done });
        });
        assert_eq!(total, u64::from(RINGS * nodes + 1), "{shape:?}");
    }
}
