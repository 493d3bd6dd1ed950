//! Reductions: partial results going up a collection's tree (handled in
//! `engine/reduce.rs`).

use super::{family, Body};
use crate::base::ids::CollectionId;
use crate::msg::callback::Callback;
use crate::msg::reduction::{Partial, Reducer};
use serde::{Deserialize, Serialize};

family! {
    /// Contributions to reductions.
    ReduceMsg {
        Contribute = 8 => Some("chorus::reduction");
        HomeContribute = 17 => Some("chorus::reduction");
    }
}

/// A child's combined contributions to reduction `seq`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Contribute {
    pub(crate) coll: CollectionId,
    pub(crate) seq: u64,
    pub(crate) reducer: Reducer,
    /// Boxed: the largest fields of any kind, on a rare message, would otherwise
    /// make every envelope bigger.
    pub(crate) body: Box<(Callback, Partial)>,
}

/// A contribution of an element away from its home, which counts it there.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HomeContribute {
    pub(crate) coll: CollectionId,
    pub(crate) seq: u64,
    pub(crate) reducer: Reducer,
    pub(crate) body: Box<(Callback, Partial)>,
}

/// Bytes of a contribution's body on a wire.
fn contribution_bytes(body: &(Callback, Partial)) -> u64 {
    24 + bincode::serialized_size(&body.0).unwrap_or(0)
        + bincode::serialized_size(&body.1).unwrap_or(0)
}

impl Body for Contribute {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        contribution_bytes(&self.body)
    }
}

impl Body for HomeContribute {
    fn needs(&self) -> Option<CollectionId> {
        Some(self.coll)
    }
    fn body_bytes(&self) -> u64 {
        contribution_bytes(&self.body)
    }
}
