//! The ledger of quiescence detection: every change of a PE's count of counted
//! messages sent and processed goes through here. Mattern's waves
//! (`quiescence.rs`) find quiescence when the sums of both agree, so every counted
//! message sent must in the end be processed, dropped with a reason, or lost with a
//! failed PE; a message that waits and runs later is counted again on both sides.
//! `scripts/ledger-check.py` fails CI if any other file touches the counters.

use crate::engine::report::PeReport;

/// Why counted messages were dropped: they count as processed, or quiescence would
/// wait for them forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Refused by the port on the way out, or bytes that did not decode on the way in.
    OnWire,
    /// Lost with a failed PE: queued or held there, or sent to it.
    WithPe,
    /// For an array element that was deleted (taken to run, so already processed).
    ToDeleted,
}

/// One PE's counts of counted messages.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    sent: u64,
    processed: u64,
    dropped_on_wire: u64,
    dropped_to_deleted: u64,
}

impl Ledger {
    /// Counted messages of `weight` left this PE (or joined a run that will).
    #[inline]
    pub(crate) fn sent(&mut self, weight: u64) {
        self.sent += weight;
    }

    /// Counted messages of `weight` are taken from the queue to run (or to wait for
    /// their target, which `requeued` counts as sent again).
    pub(crate) fn processed(&mut self, weight: u64) {
        self.processed += weight;
    }

    /// Counted messages of `weight` will never run, for `why`.
    pub(crate) fn dropped(&mut self, weight: u64, why: Dropped) {
        self.processed += weight;
        if why == Dropped::OnWire {
            self.dropped_on_wire += weight;
        }
    }

    /// Counted messages of `weight`, counted processed when dispatch took them to
    /// run, found no target for `why` (`Dropped::ToDeleted`): reported, not run.
    pub(crate) fn undelivered(&mut self, weight: u64, why: Dropped) {
        if why == Dropped::ToDeleted {
            self.dropped_to_deleted += weight;
        }
    }

    /// Counted messages of `weight` that waited for their target are back in line:
    /// sent again, as they will be processed again.
    pub(crate) fn requeued(&mut self, weight: u64) {
        self.sent += weight;
    }

    /// `n` messages of a run taken to run were put back unrun (the handler yielded):
    /// processed when they run.
    pub(crate) fn put_back(&mut self, n: u64) {
        self.processed -= n;
    }

    /// The counters a quiescence wave takes: (sent, processed).
    pub(crate) fn counters(&self) -> (u64, u64) {
        (self.sent, self.processed)
    }

    /// Write the counts into this PE's report, at the end of the run.
    pub(crate) fn report(&self, report: &mut PeReport) {
        report.sent = self.sent;
        report.processed = self.processed;
        report.dropped_on_wire = self.dropped_on_wire;
        report.dropped_to_deleted = self.dropped_to_deleted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_count_as_processed_and_put_back_undoes_a_run() {
        let mut l = Ledger::default();
        l.sent(5);
        l.processed(3);
        l.put_back(1);
        l.dropped(2, Dropped::OnWire);
        l.dropped(1, Dropped::WithPe);
        l.requeued(1);
        l.undelivered(3, Dropped::ToDeleted);
        assert_eq!(l.counters(), (6, 5));
        let mut report = PeReport::new(0);
        l.report(&mut report);
        assert_eq!(
            (report.sent, report.processed, report.dropped_on_wire),
            (6, 5, 2)
        );
        assert_eq!(report.dropped_to_deleted, 3);
    }
}
