//! The mock-ups: for each tuned collective, the semantically equivalent compositions of
//! other section collectives from the performance guidelines (PGMPITuneLib, GL1–GL22)
//! whose both sides chorus has, plus the other allgather algorithms.
//!
//! | collective | mock-up | guideline |
//! | --- | --- | --- |
//! | allgather | gather + broadcast | GL1 |
//! | allgather | tree, bruck/k, standard-exchange/k, ring (another algorithm) | — |
//! | alltoall | pairwise, bruck (another algorithm) | — |
//! | allreduce | reduce + broadcast | GL5 |
//! | allreduce | allgather (Bruck) + local reduce | inverse of GL3 |
//! | gather | allgather, kept at the root | GL11 |
//! | gather | gatherv, concatenated at the root | GL12 |
//! | reduce | allreduce, kept at the root | GL14 |
//! | scan | exscan + local reduce | GL20 |
//!
//! Left out: the guidelines through scatter, reduce-scatter and alltoall (chorus has
//! no scatter or reduce-scatter, and alltoall's composition guidelines need equal,
//! known block lengths: GL2, GL6–GL8, GL10, GL15–GL19, GL21, GL22), GL3 and GL13 (they place
//! each block at rank × length, which needs every member's length to be equal and
//! known, while section values may differ in length), GL4 and GL9 (chorus's allgather
//! already takes blocks of any length; a broadcast's non-roots do not know the message
//! size, so broadcast is not tuned).
//!
//! Rooted parts of a composition run on the member's own tree (not re-rooted), which is
//! correct for every section; the tuner measures root 0.

