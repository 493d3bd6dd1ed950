//! Load balancing of chare arrays: elements' load on its way up to PE 0, the plan
//! coming down, and the resume that ends a step (handled in `engine/balance.rs`).

use super::{family, Body};
use crate::base::ids::{CollectionId, IndexKey, Pe};
use serde::{Deserialize, Serialize};

family! {
    /// AtSync load balancing.
    BalanceMsg {
        SyncHome = 19 => Some("chorus::lb_sync");
        SyncUp = 20 => Some("chorus::lb_sync");
        Plan = 21 => Some("chorus::lb_plan");
        Arrived = 22 => Some("chorus::lb_plan");
        Resume = 23 => Some("chorus::lb_resume");
        StartLb = 36 => Some("chorus::lb_start");
    }
}

pub(crate) use super::lb_records::{ObjRecord, PeRecord};

/// An element away from its home reports its step `round` to the home, which counts it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SyncHome {
    pub(crate) coll: CollectionId,
    pub(crate) round: u32,
    pub(crate) obj: ObjRecord,
}

/// A subtree's records for step `round`, to the tree parent (in the compact form
/// of `lb_records`: the gather's bytes are most of a balancing step's cost).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SyncUp {
    pub(crate) coll: CollectionId,
    pub(crate) round: u32,
    #[serde(with = "super::lb_records::objs")]
    pub(crate) objs: Vec<ObjRecord>,
    #[serde(with = "super::lb_records::pes")]
    pub(crate) pes: Vec<PeRecord>,
}

/// One PE's part of the plan of a step: the elements it sends away, how many it
/// receives, and the load (seconds) the moves leave it with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlanPart {
    pub(crate) pe: Pe,
    pub(crate) out: Vec<(IndexKey, Pe)>,
    pub(crate) incoming: u32,
    /// PE 0's figure, so the PE's trace records the load the database assigned it
    /// (a PE with no part keeps the load it was measured at).
    pub(crate) load_after: f64,
}

/// PE 0's plan of step `round` for the subtree of the PE it is sent to, down the PE
/// tree (a PE with no part has nothing to move, but still answers `Arrived`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub(crate) coll: CollectionId,
    pub(crate) round: u32,
    pub(crate) parts: Vec<PlanPart>,
    /// Whether the strategy ran (false: a step ended without moves because it came
    /// too soon after the last balancing step), so traces record only real steps.
    pub(crate) balanced: bool,
}

/// Every element the plan of step `round` sends into the subtree of the PE that
/// sends this (to its tree parent) has arrived.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Arrived {
    pub(crate) coll: CollectionId,
    pub(crate) round: u32,
}

/// Step `round` is over: every element of the array resumes where it is; passed down
/// the PE tree from PE 0.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Resume {
    pub(crate) coll: CollectionId,
    pub(crate) round: u32,
}

/// A program asked for a balancing step of array `coll` (`ctx.start_lb` under
/// `--lb-manual`), to PE 0, which runs the step that waits for it or the next one.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StartLb {
    pub(crate) coll: CollectionId,
}

impl Body for StartLb {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
}

impl Body for SyncHome {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        32 + self.obj.key.len() as u64 + 24 * self.obj.comm.len() as u64
    }
}

impl Body for SyncUp {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        let outside = self.objs.iter().map(|o| o.pe);
        match outside
            .chain(self.pes.iter().map(|p| p.pe))
            .find(|&pe| pe as usize >= npes)
        {
            Some(pe) => Err(format!("a load record names PE {pe} of {npes}")),
            None => Ok(()),
        }
    }
    fn body_bytes(&self) -> u64 {
        // The family's variant (4), the collection (8) and round (4), then the
        // records as encoded.
        16 + super::lb_records::wire_len(&self.objs, &self.pes)
    }
}

impl Body for Plan {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        if let Some(p) = self.parts.iter().find(|p| p.pe as usize >= npes) {
            return Err(format!("a plan has a part for PE {} of {npes}", p.pe));
        }
        let mut to = self
            .parts
            .iter()
            .flat_map(|p| p.out.iter().map(|(_, to)| *to));
        match to.find(|&to| to as usize >= npes) {
            Some(to) => Err(format!("a plan sends an element to PE {to} of {npes}")),
            None => Ok(()),
        }
    }
    fn body_bytes(&self) -> u64 {
        let parts = self.parts.iter();
        21 + parts.map(|p| 16 + 16 * p.out.len() as u64).sum::<u64>()
    }
}

impl Body for Arrived {}

impl Body for Resume {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
}
