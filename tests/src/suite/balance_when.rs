//! When array balancing steps run besides every Nth step: by hand (`--lb-manual`), a
//! step waiting until a program calls `ctx.start_lb`; by time (`--lb-period-secs`),
//! the first step and then the first one a period after the last balancing step.

use crate::suite::balance::{registry, start_steppers, StepMsg, Stepper, Total, Twist};
use crate::{config, pes};
use chorus_core::{
    ArrayProxy, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, Layer, RunReport, Runtime,
    SyncError,
};
use serde::{Deserialize, Serialize};

/// Asks for a balancing step of the steppers each time the job is quiet (every
/// element waiting in its step), `left` times; quiet once more, it ends the job.
#[derive(Serialize, Deserialize)]
struct Starter {
    arr: ArrayProxy<Stepper, usize>,
    left: u32,
    quiet: Entry<Starter, ()>,
}

impl Chare for Starter {
    type Init = (ArrayProxy<Stepper, usize>, u32, Entry<Starter, ()>);
    type Msg = ();
    fn create((arr, left, quiet): Self::Init, _: &mut Ctx) -> Self {
        Starter { arr, left, quiet }
    }
    fn handle(&mut self, (): (), ctx: &mut Ctx) {
        if self.left == 0 {
            ctx.publish("stuck", &true);
            return ctx.exit();
        }
        self.left -= 1;
        if let Err(e) = ctx.start_lb(&self.arr) {
            return ctx.fail("Starter", e.to_string());
        }
        if let Some(me) = ctx.this_chare::<Starter>() {
            ctx.start_quiescence(Callback::chare(&me, self.quiet));
        }
    }
}

/// 16 steppers on `p` PEs of `layer`, heavy on PE 0, run `steps` steps under
/// `test-greedy` as `cfg` says when; `early` asks for a step from main at once,
/// and the job asks again `on_quiet` times when it is quiet.
fn run_manual(layer: Layer, steps: u32, early: bool, on_quiet: u32) -> RunReport {
    let (mut reg, total_entry) = registry();
    reg.chare::<Starter>("Starter");
    let quiet = reg.entry::<Starter, ()>("quiet", |()| ());
    let mut cfg = config(layer, pes(layer, 4), ErrorPolicy::Abort);
    cfg.array_lb = "test-greedy".to_string();
    cfg.lb_manual = true;
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr = start_steppers(ctx, total_entry, 16, (steps, Twist::None));
            if early {
                ctx.start_lb(&arr).expect("under --lb-manual");
            }
            let starter = ctx.create_chare::<Starter>((arr, on_quiet, quiet), 0);
            ctx.start_quiescence(Callback::chare(&starter, quiet));
        })
        .expect("a manually balanced run")
}

/// Under `--lb-manual` a step balances only when asked: asked each time the job
/// is quiet, every step balances and the job ends; asked once, the second step waits
/// (the job goes quiet with every element in it); asked before the first step
/// reached PE 0, that step balances.
pub fn manual_steps_wait_for_start_lb(layer: Layer) {
    let report = run_manual(layer, 3, false, 3);
    assert_eq!(report.output::<u64>("resumed"), Some(48));
    assert_eq!(report.per_pe[0].balance.len(), 3);
    assert_eq!(report.output::<bool>("stuck"), None);

    let report = run_manual(layer, 3, false, 1);
    assert_eq!(report.per_pe[0].balance.len(), 1, "one step asked for");
    assert_eq!(report.output::<bool>("stuck"), Some(true));
    assert_eq!(report.output::<u64>("resumed"), None);

    let report = run_manual(layer, 1, true, 0);
    assert_eq!(report.per_pe[0].balance.len(), 1, "asked early");
    assert_eq!(report.output::<u64>("resumed"), Some(16));
}

/// Asks for a balancing step each time the job is quiet, `left` times; the first
/// time, before asking, it inserts element [`INSERTED_OUTSIDE`] from outside any
/// step (this chare is no element) while the step waits, and closes the insertions.
/// A newcomer of `Twist::None` does not start by itself: the second time it is
/// sent its first step, after the first step resumed.
#[derive(Clone, Serialize, Deserialize)]
struct OutsideInserter {
    arr: ArrayProxy<Stepper, usize>,
    newcomer: (u32, Twist, Callback),
    inserted: bool,
    left: u32,
    quiet: Entry<OutsideInserter, ()>,
}

