//! The end of a job, and of a PE: an exit going down the PE trees, a machine layer's
//! notice that a PE failed (handled in `engine/exit.rs`).

use super::error_text;
use super::{check_root, family, Body};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use serde::{Deserialize, Serialize};

family! {
    /// Exit and failure.
    ExitMsg {
        Exit = 13 => Some("chorus::exit");
        PeFailed = 14 => Some("chorus::pe_failed");
    }
}

/// The job ends, with `error` if it failed; passed down the tree rooted at `root`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Exit {
    pub(crate) root: Pe,
    #[serde(with = "error_text")]
    pub(crate) error: Option<RuntimeError>,
}

/// The machine layer's notice that PE `pe` failed, for a subscriber's callback.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PeFailed {
    pub(crate) pe: Pe,
    pub(crate) callback: Callback,
}

impl Body for Exit {
    fn check(&self, npes: usize) -> Result<(), String> {
        check_root(self.root, npes)
    }
}

impl Body for PeFailed {
    fn body_bytes(&self) -> u64 {
        4 + bincode::serialized_size(&self.callback).unwrap_or(0)
    }
}
