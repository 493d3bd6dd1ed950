//! Deleting array elements (`destroy_me`, `ArrayProxy::destroy`): reductions after a
//! deletion count only the elements left (elements that moved first, whole subtrees
//! of PEs deleted, an element that contributes and deletes itself in one handler);
//! messages that reach a deleted element are counted, never run; deleting twice or
//! while migrating is a typed error.

use crate::{config, pes};
use chorus_core::{
    chare, ArrayMap, ArrayProxy, Callback, Ctx, DestroyError, ErrorPolicy, Layer, Migratable,
    MigrateError, Reducer, RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};

/// Elements of the array each test makes.
const N: usize = 64;

/// Deleted after the first sum: `die` (by the element), `destroy` (by the driver);
/// every element with `i >= N / 2` goes, so the PEs homing them have none left.
fn dies(i: usize) -> bool {
    i % 4 == 1
}
fn destroyed(i: usize) -> bool {
    !dies(i) && (i % 4 == 2 || i >= N / 2)
}
/// Of those left, the ones that contribute to a sum and delete themselves at once.
fn last_words(i: usize) -> bool {
    i % 8 == 3 && !dies(i) && !destroyed(i)
}

#[derive(Default, Serialize, Deserialize)]
struct Mortal;

#[chare(migratable)]
impl Mortal {
    /// Contribute the index, then move away from home.
    #[entry]
    fn sum_and_roam(&mut self, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        ctx.contribute(i as u64, Reducer::Sum, done);
        let to = (i * 7 + 3) % ctx.num_pes();
        ctx.migrate_me(to as u32).expect("a valid move");
    }
    /// Contribute the index.
    #[entry]
    fn sum(&mut self, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        ctx.contribute(i as u64, Reducer::Sum, done);
    }
    /// Contribute the index, and delete itself if it is one of `last_words`.
    #[entry]
    fn sum_then_die(&mut self, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        ctx.contribute(i as u64, Reducer::Sum, done);
        if last_words(i) {
            ctx.destroy_me().expect("a first delete");
        }
    }
    /// Delete itself.
    #[entry]
    fn die(&mut self, ctx: &mut Ctx) {
        ctx.destroy_me().expect("a first delete");
    }
    /// Must never run on a deleted element.
    #[entry]
    fn poke(&mut self, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        ctx.fail(
            "poke",
            format!("element {i} ran a message after it was deleted"),
        );
    }
    /// Try a refused deletion (`case`), publishing what was said.
    #[entry]
    fn misuse(&mut self, case: u8, ctx: &mut Ctx) {
        let said = match case {
            0 => {
                let away = (ctx.my_pe() as usize + 1) % ctx.num_pes();
                ctx.migrate_me(away as u32).expect("a valid move");
                ctx.destroy_me().err().map(|e| e.to_string())
            }
            1 => {
                ctx.destroy_me().expect("a first delete");
                ctx.destroy_me().err().map(|e| e.to_string())
            }
            _ => {
                ctx.destroy_me().expect("a first delete");
                ctx.migrate_me(0).err().map(|e| e.to_string())
            }
        };
        ctx.publish("misuse", &(case, said));
    }
}

impl Migratable for Mortal {}

/// PE 0's script: sum, delete, poke the deleted, sum again, contribute-and-delete.
#[derive(Serialize, Deserialize)]
struct Driver {
    array: ArrayProxy<Mortal, usize>,
    sums: Vec<u64>,
    quiets: u32,
}

#[chare]
impl Driver {
    #[init]
    fn new(array: ArrayProxy<Mortal, usize>, ctx: &mut Ctx) -> Self {
        let done = Self::summed_callback(ctx);
        array.sum_and_roam(ctx, done);
        Driver {
            array,
            sums: Vec::new(),
            quiets: 0,
        }
    }
    #[entry(callback)]
    fn summed(&mut self, sum: u64, ctx: &mut Ctx) {
        self.sums.push(sum);
        match self.sums.len() {
            1 => {
                for i in (0..N).filter(|&i| dies(i)) {
                    self.array.at(i).die(ctx);
                }
                for i in (0..N).filter(|&i| destroyed(i)) {
                    self.array.destroy(ctx, &i);
                }
                let quiet = Self::quiet_callback(ctx);
                ctx.start_quiescence(quiet);
            }
            2 => {
                let done = Self::summed_callback(ctx);
                self.array.sum_then_die(ctx, done);
            }
            3 => {
                let done = Self::summed_callback(ctx);
                self.array.sum(ctx, done);
            }
            _ => {
                ctx.publish("sums", &self.sums);
                ctx.exit();
            }
        }
    }
    #[entry(callback)]
    fn quiet(&mut self, ctx: &mut Ctx) {
        self.quiets += 1;
        if self.quiets == 1 {
            for i in (0..N).filter(|&i| dies(i) || destroyed(i)) {
                self.array.at(i).poke(ctx);
            }
            let quiet = Self::quiet_callback(ctx);
            ctx.start_quiescence(quiet);
        } else {
            let done = Self::summed_callback(ctx);
            self.array.sum(ctx, done);
        }
    }
}

