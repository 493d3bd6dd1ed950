//! Broadcast from any root: the root's value goes to rank 0 (directly with a roster,
//! else up the tree), then down the k-ary tree; every member, the root included,
//! completes when the value reaches it from its parent.

use super::error::CollectiveError;
use super::machine::{children, relays_up, send_up_to_root, Machine, Out, Received, Step, Stepped};
use super::topology::Topology;
use super::value::Piece;
use chorus_core::RedData;

const UP: u32 = 0;
const DOWN: u32 = 1;

/// One member's broadcast.
pub struct Broadcast {
    root: u32,
    value: Option<RedData>,
}

impl Broadcast {
    /// A broadcast from `root`; `value` is the root's value (ignored elsewhere).
    pub fn new(root: u32, value: Option<RedData>) -> Self {
        Broadcast { root, value }
    }

    fn down(me: &dyn Topology, v: RedData, out: &mut Out) -> Step {
        for pe in children(me) {
            out.send(pe, DOWN, Piece::Value(v.clone()));
        }
        Step::Done(Some(v))
    }
}

impl Machine for Broadcast {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        if me.rank() != self.root {
            return Ok(Step::Pending);
        }
        // `Collectives::broadcast` refuses a root without a value (`MissingValue`).
        let v = self.value.take().expect("the root holds the value");
        if me.rank() == 0 {
            return Ok(Self::down(me, v, out));
        }
        send_up_to_root(me, UP, Piece::Value(v), out);
        Ok(Step::Pending)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        let v = piece.value()?;
        Ok(match tag {
            UP if me.rank() == 0 => Self::down(me, v, out),
            UP if relays_up(me, self.root) => {
                send_up_to_root(me, UP, Piece::Value(v), out);
                Step::Pending
            }
            UP => {
                return Err(CollectiveError::Protocol(format!(
                    "the root's value reached rank {}, which is not on its way to rank 0 (do the members agree on the root?)",
                    me.rank()
                )))
            }
            _ => Self::down(me, v, out),
        })
    }
}