/// The element [`OutsideInserter`] inserts: past the array's dense range, homed by
/// [`first_or_last`] on the last PE, which has no element before.
const INSERTED_OUTSIDE: usize = 2_000;

/// Every element on PE 0 but [`INSERTED_OUTSIDE`], on the last PE: PE 0 alone begins
/// a step before the newcomer's, on any number of PEs (under mpirun the job has
/// as many as the launch gives).
fn first_or_last(i: &usize, npes: usize) -> u32 {
    if *i == INSERTED_OUTSIDE {
        npes as u32 - 1
    } else {
        0
    }
}

impl Chare for OutsideInserter {
    type Init = OutsideInserter;
    type Msg = ();
    fn create(init: OutsideInserter, _: &mut Ctx) -> Self {
        init
    }
    fn handle(&mut self, (): (), ctx: &mut Ctx) {
        if self.left == 0 {
            ctx.publish("stuck", &true);
            return ctx.exit();
        }
        if !self.inserted {
            self.inserted = true;
            self.arr
                .insert(ctx, INSERTED_OUTSIDE, self.newcomer.clone());
            self.arr.done_inserting(ctx);
        } else if self.newcomer.1 == Twist::None {
            self.arr.send(ctx, &INSERTED_OUTSIDE, StepMsg::Step);
        }
        self.left -= 1;
        if let Err(e) = ctx.start_lb(&self.arr) {
            return ctx.fail("OutsideInserter", e.to_string());
        }
        if let Some(me) = ctx.this_chare::<OutsideInserter>() {
            ctx.start_quiescence(Callback::chare(&me, self.quiet));
        }
    }
}

/// On sim only, as the two tests after it: which step an element inserted from
/// outside a step joins depends on when its insert reaches its home against the
/// step's own messages (the home may have begun the next step by then), and a
/// newcomer that runs a fixed number of steps then waits for one the others never
/// take. Only sim fixes those times; on threads and mpi such a run can wait for ever.
///
/// An element inserted from outside any step (a chare's handler on PE 0, which has
/// begun the step) while a step runs (waiting at PE 0 under `--lb-manual`), homed on
/// a PE that has no element and so never began the step, joins the next step, as an
/// element inserted inside a step does: the step in progress balances the others,
/// the next one every element, and each resumes once per step it took part in.
pub fn an_element_inserted_from_outside_a_step_joins_the_next() {
    insert_from_outside(Layer::Sim, 0, (1, Twist::Newcomer));
}

/// The same insert from a chare on a PE with no element, which has begun no step,
/// to a home that has begun none: the newcomer joins the step in progress, whose
/// records have all gone up to PE 0, so its record is too late to be balanced and
/// it resumes with that step; the next step balances every element.
pub fn an_element_inserted_too_late_for_a_step_resumes_with_it() {
    insert_from_outside(Layer::Sim, 1, (2, Twist::Newcomer));
}

/// The same newcomer, started only after the step it joined resumed on its home:
/// its `at_sync` in that step resumes at once, unbalanced, and it syncs in the next
/// with the others (it waited for ever for the resume of a step that was over).
pub fn an_element_syncing_in_a_step_already_over_resumes_at_once() {
    insert_from_outside(Layer::Sim, 1, (2, Twist::None));
}