use super::chain::Chain;
use crate::collectives::alltoall::Alltoall;
use crate::collectives::choice::Allgather;
use crate::collectives::error::CollectiveError;
use crate::collectives::machine::Machine;
use crate::collectives::op::Op;
use crate::collectives::reduce::Delivery;
use crate::collectives::value::{concat, Fold, Piece};
use chorus_core::{RedData, Reducer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A section collective the tuner knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Collective {
    /// Allgather (with `Allgather::Auto`).
    Allgather,
    /// Allreduce.
    Allreduce,
    /// Alltoall (with `Alltoall::Auto`).
    Alltoall,
    /// Gather.
    Gather,
    /// Reduce.
    Reduce,
    /// Inclusive scan.
    Scan,
}

/// Every tuned collective.
pub const COLLECTIVES: [Collective; 6] = [
    Collective::Allgather,
    Collective::Allreduce,
    Collective::Alltoall,
    Collective::Gather,
    Collective::Reduce,
    Collective::Scan,
];

impl Collective {
    /// Lower-case name, as in profiles and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allgather => "allgather",
            Collective::Allreduce => "allreduce",
            Collective::Alltoall => "alltoall",
            Collective::Gather => "gather",
            Collective::Reduce => "reduce",
            Collective::Scan => "scan",
        }
    }

    /// The collective named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        COLLECTIVES.into_iter().find(|c| c.name() == name)
    }

    /// True if only the root gets a result.
    pub fn rooted(self) -> bool {
        matches!(self, Collective::Gather | Collective::Reduce)
    }

    /// Its mock-ups.
    pub fn mock_ups(self) -> Vec<MockUp> {
        match self {
            Collective::Allgather => vec![
                MockUp::GatherBroadcast,
                MockUp::AllgatherBy(Allgather::Tree),
                MockUp::AllgatherBy(Allgather::Bruck(1)),
                MockUp::AllgatherBy(Allgather::Bruck(3)),
                MockUp::AllgatherBy(Allgather::StandardExchange(1)),
                MockUp::AllgatherBy(Allgather::Ring),
            ],
            Collective::Allreduce => vec![MockUp::ReduceBroadcast, MockUp::AllgatherReduceLocal],
            Collective::Alltoall => vec![
                MockUp::AlltoallBy(Alltoall::Pairwise),
                MockUp::AlltoallBy(Alltoall::Bruck),
            ],
            Collective::Gather => vec![MockUp::GatherAsAllgather, MockUp::GatherAsGatherv],
            Collective::Reduce => vec![MockUp::ReduceAsAllreduce],
            Collective::Scan => vec![MockUp::ExscanReduceLocal],
        }
    }

    /// The tuned collective `op` is, if it is one (broadcast, barrier, exscan and
    /// gatherv are not tuned).
    pub(crate) fn of(op: &Op) -> Option<Self> {
        match op {
            Op::Allgather { .. } => Some(Collective::Allgather),
            Op::Alltoall { .. } => Some(Collective::Alltoall),
            Op::Reduce { fold, delivery, .. } => match (fold.reducer(), delivery) {
                (Reducer::Gather, _) | (_, Delivery::Barrier) => None,
                (Reducer::Concat, Delivery::All) => Some(Collective::Allgather),
                (Reducer::Concat, Delivery::Root(_)) => Some(Collective::Gather),
                (_, Delivery::All) => Some(Collective::Allreduce),
                (_, Delivery::Root(_)) => Some(Collective::Reduce),
            },
            Op::Scan {
                exclusive: false, ..
            } => Some(Collective::Scan),
            _ => None,
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A composition of other collectives that computes what a collective computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MockUp {
    /// Allgather as gather to rank 0 + broadcast (GL1).
    GatherBroadcast,
    /// Allgather by this algorithm instead of the automatic choice.
    AllgatherBy(Allgather),
    /// Alltoall by this algorithm instead of the automatic choice.
    AlltoallBy(Alltoall),
    /// Allreduce as reduce to rank 0 + broadcast (GL5).
    ReduceBroadcast,
    /// Allreduce as a Bruck allgather of the values + a local fold in rank order.
    AllgatherReduceLocal,
    /// Gather as allgather, kept at the root (GL11).
    GatherAsAllgather,
    /// Gather as gatherv, concatenated at the root (GL12).
    GatherAsGatherv,
    /// Reduce as allreduce, kept at the root (GL14).
    ReduceAsAllreduce,
    /// Inclusive scan as exscan + a local reduce (GL20).
    ExscanReduceLocal,
}

impl MockUp {
    /// The collective it stands in for.
    pub fn collective(self) -> Collective {
        match self {
            MockUp::GatherBroadcast | MockUp::AllgatherBy(_) => Collective::Allgather,
            MockUp::ReduceBroadcast | MockUp::AllgatherReduceLocal => Collective::Allreduce,
            MockUp::AlltoallBy(_) => Collective::Alltoall,
            MockUp::GatherAsAllgather | MockUp::GatherAsGatherv => Collective::Gather,
            MockUp::ReduceAsAllreduce => Collective::Reduce,
            MockUp::ExscanReduceLocal => Collective::Scan,
        }
    }

    /// Name, as in profiles (unique among its collective's mock-ups).
    pub fn name(self) -> String {
        match self {
            MockUp::GatherBroadcast => "gather+broadcast".into(),
            MockUp::AllgatherBy(a) => a.name(),
            MockUp::AlltoallBy(a) => a.name().into(),
            MockUp::ReduceBroadcast => "reduce+broadcast".into(),
            MockUp::AllgatherReduceLocal => "allgather+local-reduce".into(),
            MockUp::GatherAsAllgather => "allgather".into(),
            MockUp::GatherAsGatherv => "gatherv".into(),
            MockUp::ReduceAsAllreduce => "allreduce".into(),
            MockUp::ExscanReduceLocal => "exscan+local-reduce".into(),
        }
    }

    /// The guideline it checks, if the paper lists it.
    pub fn guideline(self) -> Option<&'static str> {
        match self {
            MockUp::GatherBroadcast => Some("GL1"),
            MockUp::ReduceBroadcast => Some("GL5"),
            MockUp::GatherAsAllgather => Some("GL11"),
            MockUp::GatherAsGatherv => Some("GL12"),
            MockUp::ReduceAsAllreduce => Some("GL14"),
            MockUp::ExscanReduceLocal => Some("GL20"),
            MockUp::AllgatherBy(_) | MockUp::AlltoallBy(_) | MockUp::AllgatherReduceLocal => None,
        }
    }

    /// True if it runs only on members that know every rank's PE.
    pub fn needs_roster(self) -> bool {
        matches!(
            self,
            MockUp::AllgatherReduceLocal
                | MockUp::AlltoallBy(_)
                | MockUp::AllgatherBy(
                    Allgather::Bruck(_) | Allgather::StandardExchange(_) | Allgather::Ring
                )
        )
    }
}

/// The default or a mock-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Impl {
    /// The collective's own implementation.
    Default,
    /// A mock-up.
    MockUp(MockUp),
}

impl Impl {
    /// Name, as in profiles: `default` or the mock-up's.
    pub fn name(self) -> String {
        match self {
            Impl::Default => "default".into(),
            Impl::MockUp(m) => m.name(),
        }
    }

    /// The implementation of `collective` named `name`.
    pub fn parse(collective: Collective, name: &str) -> Option<Self> {
        if name == "default" {
            return Some(Impl::Default);
        }
        collective
            .mock_ups()
            .into_iter()
            .find(|m| m.name() == name)
            .map(Impl::MockUp)
    }
}

/// `op` as `choice` runs it: unchanged for the default, for a mock-up of another
/// collective, or for one the member cannot run (every member decides alike: they
/// share the collective, the size and whether they have a roster).
pub(crate) fn apply(choice: Impl, op: Op, has_roster: bool) -> Op {
    let Impl::MockUp(m) = choice else {
        return op;
    };
    if Collective::of(&op) != Some(m.collective()) || (m.needs_roster() && !has_roster) {
        return op;
    }
    match (m, op) {
        (MockUp::AllgatherBy(Allgather::Tree), Op::Allgather { value, .. }) => Op::Reduce {
            fold: concat_fold(&value),
            value,
            delivery: Delivery::All,
        },
        (MockUp::AllgatherBy(Allgather::Tree), op) => op,
        (MockUp::AlltoallBy(algorithm), Op::Alltoall { blocks, .. }) => {
            Op::Alltoall { algorithm, blocks }
        }
        (MockUp::AllgatherBy(algorithm), Op::Allgather { value, .. })
        | (MockUp::AllgatherBy(algorithm), Op::Reduce { value, .. }) => {
            Op::Allgather { algorithm, value }
        }
        (mock_up, op) => Op::MockUp {
            mock_up,
            op: Box::new(op),
        },
    }
}