/// Run `main` on `pes_wanted` PEs (until quiescence if `quiet_ends`, else until an
/// exit), errors dropped and reported.
fn run(
    layer: Layer,
    pes_wanted: u32,
    quiet_ends: bool,
    main: impl FnOnce(&mut Ctx) + Send + 'static,
) -> RunReport {
    let mut reg = chorus_core::Registry::new();
    Mortal::register(&mut reg);
    Driver::register(&mut reg);
    let cfg = config(layer, pes(layer, pes_wanted), ErrorPolicy::Drop);
    Runtime::new(reg, cfg)
        .run(move |ctx| {
            main(ctx);
            if quiet_ends {
                ctx.exit_on_quiescence();
            }
        })
        .expect("the job runs")
}

/// Reductions after deletions count only the elements left, and messages for
/// deleted elements are counted in the report, never run.
pub fn deleted_elements_leave_reductions_and_their_messages_are_counted(layer: Layer) {
    for wanted in [8, 3, 1] {
        let report = run(layer, wanted, false, |ctx| {
            let array = ctx.create_array_1d::<Mortal>(N, (), ArrayMap::Block);
            ctx.create_chare::<Driver>(array, 0);
        });
        assert!(report.errors().is_empty(), "{:?}", report.errors());
        let alive = |i: &usize| !dies(*i) && !destroyed(*i);
        let all: u64 = (0..N as u64).sum();
        let left: u64 = (0..N).filter(alive).map(|i| i as u64).sum();
        let last: u64 = (0..N).filter(|&i| last_words(i)).map(|i| i as u64).sum();
        let sums: Vec<u64> = report.output("sums").expect("the script ends");
        assert_eq!(sums, vec![all, left, left, left - last], "{wanted} PEs");
        let poked = (0..N).filter(|i| !alive(i)).count() as u64;
        let extra = (0..N).filter(|&i| last_words(i)).count() as u64;
        // The pokes; a broadcast copy that followed a just-deleted element may add one.
        let dropped = report.dropped_to_deleted();
        assert!(
            (poked..=poked + extra).contains(&dropped),
            "{dropped} dropped"
        );
    }
}

/// Deleting twice, after `migrate_me`, or from outside an element is refused with a
/// typed error, and a second `destroy` is reported; the job goes on.
pub fn deleting_twice_or_while_migrating_is_a_typed_error(layer: Layer) {
    let report = run(layer, 4, true, |ctx| {
        let not_element = ctx.destroy_me().err().map(|e| e.to_string());
        ctx.publish("main", &not_element);
        let array = ctx.create_array_1d::<Mortal>(8, (), ArrayMap::Block);
        for case in 0..3u8 {
            array.at(usize::from(case)).misuse(ctx, case);
        }
        array.destroy(ctx, &5);
        array.destroy(ctx, &5);
    });
    let main: Option<String> = report.output("main").expect("main published");
    let not_element = DestroyError::NotAnElement("the main function".into());
    assert_eq!(main, Some(not_element.to_string()));
    let mut said: Vec<(u8, Option<String>)> = report
        .outputs("misuse")
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    said.sort();
    let expect = |e: &dyn ToString| Some(e.to_string());
    assert_eq!(
        said,
        vec![
            (0, expect(&DestroyError::Migrating)),
            (1, expect(&DestroyError::AlreadyDeleted)),
            (2, expect(&MigrateError::Destroyed)),
        ]
    );
    let errors = report.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        matches!(
            errors[0],
            RuntimeError::Destroy {
                reason: DestroyError::AlreadyDeleted,
                ..
            }
        ) || errors[0].to_string().contains("was deleted already"),
        "{errors:?}"
    );
}

/// This module's tests.
pub const TESTS: &[crate::suite::Test] = &[
    (
        "deleted_elements_leave_reductions_and_their_messages_are_counted",
        deleted_elements_leave_reductions_and_their_messages_are_counted,
    ),
    (
        "deleting_twice_or_while_migrating_is_a_typed_error",
        deleting_twice_or_while_migrating_is_a_typed_error,
    ),
];
