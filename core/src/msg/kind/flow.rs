//! Flow control: credit for windowed messages (handled in `engine/flow.rs`).

use super::{family, Body};
use serde::{Deserialize, Serialize};

family! {
    /// Flow control.
    FlowMsg {
        Credit = 18 => Some("chorus::credit");
    }
}

/// Credit for `n` windowed messages of the receiver's that the sender handled.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Credit {
    pub(crate) n: u64,
}

impl Body for Credit {}