fn concat_fold(value: &RedData) -> Fold {
    Fold::new(Reducer::Concat, value).expect("an allgather's value concatenates")
}

/// The state machine of member `rank` running `op` as `mock_up` (`apply` checked they fit).
pub(crate) fn machine(mock_up: MockUp, op: Op, rank: u32, has_roster: bool) -> Box<dyn Machine> {
    let build = move |op: Op| op.machine(rank, has_roster);
    let broadcast_from_0 = move |v: Option<RedData>| {
        build(Op::Broadcast {
            root: 0,
            value: if rank == 0 { v } else { None },
        })
    };
    let (value, fold, delivery) = combined(mock_up, op);
    let root = match delivery {
        Delivery::Root(r) => r,
        _ => 0,
    };
    let keep_at_root = move |v: Option<RedData>| if rank == root { v } else { None };
    match mock_up {
        MockUp::GatherBroadcast | MockUp::ReduceBroadcast => {
            let reduce = build(Op::Reduce {
                fold,
                value,
                delivery: Delivery::Root(0),
            });
            Box::new(Chain::new(reduce).then(broadcast_from_0))
        }
        MockUp::AllgatherReduceLocal => {
            let gather = build(Op::Allgather {
                algorithm: Allgather::Bruck(1),
                value: RedData::List(vec![value]),
            });
            fold_gathered(gather, fold)
        }
        MockUp::GatherAsAllgather | MockUp::ReduceAsAllreduce => {
            let all = build(Op::Reduce {
                fold,
                value,
                delivery: Delivery::All,
            });
            Box::new(Chain::new(all).finish(move |v| Ok(keep_at_root(v))))
        }
        MockUp::GatherAsGatherv => {
            let gatherv = build(Op::Reduce {
                fold: Fold::new(Reducer::Gather, &value).expect("any value gathers"),
                value,
                delivery: Delivery::Root(root),
            });
            Box::new(Chain::new(gatherv).finish(|v| {
                v.map(|v| match v {
                    RedData::List(items) => concat((0..).zip(items).collect()),
                    other => Err(unwrapped("a gatherv", Some(other))),
                })
                .transpose()
            }))
        }
        MockUp::ExscanReduceLocal => {
            let own = value.clone();
            let exscan = build(Op::Scan {
                fold,
                value,
                exclusive: true,
            });
            fold_own_in(exscan, fold, own, rank)
        }
        MockUp::AllgatherBy(_) | MockUp::AlltoallBy(_) => {
            panic!("an allgather or alltoall algorithm is not a composition")
        }
    }
}

/// What a mock-up of `op` combines: each member's value, the fold, and where the
/// result goes.
fn combined(mock_up: MockUp, op: Op) -> (RedData, Fold, Delivery) {
    match op {
        Op::Reduce {
            value,
            fold,
            delivery,
        } => (value, fold, delivery),
        Op::Allgather { value, .. } => {
            let fold = concat_fold(&value);
            (value, fold, Delivery::All)
        }
        Op::Scan { value, fold, .. } => (value, fold, Delivery::All),
        other => panic!("mock-up {mock_up:?} of {other:?}"),
    }
}

/// After an allgather of every member's wrapped value, fold them all locally.
fn fold_gathered(gather: Box<dyn Machine>, fold: Fold) -> Box<dyn Machine> {
    Box::new(Chain::new(gather).finish(move |v| {
        let items = match v {
            Some(RedData::List(items)) => items,
            other => return Err(unwrapped("an allgather of wrapped values", other)),
        };
        let ranked = (0..).zip(items).collect();
        fold.finish(Piece::Ranked(ranked)).map(Some)
    }))
}

/// After an exclusive scan, fold this member's own value into its prefix (rank 0
/// has none: its own value alone).
fn fold_own_in(exscan: Box<dyn Machine>, fold: Fold, own: RedData, rank: u32) -> Box<dyn Machine> {
    Box::new(Chain::new(exscan).finish(move |v| {
        let Some(prefix) = v else {
            return Err(unwrapped("an exscan", None));
        };
        if rank == 0 {
            fold.finish(fold.piece(0, own)).map(Some)
        } else {
            fold.step(prefix, own).map(Some)
        }
    }))
}

/// A phase's result that is not what the phase gives when every member runs it.
fn unwrapped(phase: &str, got: Option<RedData>) -> CollectiveError {
    let got = got.map_or("nothing".to_string(), |v| format!("{} data", v.kind()));
    CollectiveError::Protocol(format!("{phase} gave {got}"))
}
