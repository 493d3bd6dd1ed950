//! Async tasks: sequential code over messages (the role of Charm++'s Structured
//! Dagger and futures). `ctx.spawn` starts a task on the running PE; inside it,
//! `task.ask(..).await` sends a message carrying a [`ReplyTo`] and resumes when the
//! answer comes back, and `task.with(|ctx| ..).await` runs code with the PE's `Ctx`.
//!
//! A task's future never holds a `Ctx` (the PE is busy with other messages while it
//! waits): what it does on the PE is queued in its PE's outbox while it is polled, and
//! the PE's executor (`engine/tasks.rs`) runs the queue with the PE's `Ctx` right after
//! each poll, as the task's owner, before anything else runs on the PE.

use crate::api::ctx::Ctx;
use crate::api::target::EntryResult;
use crate::base::ids::Pe;
use crate::msg::payload::{Message, Payload};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use thiserror::Error;

/// Why an awaited ask ended without its answer.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AskError {
    /// No answer came within the time given to `ask_with_timeout`; an answer that
    /// comes later is counted in the PE's report (`late_replies`) and dropped.
    #[error("PE {pe}: no reply to ask {id} within {after:?}: answer sooner, or give it more time")]
    TimedOut {
        /// The asking PE.
        pe: Pe,
        /// The ask's number on that PE.
        id: u64,
        /// The time it was given.
        after: Duration,
    },
    /// The answer's bytes are not a value of the type the ask awaits.
    #[error("PE {pe}: the reply to ask {id} does not decode ({reason}): reply with the type the asker awaits")]
    Decode {
        /// The asking PE.
        pe: Pe,
        /// The ask's number on that PE.
        id: u64,
        /// What the decoder said.
        reason: String,
    },
}

/// Where the answer to an ask goes: put it in the message an ask sends, and the
/// entry that receives it answers with [`ReplyTo::send`].
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ReplyTo<T> {
    pe: Pe,
    id: u64,
    #[serde(skip)]
    _p: PhantomData<fn() -> T>,
}

impl<T> Clone for ReplyTo<T> {
    fn clone(&self) -> Self {
        ReplyTo {
            pe: self.pe,
            id: self.id,
            _p: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for ReplyTo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReplyTo(PE {}, ask {})", self.pe, self.id)
    }
}

impl<T: Message> ReplyTo<T> {
    /// Answer the ask with `value` (an ordinary counted runtime message to the asking
    /// PE). Only the first answer counts; a later one is counted as late there.
    pub fn send(self, ctx: &mut Ctx, value: T) {
        ctx.core.reply(self.pe, self.id, Payload::new(value));
    }

    /// The PE that asked.
    pub fn pe(&self) -> Pe {
        self.pe
    }
}

/// Something a task asked to do with its PE's `Ctx`.
pub(crate) enum Op {
    /// Run this closure.
    Run(Box<dyn FnOnce(&mut Ctx) + Send>),
    /// Send this ask: its request and its answer's slot share one allocation.
    Ask(Arc<dyn AskStart>),
}

impl Op {
    /// Do it, as whoever `ctx` runs as.
    pub(crate) fn run(self, ctx: &mut Ctx) {
        match self {
            Op::Run(f) => f(ctx),
            Op::Ask(a) => a.start(ctx),
        }
    }
}

/// What the tasks of one PE asked to do during a poll, run by the executor right
/// after it. Drained after every poll, so it holds one poll's requests at most.
#[derive(Default)]
pub(crate) struct Outbox(Mutex<Vec<Op>>);

impl Outbox {
    fn push(&self, op: Op) {
        lock(&self.0).push(op);
    }

    fn run(&self, f: Box<dyn FnOnce(&mut Ctx) + Send>) {
        self.push(Op::Run(f));
    }

    /// Everything queued, in order, swapped into `into` (empty): the executor hands
    /// back the same buffer every poll, so a poll's requests cost no allocation.
    pub(crate) fn take_into(&self, into: &mut Vec<Op>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut *lock(&self.0), into);
    }
}

