//! The progress spinner when chorus-core is built without its `cli` feature: no
//! indicatif, nothing shown.

use std::time::Duration;

/// A spinner that never shows.
pub(crate) struct Progress;

impl Progress {
    pub(crate) fn new(_what: &'static str, _shown: bool) -> Self {
        Progress
    }

    /// Nothing to report without a terminal spinner.
    pub(crate) fn tick(&mut self, _message: impl FnOnce(Duration) -> String) {}

    /// Nothing to remove.
    pub(crate) fn finish(&mut self) {}
}
