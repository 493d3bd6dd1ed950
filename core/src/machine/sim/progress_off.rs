//! The sim layer's progress spinner when chorus-core is built without its `cli`
//! feature: no indicatif, nothing shown.

/// A spinner that never shows.
pub(crate) struct Progress;

impl Progress {
    pub(crate) fn new() -> Self {
        Progress
    }

    /// Nothing to report without a terminal spinner.
    pub(crate) fn tick(&mut self, _events: u64, _virtual_ns: u64, _pending: usize) {}

    /// Nothing to remove.
    pub(crate) fn finish(&mut self) {}
}