/// A lock that a panic elsewhere does not poison: every value behind one is whole
/// between two statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where an ask's answer waits for its task, shared with the executor.
#[derive(Default)]
pub(crate) struct AskSlot {
    pub(crate) result: Option<Result<Payload, AskError>>,
    pub(crate) waker: Option<Waker>,
    /// Set by the executor when it sends the ask.
    pub(crate) id: u64,
}

/// One ask as its task and the executor share it: the request until the executor
/// sends it, then the slot its answer waits in. One allocation per ask.
struct AskCell<T, F> {
    /// The asking PE.
    pe: Pe,
    /// The timeout and the send closure, taken out when the executor sends the ask.
    request: Mutex<Option<(Option<Duration>, F)>>,
    slot: Mutex<AskSlot>,
    _p: PhantomData<fn() -> T>,
}

/// An ask as the executor sees it, whatever its send closure.
pub(crate) trait AskStart: Send + Sync {
    /// Where its answer goes.
    fn slot(&self) -> &Mutex<AskSlot>;
    /// Number it with the PE's executor and send its request.
    fn start(self: Arc<Self>, ctx: &mut Ctx);
}

impl<T: Message, F: FnOnce(&mut Ctx, ReplyTo<T>) + Send + 'static> AskStart for AskCell<T, F> {
    fn slot(&self) -> &Mutex<AskSlot> {
        &self.slot
    }

    fn start(self: Arc<Self>, ctx: &mut Ctx) {
        // Queued once, by the first poll: the request is always there.
        let Some((timeout, send)) = lock(&self.request).take() else {
            return;
        };
        let pe = self.pe;
        let id = ctx.core.start_ask(self, timeout);
        send(
            ctx,
            ReplyTo {
                pe,
                id,
                _p: PhantomData,
            },
        );
    }
}

/// Fill `slot` with `result` and wake its task.
pub(crate) fn resolve(slot: &Mutex<AskSlot>, result: Result<Payload, AskError>) {
    let waker = {
        let mut s = lock(slot);
        s.result = Some(result);
        s.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// A task's handle on its PE: ask, and run code with the PE's `Ctx`.
#[derive(Clone)]
pub struct Task {
    outbox: Arc<Outbox>,
    pe: Pe,
    npes: usize,
}

impl Task {
    pub(crate) fn new(outbox: Arc<Outbox>, pe: Pe, npes: usize) -> Self {
        Task { outbox, pe, npes }
    }

    /// The PE the task runs on.
    pub fn my_pe(&self) -> Pe {
        self.pe
    }

    /// Number of PEs in the job.
    pub fn num_pes(&self) -> usize {
        self.npes
    }

    /// Send a message carrying a [`ReplyTo`] (`send` gets the `Ctx` and the reply
    /// address and sends with any proxy) and await the answer: as long as it takes.
    /// The answering chare may migrate meanwhile: the message follows it, and the
    /// answer comes back to this PE.
    pub fn ask<T: Message, F: FnOnce(&mut Ctx, ReplyTo<T>) + Send + 'static>(
        &self,
        send: F,
    ) -> Ask<T, F> {
        self.ask_inner(None, send)
    }

    /// The same, ending with [`AskError::TimedOut`] when no answer comes within
    /// `after` (the layer's clock: virtual on sim; looked at about every 100 us).
    pub fn ask_with_timeout<T: Message, F: FnOnce(&mut Ctx, ReplyTo<T>) + Send + 'static>(
        &self,
        after: Duration,
        send: F,
    ) -> Ask<T, F> {
        self.ask_inner(Some(after), send)
    }

    fn ask_inner<T: Message, F>(&self, timeout: Option<Duration>, send: F) -> Ask<T, F> {
        Ask {
            start: Some((self.outbox.clone(), timeout, send)),
            cell: None,
            pe: self.pe,
            _p: PhantomData,
        }
    }

    /// Run `f` with the PE's `Ctx` (send, contribute, publish, create...) as the
    /// task's owner, and await what it returns.
    pub fn with<R: Send + 'static, F: FnOnce(&mut Ctx) -> R + Send + 'static>(
        &self,
        f: F,
    ) -> With<F, R> {
        With {
            f: Some(f),
            slot: Arc::new(Mutex::new(None)),
            outbox: self.outbox.clone(),
        }
    }
}

