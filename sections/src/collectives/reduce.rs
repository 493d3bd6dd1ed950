//! Reductions up the k-ary tree: reduce to any root, allreduce, barrier — and, with
//! the `Concat` and `Gather` folds, gather, gatherv and the tree allgather.
//!
//! Partials climb to rank 0, which finishes the fold; a reduce to another root then
//! sends the result down to it (directly with a roster, else along the tree path),
//! an allreduce sends it down the whole tree.

use super::machine::{children, ok, relays_down, send_down_to, Machine, Out, Step};
use super::topology::Topology;
use super::value::{Fold, Piece};
use crate::kary;
use chorus_core::RedData;
use serde::{Deserialize, Serialize};

const PARTIAL: u32 = 0;
const RESULT: u32 = 1;
const DOWN: u32 = 2;

/// Where the result of a reduction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// To the member of this rank only.
    Root(u32),
    /// To every member.
    All,
    /// To every member, as an empty value (a barrier).
    Barrier,
}

/// One member's reduction.
pub struct Reduce {
    fold: Fold,
    delivery: Delivery,
    acc: Option<Piece>,
    waiting: u32,
}

impl Reduce {
    /// A reduction of this member's `value` with `fold`, delivered as `delivery`.
    pub fn new(fold: Fold, value: RedData, rank: u32, delivery: Delivery) -> Self {
        Reduce {
            acc: Some(fold.piece(rank, value)),
            fold,
            delivery,
            waiting: 0,
        }
    }

    fn down(&self, me: &dyn Topology, v: RedData, out: &mut Out) -> Step {
        for pe in children(me) {
            out.send(pe, DOWN, Piece::Value(v.clone()));
        }
        Step::Done(Some(match self.delivery {
            Delivery::Barrier => RedData::List(Vec::new()),
            _ => v,
        }))
    }

    /// Every partial of this member's subtree is in.
    fn climb(&mut self, me: &dyn Topology, out: &mut Out) -> Step {
        let acc = self
            .acc
            .take()
            .expect("the partial is kept until it climbs");
        if me.rank() != 0 {
            out.send(
                me.parent_pe().expect("a non-root has a parent"),
                PARTIAL,
                acc,
            );
            return match self.delivery {
                Delivery::Root(root) if root != me.rank() && !relays_down(me, root) => {
                    Step::Done(None)
                }
                _ => Step::Pending,
            };
        }
        let v = ok(self.fold.finish(acc));
        match self.delivery {
            Delivery::Root(0) => Step::Done(Some(v)),
            Delivery::Root(root) => {
                send_down_to(me, root, RESULT, Piece::Value(v), out);
                Step::Done(None)
            }
            Delivery::All | Delivery::Barrier => self.down(me, v, out),
        }
    }
}

impl Machine for Reduce {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Step {
        self.waiting = kary::num_children(me.rank(), me.size(), me.k());
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Step::Pending
        }
    }

    fn receive(
        &mut self,
        me: &dyn Topology,
        _from: u32,
        tag: u32,
        piece: Piece,
        out: &mut Out,
    ) -> Step {
        match tag {
            PARTIAL => {
                let acc = self.acc.take().expect("partials arrive before the climb");
                self.acc = Some(ok(self.fold.merge(acc, piece)));
                self.waiting -= 1;
                if self.waiting == 0 {
                    self.climb(me, out)
                } else {
                    Step::Pending
                }
            }
            RESULT => match self.delivery {
                Delivery::Root(root) if root == me.rank() => Step::Done(Some(piece.value())),
                Delivery::Root(root) => {
                    send_down_to(me, root, RESULT, piece, out);
                    Step::Done(None)
                }
                _ => panic!("collective protocol: a result for an all-reduce"),
            },
            _ => self.down(me, piece.value(), out),
        }
    }
}
