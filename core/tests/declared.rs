//! Entry methods declared with `#[chare]`: typed sends on chare, group, member,
//! array and element proxies, callbacks to declared entries, results returned to
//! main, and the explicit API underneath, on threads and sim.

use chorus_core::{
    chare, ArrayMap, Callback, Config, Ctx, IntoRegistry, Layer, Reducer, Registry, Runtime,
    RuntimeError, This,
};

/// A counter: adds what it is sent, reports its total to a callback.
struct Counter {
    n: u64,
    /// Where `summed` passes its total on.
    done: Option<Callback>,
}

#[chare]
impl Counter {
    #[init]
    fn new(start: u64) -> Self {
        Counter {
            n: start,
            done: None,
        }
    }

    #[entry]
    fn add(&mut self, n: u64) {
        self.n += n;
    }

    /// Two arguments: one tuple variant.
    #[entry]
    fn add_times(&mut self, n: u64, times: u32) {
        self.n += n * u64::from(times);
    }

    #[entry]
    fn total(&mut self, done: Callback, ctx: &mut Ctx) {
        ctx.send_to_callback(&done, self.n);
    }

    /// Group members and array elements sum their counts to `done`.
    #[entry]
    fn sum(&mut self, done: Callback, ctx: &mut Ctx) {
        ctx.contribute(self.n, Reducer::Sum, done);
    }

    /// Members sum to their own group's `summed`, which passes it to `done`.
    #[entry]
    fn sum_to_self(&mut self, done: Callback, ctx: &mut Ctx) {
        self.done = Some(done);
        let summed = Self::summed_callback(ctx);
        ctx.contribute(self.n, Reducer::Sum, summed);
    }

    #[entry]
    fn keep(&mut self, done: Callback) {
        self.done = Some(done);
    }

    #[entry(callback)]
    fn summed(&mut self, total: u64, ctx: &mut Ctx) {
        if let Some(done) = self.done.take() {
            ctx.send_to_callback(&done, total);
        }
    }
}

/// The errors these tests provoke are logged through the test harness's capture.
fn quiet() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
}

fn config(layer: Layer, pes: u32) -> Config {
    Config {
        layer,
        ..Config::with_pes(pes)
    }
}

fn runtime(layer: Layer, pes: u32) -> Runtime {
    quiet();
    let mut reg = Registry::new();
    Counter::register(&mut reg);
    Runtime::new(reg, config(layer, pes))
}

const LAYERS: [Layer; 2] = [Layer::Threads, Layer::Sim];

#[test]
fn a_singleton_counter_adds_and_reports_its_total_to_main() {
    for layer in LAYERS {
        let total: u64 = runtime(layer, 3)
            .run_for(|ctx, done| {
                let c = ctx.create_chare::<Counter>(10, 2);
                c.add(ctx, 5);
                c.add_times(ctx, 3, 4);
                c.total(ctx, done);
            })
            .expect("the run");
        assert_eq!(total, 27, "{layer:?}");
    }
}

// Messages that take different paths (a broadcast's tree, a point-to-point send)
// are not ordered with each other, so each test below sends along one path.

#[test]
fn a_group_broadcast_adds_on_every_member_then_sums() {
    for layer in LAYERS {
        let total: u64 = runtime(layer, 4)
            .run_for(|ctx, done| {
                let g = ctx.create_group::<Counter>(1);
                g.add(ctx, 2);
                g.sum(ctx, done);
            })
            .expect("the run");
        assert_eq!(total, 3 * 4, "{layer:?}");
    }
}

#[test]
fn one_group_member_adds_and_reports() {
    for layer in LAYERS {
        let total: u64 = runtime(layer, 4)
            .run_for(|ctx, done| {
                let member = ctx.create_group::<Counter>(1).at(3);
                member.add(ctx, 100);
                member.total(ctx, done);
            })
            .expect("the run");
        assert_eq!(total, 101, "{layer:?}");
    }
}

#[test]
fn an_array_broadcast_adds_on_every_element_then_sums() {
    for layer in LAYERS {
        let total: u64 = runtime(layer, 3)
            .run_for(|ctx, done| {
                let a = ctx.create_array_1d::<Counter>(10, 0, ArrayMap::RoundRobin);
                a.add_times(ctx, 1, 2);
                a.sum(ctx, done);
            })
            .expect("the run");
        assert_eq!(total, 20, "{layer:?}");
    }
}

#[test]
fn one_array_element_adds_and_reports() {
    for layer in LAYERS {
        let total: u64 = runtime(layer, 3)
            .run_for(|ctx, done| {
                let e = ctx
                    .create_array_1d::<Counter>(10, 7, ArrayMap::RoundRobin)
                    .at(7);
                e.add(ctx, 70);
                e.total(ctx, done);
            })
            .expect("the run");
        assert_eq!(total, 77, "{layer:?}");
    }
}