/// Two steps of 4 elements, all on PE 0 of 8 PEs (of the launch's under mpirun),
/// under `--lb-manual`; a chare on `inserter_pe` inserts element
/// [`INSERTED_OUTSIDE`], which takes part in `newcomer_steps` steps (starting as its
/// `twist` says), while the first step waits; both steps end, the second balancing
/// 5 elements.
fn insert_from_outside(layer: Layer, inserter_pe: u32, (newcomer_steps, twist): (u32, Twist)) {
    let (mut reg, total_entry) = registry();
    reg.chare::<OutsideInserter>("OutsideInserter");
    let quiet = reg.entry::<OutsideInserter, ()>("quiet", |()| ());
    let map = reg.map::<usize>("first-or-last", first_or_last);
    let p = pes(layer, 8);
    assert!(
        p >= 2,
        "{layer:?}: the newcomer needs a PE besides PE 0, not {p}"
    );
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.array_lb = "test-greedy".to_string();
    cfg.lb_manual = true;
    let (elements, steps) = (4, 2);
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let total = ctx.create_chare::<Total>((), 0);
            let done = Callback::chare(&total, total_entry);
            let arr =
                ctx.create_array_1d::<Stepper>(elements, (steps, Twist::None, done.clone()), map);
            arr.broadcast(ctx, StepMsg::Step);
            let inserter = OutsideInserter {
                arr,
                newcomer: (newcomer_steps, twist, done),
                inserted: false,
                left: steps,
                quiet,
            };
            let inserter = ctx.create_chare::<OutsideInserter>(inserter, inserter_pe % p);
            ctx.start_quiescence(Callback::chare(&inserter, quiet));
        })
        .expect("a manually balanced run");
    assert_eq!(
        report.output::<bool>("stuck"),
        None,
        "{layer:?}: no step waits"
    );
    let objects: Vec<usize> = report.per_pe[0].balance.iter().map(|b| b.objects).collect();
    assert_eq!(objects, vec![elements, elements + 1], "{layer:?}");
    let resumed = elements as u64 * u64::from(steps) + u64::from(newcomer_steps);
    assert_eq!(report.output::<u64>("resumed"), Some(resumed), "{layer:?}");
}

/// `start_lb` without `--lb-manual` is refused with a typed error; the run goes on.
pub fn start_lb_without_manual_mode_is_refused(layer: Layer) {
    let (reg, total_entry) = registry();
    let mut cfg = config(layer, pes(layer, 2), ErrorPolicy::Abort);
    cfg.array_lb = "test-greedy".to_string();
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr = start_steppers(ctx, total_entry, 4, (1, Twist::None));
            let refused = ctx.start_lb(&arr).err().map(|e| e.to_string());
            ctx.publish("refused", &refused);
        })
        .expect("a run");
    let refused: Option<Option<String>> = report.output("refused");
    assert_eq!(refused, Some(Some(SyncError::NotManual.to_string())));
    assert_eq!(report.output::<u64>("resumed"), Some(4));
}

/// The balancing steps of 16 steppers on 4 PEs over `steps` steps under
/// `--lb-period-secs secs`.
pub fn steps_balanced_every(layer: Layer, secs: f64, steps: u32) -> usize {
    let (reg, total_entry) = registry();
    let mut cfg: Config = config(layer, pes(layer, 4), ErrorPolicy::Abort);
    cfg.array_lb = "test-greedy".to_string();
    cfg.lb_period_secs = Some(secs);
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            start_steppers(ctx, total_entry, 16, (steps, Twist::None));
        })
        .expect("a run balanced by time");
    assert_eq!(report.output::<u64>("resumed"), Some(16 * u64::from(steps)));
    report.per_pe[0].balance.len()
}

/// Under `--lb-period-secs` the first step balances and then the first one a period
/// after: a period of 0 balances every step, a day only the first, and on sim 5 ms
/// (steps of 2.6-8 ms of virtual time) some steps and not others, the same ones on
/// every run.
pub fn a_time_period_balances_the_steps_it_spans(layer: Layer) {
    let steps = 6;
    assert_eq!(steps_balanced_every(layer, 0.0, steps), steps as usize);
    assert_eq!(steps_balanced_every(layer, 86_400.0, steps), 1);
    if layer == Layer::Sim {
        let some = steps_balanced_every(layer, 0.005, steps);
        assert!(1 < some && some < steps as usize, "{some} balancing steps");
        assert_eq!(steps_balanced_every(layer, 0.005, steps), some);
    }
}

/// This module's tests.
pub const TESTS: &[crate::suite::Test] = &[
    (
        "manual_steps_wait_for_start_lb",
        manual_steps_wait_for_start_lb,
    ),
    (
        "start_lb_without_manual_mode_is_refused",
        start_lb_without_manual_mode_is_refused,
    ),
    (
        "a_time_period_balances_the_steps_it_spans",
        a_time_period_balances_the_steps_it_spans,
    ),
];
