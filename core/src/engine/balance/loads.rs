//! A traced PE's own load in each balancing step, recorded at the step's resume as a
//! `chorus::lb_pe_load` phase on its track: the load PE 0's database measured it at
//! before the step and the load the strategy's moves assigned it.
//!
//! The PE computes the figure before the step from what it sent up (its background
//! and the records of the elements that synced on it) in the order PE 0 adds them
//! (by element key), so both are the same `f64`; the figure after is PE 0's own,
//! carried by the PE's part of the plan (a PE with no part has no moves, so its load
//! stays the one before).

use super::PeRuntime;
use crate::base::ids::{CollectionId, IndexKey};
use crate::msg::kind::balance::PlanPart;
use crate::trace::ns;

/// What a traced PE knows of its load in one step of one array.
#[derive(Default)]
pub(super) struct PeLoads {
    /// Its load outside the array's handlers, once it sent its records up.
    background: f64,
    /// The elements that synced here in the step and the load each reported.
    objs: Vec<(IndexKey, f64)>,
    /// PE 0's load for it after the moves, if its plan gave it a part.
    after: Option<f64>,
    /// Whether the step balanced (the plan said so).
    balanced: bool,
}

impl PeLoads {
    /// The load before the step, added as PE 0 adds it: background, then elements
    /// by key.
    fn before(&mut self) -> f64 {
        self.objs.sort_by(|a, b| a.0.cmp(&b.0));
        self.objs.iter().fold(self.background, |l, (_, o)| l + o)
    }
}

/// The trace's id of array `coll`: its creator in the high 32 bits.
pub(crate) fn array_arg(coll: CollectionId) -> u64 {
    u64::from(coll.creator) << 32 | u64::from(coll.seq)
}

impl PeRuntime {
    /// This PE's account of step `round` of `coll`, if it is traced.
    fn pe_loads(&mut self, coll: CollectionId, round: u32) -> Option<&mut PeLoads> {
        if !self.core.traced() {
            return None;
        }
        let steps = self.core.syncs.steps.get_mut();
        Some(steps.loads.entry((coll, round)).or_default())
    }

    /// Element `key` synced here in step `round` with `load`.
    pub(super) fn note_obj_load(
        &mut self,
        coll: CollectionId,
        round: u32,
        key: &IndexKey,
        load: f64,
    ) {
        if let Some(l) = self.pe_loads(coll, round) {
            l.objs.push((key.clone(), load));
        }
    }

    /// This PE sent its records of step `round` up with `background`.
    pub(super) fn note_background(&mut self, coll: CollectionId, round: u32, background: f64) {
        if let Some(l) = self.pe_loads(coll, round) {
            l.background = background;
        }
    }

    /// The plan of step `round` reached this PE with its part, if it has one.
    pub(super) fn note_plan(
        &mut self,
        (coll, round): (CollectionId, u32),
        mine: Option<&PlanPart>,
        balanced: bool,
    ) {
        if let Some(l) = self.pe_loads(coll, round) {
            l.balanced = balanced;
            l.after = mine.map(|p| p.load_after);
        }
    }

    /// Step `round` of `coll` resumes here: record this PE's loads in it, if it
    /// balanced, and forget them.
    pub(super) fn record_pe_load(&mut self, coll: CollectionId, round: u32) {
        let Some(steps) = self.core.syncs.steps.built_mut() else {
            return;
        };
        let Some(mut l) = steps.loads.remove(&(coll, round)) else {
            return;
        };
        if !l.balanced {
            return;
        }
        let before = l.before();
        let after = l.after.unwrap_or(before);
        let args = [
            ("round", u64::from(round)),
            ("array", array_arg(coll)),
            ("load_before_ns", ns(before)),
            ("load_after_ns", ns(after)),
        ];
        let now = ns(self.core.now());
        if let Some(t) = self.core.trace_mut() {
            t.phase(now, 0, chorus_traces::LB_PE_LOAD, &args);
        }
    }
}