#[test]
fn a_callback_to_the_running_group_reaches_every_member() {
    for layer in LAYERS {
        // Every member gets the sum at `summed` and passes it on: 4 values.
        let totals: Vec<u64> = runtime(layer, 4)
            .run_for_all(|ctx, done| {
                ctx.create_group::<Counter>(5).sum_to_self(ctx, done);
            })
            .expect("the run");
        assert_eq!(totals, [20; 4], "{layer:?}");
    }
}

#[test]
fn a_callback_from_a_proxy_names_its_target() {
    // main asks the chare for a callback to its own `summed`, then has the group
    // sum to it: the chare passes the sum on to main.
    let total: u64 = runtime(Layer::Sim, 4)
        .run_for(|ctx, done| {
            let c = ctx.create_chare::<Counter>(0, 1);
            c.keep(ctx, done);
            let to_c = c.summed_callback(ctx);
            ctx.create_group::<Counter>(2).sum(ctx, to_c);
        })
        .expect("the run");
    assert_eq!(total, 8);
}

#[test]
fn the_explicit_api_underneath_still_works() {
    let total: u64 = runtime(Layer::Threads, 2)
        .run_for(|ctx, done| {
            let c = ctx.create_chare::<Counter>(1, 1);
            c.send(ctx, CounterMsg::Add(2));
            c.send(ctx, CounterMsg::AddTimes(1, 3));
            c.send(ctx, CounterMsg::Total(done));
        })
        .expect("the run");
    assert_eq!(total, 6);
    let mut reg = Registry::new();
    Counter::register(&mut reg);
    let entry = reg.find_entry::<Counter, u64>("Counter::summed");
    assert!(
        entry.is_some(),
        "a callback entry is registered under its name"
    );
    assert!(reg.find_entry::<Counter, u64>("Counter::add").is_none());
}

#[test]
fn run_for_all_keeps_every_value_in_arrival_order() {
    let values: Vec<u64> = runtime(Layer::Sim, 2)
        .run_for_all(|ctx, done| {
            for start in [3, 1, 2] {
                ctx.create_chare::<Counter>(start, 0)
                    .total(ctx, done.clone());
            }
        })
        .expect("the run");
    assert_eq!(values, [3, 1, 2]);
}

#[test]
fn a_job_that_exits_without_a_value_says_so() {
    let err = runtime(Layer::Sim, 2)
        .run_for::<u64>(|ctx, _done| ctx.exit())
        .expect_err("no value");
    assert!(
        matches!(err, RuntimeError::NoSingleResult { got: 0 }),
        "{err}"
    );
}

#[test]
fn a_callback_to_an_unregistered_entry_is_an_error_naming_it() {
    quiet();
    let mut reg = Registry::new();
    reg.chare::<Counter>("Counter");
    let err = Runtime::new(reg, config(Layer::Sim, 2))
        .run_for::<u64>(|ctx, done| {
            let g = ctx.create_group::<Counter>(1);
            g.sum_to_self(ctx, done);
        })
        .expect_err("the entry is not registered");
    let text = err.to_string();
    assert!(text.contains("entry Counter::summed of"), "{text}");
    assert!(
        matches!(err, RuntimeError::EntryNotRegistered { .. }),
        "{err}"
    );
}

#[test]
fn this_from_main_is_reported() {
    let err = runtime(Layer::Sim, 1)
        .run_for::<u64>(|ctx, _| This::<Counter>::new().add(ctx, 1))
        .expect_err("main is no chare");
    assert!(
        err.to_string().contains("used from the main function"),
        "{err}"
    );
}

/// An entry that fails: its `Err` is reported under `--on-error`, naming the entry.
#[derive(Default)]
struct Picky;

#[chare]
impl Picky {
    #[entry]
    fn take(&mut self, n: u64) -> Result<(), String> {
        if n > 10 {
            return Err(format!("{n} is more than 10"));
        }
        Ok(())
    }
}

#[test]
fn an_entry_returning_an_error_has_it_reported_with_the_entry_name() {
    quiet();
    let err = Runtime::new(
        Picky::register(&mut Registry::new()).into_registry(),
        config(Layer::Sim, 2),
    )
    .run(|ctx| {
        let p = ctx.create_chare::<Picky>((), 1);
        p.take(ctx, 3);
        p.take(ctx, 11);
    })
    .expect_err("the second call fails");
    let text = err.to_string();
    assert!(text.contains("Picky::take: 11 is more than 10"), "{text}");
}
