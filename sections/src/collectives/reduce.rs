//! Reductions up the k-ary tree: reduce to any root, allreduce, barrier — and, with
//! the `Concat` and `Gather` folds, gather, gatherv and the tree allgather.
//!
//! Partials climb to rank 0, which finishes the fold; a reduce to another root then
//! sends the result down to it (directly with a roster, else along the tree path),
//! an allreduce sends it down the whole tree.

use super::error::CollectiveError;
use super::machine::{children, relays_down, send_down_to, Machine, Out, Received, Step, Stepped};
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
    fn climb(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
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
            return Ok(match self.delivery {
                Delivery::Root(root) if root != me.rank() && !relays_down(me, root) => {
                    Step::Done(None)
                }
                _ => Step::Pending,
            });
        }
        let v = self.fold.finish(acc)?;
        Ok(match self.delivery {
            Delivery::Root(0) => Step::Done(Some(v)),
            Delivery::Root(root) => {
                send_down_to(me, root, RESULT, Piece::Value(v), out);
                Step::Done(None)
            }
            Delivery::All | Delivery::Barrier => self.down(me, v, out),
        })
    }
}

impl Machine for Reduce {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        self.waiting = kary::num_children(me.rank(), me.size(), me.k());
        if self.waiting == 0 {
            self.climb(me, out)
        } else {
            Ok(Step::Pending)
        }
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let Received { tag, piece, .. } = got;
        match tag {
            PARTIAL => {
                let Some(acc) = self.acc.take() else {
                    return Err(CollectiveError::Protocol(
                        "a partial result after this member's subtree was complete".into(),
                    ));
                };
                self.acc = Some(self.fold.merge(acc, piece)?);
                self.waiting -= 1;
                if self.waiting == 0 {
                    self.climb(me, out)
                } else {
                    Ok(Step::Pending)
                }
            }
            RESULT => match self.delivery {
                Delivery::Root(root) if root == me.rank() => Ok(Step::Done(Some(piece.value()?))),
                Delivery::Root(root) => {
                    send_down_to(me, root, RESULT, piece, out);
                    Ok(Step::Done(None))
                }
                _ => Err(CollectiveError::Protocol(
                    "a rooted reduction's result reached a member of one for every member".into(),
                )),
            },
            _ => Ok(self.down(me, piece.value()?, out)),
        }
    }
}
