//! Async tasks (`Ctx::spawn`, `Task::ask`): a sequential protocol of asks checked
//! exactly, timeouts and late replies, the waits quiescence detection sees, a task
//! waiting forever in the report, and asked elements that migrate while a task waits.

use crate::{config, pes};
use chorus_core::{
    chare, ArrayMap, AskError, Callback, Config, Ctx, ErrorPolicy, Layer, Migratable, Reducer,
    ReplyTo, RunReport, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Elements of the protocol's array.
const N: usize = 24;

/// An array element answering for its index.
#[derive(Default)]
struct Oracle;

#[chare]
impl Oracle {
    /// `x` times 10 plus this element's index.
    #[entry]
    fn scaled(&mut self, x: u64, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element") as u64;
        reply.send(ctx, x * 10 + i);
    }

    /// Run the protocol as a task: ask element i+1, then element i+3 with the first
    /// answer, then the group member on PE (answer mod PEs), and contribute the last
    /// answer.
    #[entry]
    fn protocol(&mut self, echo: chorus_core::GroupProxy<Echo>, done: Callback, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        let oracles = ctx.this_array::<Oracle, usize>().expect("an array");
        ctx.spawn(move |t| async move {
            let a = t
                .ask(move |ctx, r| oracles.at((i + 1) % N).scaled(ctx, i as u64, r))
                .await?;
            let b = t
                .ask(move |ctx, r| oracles.at((i + 3) % N).scaled(ctx, a, r))
                .await?;
            let pe = (b % t.num_pes() as u64) as u32;
            let c = t.ask(move |ctx, r| echo.at(pe).echo(ctx, b, r)).await?;
            t.with(move |ctx| ctx.contribute(c, Reducer::Sum, done))
                .await;
            Ok::<(), AskError>(())
        });
    }
}

/// A group member answering with what it is sent plus its PE times 1000.
#[derive(Default)]
struct Echo;

#[chare]
impl Echo {
    #[entry]
    fn echo(&mut self, x: u64, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        let pe = u64::from(ctx.my_pe());
        reply.send(ctx, x + 1000 * pe);
    }
}

/// The protocol's sum, computed here step by step.
fn protocol_expected(npes: u64) -> u64 {
    (0..N as u64)
        .map(|i| {
            let n = N as u64;
            let a = i * 10 + (i + 1) % n;
            let b = a * 10 + (i + 3) % n;
            b + 1000 * (b % npes)
        })
        .sum()
}

/// Every element's three-step protocol gives exactly the sum worked out by hand.
pub fn a_sequential_protocol_of_asks_is_exact(layer: Layer) {
    for wanted in [1, 3, 4] {
        let npes = pes(layer, wanted);
        let mut reg = chorus_core::Registry::new();
        Oracle::register(&mut reg);
        Echo::register(&mut reg);
        let sum: u64 = Runtime::new(reg, config(layer, npes, ErrorPolicy::Abort))
            .run_for(|ctx, done| {
                let echo = ctx.create_group::<Echo>(());
                let oracles = ctx.create_array_1d::<Oracle>(N, (), ArrayMap::RoundRobin);
                oracles.protocol(ctx, echo, done);
            })
            .expect("the protocol runs");
        assert_eq!(sum, protocol_expected(u64::from(npes)), "{layer:?} {npes}");
    }
}

/// Run the protocol on `cfg`'s PEs, ending the job when its sum arrives.
pub fn run_protocol(cfg: Config) -> RunReport {
    let mut reg = chorus_core::Registry::new();
    Oracle::register(&mut reg);
    Echo::register(&mut reg);
    Runtime::new(reg, cfg)
        .run(|ctx| {
            let echo = ctx.create_group::<Echo>(());
            let oracles = ctx.create_array_1d::<Oracle>(N, (), ArrayMap::RoundRobin);
            oracles.protocol(ctx, echo, Callback::Exit);
        })
        .expect("the protocol runs")
}

/// Asks the protocol makes: three per element.
pub const PROTOCOL_ASKS: usize = 3 * N;

/// The protocol on sim twice with one seed: the same events in the same order.
pub fn tasks_on_sim_are_deterministic(layer: Layer) {
    if layer != Layer::Sim {
        return;
    }
    let digest = |seed: u64| {
        let mut cfg = config(layer, 5, ErrorPolicy::Abort);
        cfg.seed = seed;
        run_protocol(cfg).sim.expect("sim stats").digest
    };
    assert_eq!(digest(7), digest(7));
}

/// Holds the reply of an ask until told to answer.
#[derive(Default)]
struct Holder {
    held: Vec<ReplyTo<u64>>,
}

#[chare]
impl Holder {
    /// Keep the reply address; answer nothing yet.
    #[entry]
    fn hold(&mut self, reply: ReplyTo<u64>) {
        self.held.push(reply);
    }

    /// Answer every held ask with `v`.
    #[entry]
    fn release(&mut self, v: u64, ctx: &mut Ctx) {
        for r in std::mem::take(&mut self.held) {
            r.send(ctx, v);
        }
    }

    /// Answer at once.
    #[entry]
    fn now(&mut self, v: u64, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        reply.send(ctx, v);
    }

    /// Drop the reply address: the ask is never answered.
    #[entry]
    fn ignore(&mut self, _reply: ReplyTo<u64>) {}
}

/// What the timeout test's task saw, in order.
#[derive(Default, Serialize, Deserialize, Clone)]
struct Seen(Vec<String>);

fn run_holder(layer: Layer, main: impl FnOnce(&mut Ctx) + Send + 'static) -> RunReport {
    let mut reg = chorus_core::Registry::new();
    Holder::register(&mut reg);
    let npes = pes(layer, 2);
    Runtime::new(reg, config(layer, npes, ErrorPolicy::Abort))
        .run(main)
        .expect("runs")
}

/// An ask nobody answers in time ends with `TimedOut`; its answer, sent later, is
/// counted as late; an ask answered in time is not timed out; and quiescence waits
/// for the deadline (the timeout is seen before quiescence is).
pub fn an_ask_times_out_and_its_late_answer_is_counted(layer: Layer) {
    let report = run_holder(layer, |ctx| {
        let holder = ctx.create_chare::<Holder>((), ctx.num_pes() as u32 - 1);
        ctx.start_quiescence(Callback::Exit);
        ctx.spawn(move |t| async move {
            let slow =
                t.ask_with_timeout(Duration::from_millis(2), move |ctx, r| holder.hold(ctx, r));
            let first = match slow.await {
                Err(AskError::TimedOut { after, .. }) => format!("timed out after {after:?}"),
                other => format!("unexpected {other:?}"),
            };
            t.with(move |ctx| holder.release(ctx, 1)).await;
            let fast =
                t.ask_with_timeout(Duration::from_secs(30), move |ctx, r| holder.now(ctx, 9, r));
            let second = format!("{:?}", fast.await);
            t.with(move |ctx| ctx.publish("seen", &Seen(vec![first, second])))
                .await;
        });
    });
    let seen: Seen = report.output("seen").expect("the task finished");
    assert_eq!(seen.0, ["timed out after 2ms", "Ok(9)"], "{layer:?}");
    let late: u64 = report.per_pe.iter().map(|p| p.late_replies).sum();
    assert_eq!((late, report.tasks_waiting()), (1, 0), "{layer:?}");
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// A task waiting on an answer nobody sends does not hold the job: quiescence ends
/// it, and the report counts the task.
pub fn a_task_waiting_forever_shows_in_the_report(layer: Layer) {
    let report = run_holder(layer, |ctx| {
        let holder = ctx.create_chare::<Holder>((), ctx.num_pes() as u32 - 1);
        ctx.exit_on_quiescence();
        ctx.spawn(move |t| async move {
            let never = t.ask(move |ctx, r| holder.ignore(ctx, r)).await;
            t.with(move |ctx| ctx.publish("answered", &format!("{never:?}")))
                .await;
        });
    });
    assert_eq!(report.output::<String>("answered"), None);
    assert_eq!(report.tasks_waiting(), 1, "{layer:?}");
    let stats = report.stats(chorus_core::StatsFormat::Text);
    assert!(
        stats.contains("1 tasks still waiting for a reply"),
        "{stats}"
    );
}

/// An element that takes an ask, moves to another PE, and answers from there.
#[derive(Default, Serialize, Deserialize)]
struct Mover {
    held: Option<ReplyTo<u64>>,
}

impl Migratable for Mover {}

#[chare(migratable)]
impl Mover {
    /// Keep the reply address and move to PE `to`.
    #[entry]
    fn take_and_move(&mut self, to: u32, reply: ReplyTo<u64>, ctx: &mut Ctx) {
        self.held = Some(reply);
        ctx.migrate_me(to).expect("the move is accepted");
    }

    /// Answer the held ask with the PE this element is on now.
    #[entry]
    fn answer(&mut self, ctx: &mut Ctx) {
        let pe = u64::from(ctx.my_pe());
        if let Some(r) = self.held.take() {
            r.send(ctx, pe);
        }
    }
}

/// The asked element migrates while the task waits: the answer comes back once,
/// from the element's new PE.
pub fn an_asked_element_that_migrates_while_asked_still_answers(layer: Layer) {
    let npes = pes(layer, 3);
    let mut reg = chorus_core::Registry::new();
    Mover::register(&mut reg);
    let got: Vec<u64> = Runtime::new(reg, config(layer, npes, ErrorPolicy::Abort))
        .run_for_all(move |ctx, done| {
            let movers = ctx.create_array_1d::<Mover>(npes as usize, (), ArrayMap::RoundRobin);
            ctx.spawn(move |t| async move {
                // Element 1 lives on PE 1 and moves to the last PE while asked.
                let to = npes - 1;
                let answer = t.ask(move |ctx, r| {
                    movers.at(1).take_and_move(ctx, to, r);
                    movers.at(1).answer(ctx);
                });
                let pe = answer.await?;
                t.with(move |ctx| ctx.send_to_callback(&done, pe)).await;
                Ok::<(), AskError>(())
            });
        })
        .expect("runs");
    assert_eq!(got, vec![u64::from(npes - 1)], "{layer:?} {npes}");
}

/// A task whose owner (the element that spawned it) moves away while it waits is
/// dropped with a typed error, not run as an element that is not here.
pub fn a_task_whose_owner_left_is_reported(layer: Layer) {
    let npes = pes(layer, 2);
    let mut reg = chorus_core::Registry::new();
    Leaver::register(&mut reg);
    Holder::register(&mut reg);
    let report = Runtime::new(reg, config(layer, npes, ErrorPolicy::Drop))
        .run(move |ctx| {
            let holder = ctx.create_chare::<Holder>((), 0);
            let leavers = ctx.create_array_1d::<Leaver>(1, (), ArrayMap::RoundRobin);
            leavers.at(0).wait_then_move(ctx, holder, npes - 1);
            ctx.exit_on_quiescence();
        })
        .expect("runs");
    let errors: Vec<String> = report.errors().iter().map(|e| e.to_string()).collect();
    if npes == 1 {
        // Nothing moved: the task resumed as its owner.
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(report.output::<String>("resumed").as_deref(), Some("Ok(5)"));
        return;
    }
    assert_eq!(report.output::<String>("resumed"), None);
    assert_eq!(errors.len(), 1, "{errors:?}");
    // On mpi another rank's errors arrive as text (`RuntimeError::Remote`).
    assert!(
        errors[0].starts_with("PE 0: a task of") && errors[0].contains("its owner left the PE"),
        "{errors:?}"
    );
    if layer != Layer::Mpi {
        let err = report.errors()[0];
        assert!(
            matches!(err, RuntimeError::TaskOwnerLeft { pe: 0, .. }),
            "{err:?}"
        );
    }
}

/// An element whose task waits while it moves away; the holder answers once the
/// element has arrived.
#[derive(Default, Serialize, Deserialize)]
struct Leaver {
    holder: Option<chorus_core::ChareProxy<Holder>>,
}

impl Migratable for Leaver {
    fn migrated(&mut self, ctx: &mut Ctx) {
        if let Some(h) = self.holder {
            h.release(ctx, 5);
        }
    }
}

#[chare(migratable)]
impl Leaver {
    /// Spawn a task that asks `holder` (who holds the ask), then move to PE `to`.
    #[entry]
    fn wait_then_move(&mut self, holder: chorus_core::ChareProxy<Holder>, to: u32, ctx: &mut Ctx) {
        self.holder = Some(holder);
        ctx.spawn(move |t| async move {
            let v = t.ask(move |ctx, r| holder.hold(ctx, r)).await;
            t.with(move |ctx| ctx.publish("resumed", &format!("{v:?}")))
                .await;
        });
        if to != ctx.my_pe() {
            ctx.migrate_me(to).expect("the move is accepted");
        } else {
            holder.release(ctx, 5);
        }
    }
}

/// This module's tests.
pub const TESTS: &[super::Test] = &[
    (
        "a_sequential_protocol_of_asks_is_exact",
        a_sequential_protocol_of_asks_is_exact,
    ),
    (
        "tasks_on_sim_are_deterministic",
        tasks_on_sim_are_deterministic,
    ),
    (
        "an_ask_times_out_and_its_late_answer_is_counted",
        an_ask_times_out_and_its_late_answer_is_counted,
    ),
    (
        "a_task_waiting_forever_shows_in_the_report",
        a_task_waiting_forever_shows_in_the_report,
    ),
    (
        "an_asked_element_that_migrates_while_asked_still_answers",
        an_asked_element_that_migrates_while_asked_still_answers,
    ),
    (
        "a_task_whose_owner_left_is_reported",
        a_task_whose_owner_left_is_reported,
    ),
];