/// The answer to an ask, awaited in a task (from [`Task::ask`]); `F` sends the ask.
#[must_use = "an ask does nothing until it is awaited"]
pub struct Ask<T, F> {
    /// The outbox, timeout and send closure, until the first poll queues the send
    /// (kept unboxed: the one allocation is the cell shared with the executor).
    start: Option<(Arc<Outbox>, Option<Duration>, F)>,
    cell: Option<Arc<AskCell<T, F>>>,
    pe: Pe,
    _p: PhantomData<fn() -> T>,
}

// Nothing in `Ask` is pinned: its closure is moved out before it runs.
impl<T, F> Unpin for Ask<T, F> {}

impl<T: Message, F: FnOnce(&mut Ctx, ReplyTo<T>) + Send + 'static> Future for Ask<T, F> {
    type Output = Result<T, AskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some((outbox, timeout, send)) = self.start.take() {
            let cell = Arc::new(AskCell {
                pe: self.pe,
                request: Mutex::new(Some((timeout, send))),
                slot: Mutex::new(AskSlot {
                    waker: Some(cx.waker().clone()),
                    ..AskSlot::default()
                }),
                _p: PhantomData,
            });
            outbox.push(Op::Ask(cell.clone()));
            self.cell = Some(cell);
            return Poll::Pending;
        }
        let Some(cell) = &self.cell else {
            return Poll::Pending;
        };
        let mut s = lock(&cell.slot);
        match s.result.take() {
            Some(Ok(payload)) => {
                let id = s.id;
                let pe = self.pe;
                Poll::Ready(payload.take::<T>().map_err(|reason| AskError::Decode {
                    pe,
                    id,
                    reason,
                }))
            }
            Some(Err(e)) => Poll::Ready(Err(e)),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// What a closure run with the PE's `Ctx` returned (from [`Task::with`]).
#[must_use = "the closure runs only when this is awaited"]
pub struct With<F, R> {
    f: Option<F>,
    slot: Arc<Mutex<Option<R>>>,
    outbox: Arc<Outbox>,
}

// Nothing in `With` is pinned: its closure is moved out before it runs.
impl<F, R> Unpin for With<F, R> {}

impl<R: Send + 'static, F: FnOnce(&mut Ctx) -> R + Send + 'static> Future for With<F, R> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        if let Some(f) = self.f.take() {
            let (slot, waker) = (self.slot.clone(), cx.waker().clone());
            self.outbox.run(Box::new(move |ctx: &mut Ctx| {
                let r = f(ctx);
                *lock(&slot) = Some(r);
                waker.wake();
            }));
            return Poll::Pending;
        }
        match lock(&self.slot).take() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

/// A task as the executor keeps it.
pub(crate) type BoxTask = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Ctx<'_> {
    /// Start a task on this PE: `body` gets its [`Task`] handle and returns the
    /// future to run (`ctx.spawn(|t| async move { .. })`). It first runs once the
    /// running handler returns, and then whenever what it awaits is ready, as the
    /// chare that spawned it (its `Ctx` calls in `with` say so: `this_index`,
    /// `contribute`). A body returning `Err(e)` reports `e` under `--on-error`. A task
    /// still waiting when the job ends is counted in the report (`tasks_waiting`).
    pub fn spawn<Fut>(&mut self, body: impl FnOnce(Task) -> Fut)
    where
        Fut: Future + Send + 'static,
        Fut::Output: EntryResult + Send,
    {
        let task = self.core.task_handle();
        let outbox = task.outbox.clone();
        let fut = body(task);
        let wrapped: BoxTask = Box::pin(async move {
            let out = fut.await;
            outbox.run(Box::new(move |ctx: &mut Ctx| out.report(ctx, "task")));
        });
        self.core.spawn_task(wrapped);
    }
}
