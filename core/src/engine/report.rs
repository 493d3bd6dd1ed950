//! One PE's statistics, errors and published outputs, as its engine ends the run
//! (`api::report::RunReport` gathers them).

use crate::base::error::RuntimeError;
use crate::base::ids::Pe;

/// One PE's statistics and outputs.
#[derive(Debug, Clone, Default)]
pub struct PeReport {
    /// The PE.
    pub pe: Pe,
    /// Counted messages it sent.
    pub sent: u64,
    /// Counted messages it processed.
    pub processed: u64,
    /// Messages still queued when the job ended.
    pub unprocessed: u64,
    /// Counted messages lost on the wire, each with its reason in `errors`: damaged
    /// on the way in, or refused on the way out (one error can cover a run of
    /// several messages).
    pub dropped_on_wire: u64,
    /// Counted messages that reached a deleted array element's home after it was
    /// deleted (`destroy_me`, `ArrayProxy::destroy`): not run, counted here.
    pub dropped_to_deleted: u64,
    /// The first [`MAX_ERRORS_KEPT`] errors it saw.
    pub errors: Vec<RuntimeError>,
    /// Errors it saw after the first [`MAX_ERRORS_KEPT`]: counted, not kept.
    pub errors_not_kept: u64,
    /// Values published with `Ctx::publish`, in order.
    pub outputs: Vec<(String, Vec<u8>)>,
    /// Quiescence-detection waves this PE started (PE 0 only).
    pub qd_waves: u64,
    /// True if the job ended because of an error.
    pub aborted: bool,
    /// The array load-balancing steps it decided (PE 0 only), in order.
    pub balance: Vec<BalanceStep>,
    /// Async tasks (`Ctx::spawn`) still waiting when the job ended: each awaited an
    /// answer that never came.
    pub tasks_waiting: u64,
    /// Replies to asks that had already timed out (or were answered), dropped.
    pub late_replies: u64,
    /// What its chares started and left unfinished when the job ended
    /// (`Chare::unfinished`), one line each.
    pub unfinished: Vec<String>,
    /// True if the job ended at quiescence, by `exit_on_quiescence` or a quiescence
    /// callback that exits (PE 0 only): nothing unfinished then can ever finish.
    pub exit_at_quiescence: bool,
}

/// One load-balancing step of a chare array, as PE 0 decided it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BalanceStep {
    /// The step: how many `at_sync` calls each element had made before it.
    pub round: u32,
    /// The strategy's name.
    pub strategy: String,
    /// Elements measured.
    pub objects: usize,
    /// Elements moved.
    pub migrations: usize,
    /// Most loaded PE over the mean, as measured, and as the moves leave it.
    pub before: f64,
    /// The same after the moves, from the measured loads.
    pub after: f64,
    /// Wall-clock seconds the strategy took to decide.
    pub decide_s: f64,
    /// When the decision started and when every element was in place (the layer's
    /// clock, seconds: virtual on sim).
    pub started: f64,
    /// See `started`.
    pub ended: f64,
    /// Each PE's measured load (seconds) before the step, and as the moves leave it.
    pub loads_before: Vec<f64>,
    /// See `loads_before`.
    pub loads_after: Vec<f64>,
}

/// A rollback to an in-memory checkpoint after PEs failed
/// (`Ctx::checkpoint_in_memory`), as the machine layer did it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Recovery {
    /// When the layer rolled the job back (its clock, seconds: virtual on sim).
    pub at: f64,
    /// The PEs that failed, by the numbers the job was started with.
    pub failed: Vec<Pe>,
    /// The checkpoint the job rolled back to.
    pub epoch: u64,
    /// PEs the job goes on with.
    pub pes: usize,
    /// Messages of the failed epoch in flight between PEs, discarded.
    pub discarded_in_flight: u64,
    /// Messages of the failed epoch queued or waiting on a surviving PE, discarded.
    pub discarded_queued: u64,
}

/// Errors a PE keeps in its report; under `--on-error drop` a job can see one per
/// message, so the rest are only counted (in `errors_not_kept`) to bound its memory.
pub const MAX_ERRORS_KEPT: usize = 1024;

impl PeReport {
    pub(crate) fn new(pe: Pe) -> Self {
        PeReport {
            pe,
            ..Default::default()
        }
    }

    /// Keep `err` if fewer than [`MAX_ERRORS_KEPT`] are kept, else count it.
    pub(crate) fn record_error(&mut self, err: RuntimeError) {
        if self.errors.len() < MAX_ERRORS_KEPT {
            self.errors.push(err);
        } else {
            self.errors_not_kept += 1;
        }
    }
}
