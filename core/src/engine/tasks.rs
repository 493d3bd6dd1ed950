//! The executor of a PE's async tasks (`Ctx::spawn`, `api/task.rs`): polls the
//! tasks whose wakers fired, runs what each asked to do with the PE's `Ctx` right
//! after its poll, matches replies to asks by id, and times asks out. It runs inside
//! the one drive loop (after every handler, in `settle`): no thread, no runtime.
//!
//! Quiescence sees the waits through the ledger: an ask's message and its reply are
//! counted messages, and an ask with a deadline keeps a counted timer message
//! (`AskTimer`) cycling on its PE, so a PE waiting on a reply in flight or on a
//! deadline is not quiescent. A task waiting on an answer nobody will send does not
//! keep the job alive: it is counted in the PE's report (`tasks_waiting`).

use super::{Collection, Current, Members, Origin, PeCore, PeRuntime};
use crate::api::ctx::Ctx;
use crate::api::task::{resolve, AskError, AskStart, BoxTask, Op, Outbox, Task};
use crate::base::error::panic_message;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::msg::envelope::SendOpts;
use crate::msg::kind::task::{AskTimer, Reply, TaskMsg};
use crate::msg::payload::Payload;
use crate::trace::ns;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// How long a PE with an ask's deadline pending computes (sleeps on real layers,
/// advances virtual time on sim) before it looks at the clock again: a deadline is
/// met to about this much, and a waiting PE stays mostly asleep.
const TIMER_SLICE: Duration = Duration::from_micros(100);

/// The ids of the tasks whose wakers fired, in order. Each task is in it at most
/// once (its waker's `queued` flag), so it holds at most one entry per live task.
#[derive(Default)]
struct ReadyList {
    q: Mutex<VecDeque<u64>>,
    /// How many ids `q` holds, kept under its lock: the executor looks after every
    /// handler, and an empty list (the usual answer) then costs no lock.
    len: AtomicUsize,
}

/// The waker of one task: puts its id on the ready list once until it is polled.
struct TaskWaker {
    id: u64,
    ready: Arc<ReadyList>,
    queued: AtomicBool,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let mut q = self.ready.q.lock().unwrap_or_else(|p| p.into_inner());
            q.push_back(self.id);
            self.ready.len.store(q.len(), Ordering::Release);
        }
    }
}

/// A task not finished yet.
struct Live {
    /// Out while it is being polled.
    fut: Option<BoxTask>,
    /// Who spawned it: its `Ctx` calls run as this chare.
    owner: Current,
    waker: Arc<TaskWaker>,
}

/// An ask waiting for its reply.
struct Pending {
    /// The ask, holding the slot its answer goes to.
    ask: Arc<dyn AskStart>,
    /// When it times out (the layer's clock, seconds), and after how long.
    deadline: Option<(f64, Duration)>,
    /// When it was sent, for the trace's span of the wait.
    since: f64,
}

/// One PE's tasks and the asks they wait on.
#[derive(Default)]
pub(crate) struct Tasks {
    outbox: Arc<Outbox>,
    ready: Arc<ReadyList>,
    /// Live tasks, by id; each leaves when its future ends or its owner leaves.
    live: HashMap<u64, Live>,
    next_task: u64,
    /// Asks in flight, by id; each leaves when answered or timed out.
    asks: HashMap<u64, Pending>,
    next_ask: u64,
    /// Asks in `asks` with a deadline; the timer message cycles while any is.
    timed: usize,
    timer_armed: bool,
    /// Replies that found no ask (it had timed out, or was answered already).
    late_replies: u64,
    /// The buffer a poll's requests are swapped into, empty between polls: reused
    /// so that a poll allocates nothing for them.
    spare: Vec<Op>,
}

impl Tasks {
    fn pop_ready(&self) -> Option<u64> {
        if !self.has_ready() {
            return None;
        }
        let mut q = self.ready.q.lock().unwrap_or_else(|p| p.into_inner());
        let id = q.pop_front();
        self.ready.len.store(q.len(), Ordering::Release);
        id
    }

    fn has_ready(&self) -> bool {
        self.ready.len.load(Ordering::Acquire) > 0
    }

    /// Tasks not finished, and replies that came too late: for the PE's report.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.live.len() as u64, self.late_replies)
    }
}

/// What `Ctx` and `ReplyTo` reach of the executor.
impl PeCore {
    /// A handle for a new task of this PE.
    pub(crate) fn task_handle(&mut self) -> Task {
        let outbox = self.tasks.get_mut().outbox.clone();
        Task::new(outbox, self.me, self.npes)
    }

    /// Keep `fut` as a task of the running chare, to be polled once the running
    /// handler returns.
    pub(crate) fn spawn_task(&mut self, fut: BoxTask) {
        let owner = self.current.clone();
        let tasks = self.tasks.get_mut();
        let id = tasks.next_task;
        tasks.next_task += 1;
        let waker = Arc::new(TaskWaker {
            id,
            ready: tasks.ready.clone(),
            queued: AtomicBool::new(false),
        });
        waker.wake_by_ref();
        let fut = Some(fut);
        tasks.live.insert(id, Live { fut, owner, waker });
        if let Some(ts) = self.trace_now() {
            if let Some(t) = self.trace_mut() {
                t.user_event(ts, "chorus::spawn");
            }
        }
    }

    /// Number a new ask, whose answer goes to its slot, timing out after `timeout`.
    pub(crate) fn start_ask(&mut self, ask: Arc<dyn AskStart>, timeout: Option<Duration>) -> u64 {
        // The clock is read only for what needs it (a deadline, the trace's span of
        // the wait): an untraced ask without a timeout skips a clock read.
        let now = if timeout.is_some() || self.traced() {
            self.now()
        } else {
            0.0
        };
        let tasks = self.tasks.get_mut();
        let id = tasks.next_ask;
        tasks.next_ask += 1;
        ask.slot().lock().unwrap_or_else(|p| p.into_inner()).id = id;
        let deadline = timeout.map(|d| (now + d.as_secs_f64(), d));
        tasks.asks.insert(
            id,
            Pending {
                ask,
                deadline,
                since: now,
            },
        );
        if deadline.is_some() {
            tasks.timed += 1;
            if !std::mem::replace(&mut tasks.timer_armed, true) {
                self.post_timer();
            }
        }
        id
    }

    /// Answer ask `id` of PE `to` with `payload`.
    pub(crate) fn reply(&mut self, to: crate::base::ids::Pe, id: u64, payload: Payload) {
        let env = self.envelope(Reply { id, payload }, SendOpts::default());
        self.post(to, env);
    }

    /// The timer runs behind every other message of this PE.
    fn post_timer(&mut self) {
        let env = self.envelope(AskTimer {}, SendOpts::prio(i32::MAX));
        self.post(self.me, env);
    }

    /// Record the wait of ask `id` as a phase of the trace, from `since` to now.
    fn trace_wait(&mut self, name: &str, id: u64, since: f64) {
        if let Some(ts) = self.trace_now() {
            let start = ns(since).min(ts);
            if let Some(t) = self.trace_mut() {
                t.phase(start, ts - start, name, &[("ask", id)]);
            }
        }
    }
}

impl PeRuntime {
    /// Handle a reply or the ask timer.
    pub(super) fn on_task(&mut self, m: TaskMsg, _from: Origin) {
        match m {
            TaskMsg::Reply(Reply { id, payload }) => {
                let tasks = self.core.tasks.get_mut();
                let Some(p) = tasks.asks.remove(&id) else {
                    tasks.late_replies += 1;
                    return;
                };
                if p.deadline.is_some() {
                    tasks.timed -= 1;
                }
                self.core.trace_wait("chorus::ask_wait", id, p.since);
                resolve(p.ask.slot(), Ok(payload));
            }
            TaskMsg::AskTimer(AskTimer {}) => self.on_ask_timer(),
        }
    }

    /// Time out the asks whose deadline passed; while others wait, compute a slice
    /// and look again.
    fn on_ask_timer(&mut self) {
        let now = self.core.now();
        let me = self.core.me;
        let tasks = self.core.tasks.get_mut();
        let mut due: Vec<u64> = tasks
            .asks
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|(d, _)| d <= now))
            .map(|(id, _)| *id)
            .collect();
        due.sort_unstable();
        let next = tasks
            .asks
            .values()
            .filter_map(|p| p.deadline.map(|(d, _)| d))
            .filter(|d| *d > now)
            .fold(f64::INFINITY, f64::min);
        let mut expired = Vec::with_capacity(due.len());
        for id in due {
            if let Some(p) = tasks.asks.remove(&id) {
                tasks.timed -= 1;
                expired.push((id, p));
            }
        }
        if tasks.timed == 0 {
            tasks.timer_armed = false;
        }
        let rearm = tasks.timer_armed;
        for (id, p) in expired {
            self.core.trace_wait("chorus::ask_timed_out", id, p.since);
            let after = p.deadline.map_or(Duration::ZERO, |(_, d)| d);
            resolve(p.ask.slot(), Err(AskError::TimedOut { pe: me, id, after }));
        }
        if rearm {
            let left = Duration::from_secs_f64((next - now).max(0.0));
            self.core.work(left.min(TIMER_SLICE));
            self.core.post_timer();
        }
    }

    /// Poll every task that is ready, each followed by what it asked to do with the
    /// `Ctx`; until none is ready.
    pub(super) fn run_tasks(&mut self) {
        loop {
            let Some(tasks) = self.core.tasks.built_mut() else {
                return;
            };
            let Some(id) = tasks.pop_ready() else { return };
            let Some(live) = tasks.live.get_mut(&id) else {
                continue;
            };
            let Some(fut) = live.fut.take() else { continue };
            live.waker.queued.store(false, Ordering::Release);
            let (owner, waker) = (live.owner.clone(), Waker::from(live.waker.clone()));
            if !self.owner_here(&owner) {
                self.end_task(id, Some(owner));
                continue;
            }
            self.poll_task(id, fut, owner, waker);
        }
    }

    /// True while there are tasks to poll.
    pub(super) fn tasks_ready(&self) -> bool {
        self.core.tasks.get().is_some_and(Tasks::has_ready)
    }

    fn poll_task(&mut self, id: u64, mut fut: BoxTask, owner: Current, waker: Waker) {
        if let Some(ts) = self.core.trace_now() {
            if let Some(t) = self.core.trace_mut() {
                t.runtime_begin(ts, "chorus::task");
            }
        }
        let mut cx = Context::from_waker(&waker);
        let polled = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
        let tasks = self.core.tasks.get_mut();
        let mut ops = std::mem::take(&mut tasks.spare);
        tasks.outbox.take_into(&mut ops);
        let ops_ok = self.run_ops(&mut ops, &owner);
        self.core.tasks.get_mut().spare = ops;
        self.core.trace_entries_end();
        match polled {
            Ok(Poll::Pending) if ops_ok => {
                if let Some(live) = self.core.tasks.get_mut().live.get_mut(&id) {
                    live.fut = Some(fut);
                }
            }
            Ok(_) => self.end_task(id, None),
            Err(p) => {
                self.end_task(id, None);
                self.task_panicked(panic_message(p));
            }
        }
    }

    /// Run a task's requests as its owner; false if one panicked (reported), which
    /// ends the task: what it awaited will never come.
    fn run_ops(&mut self, ops: &mut Vec<Op>, owner: &Current) -> bool {
        let core = &mut self.core;
        core.current = owner.clone();
        let mut ok = true;
        for op in ops.drain(..) {
            let ran = catch_unwind(AssertUnwindSafe(|| op.run(&mut Ctx { core: &mut *core })));
            if let Err(p) = ran {
                ok = false;
                core.current = Current::Main;
                let message = panic_message(p);
                core.fail(RuntimeError::HandlerPanic {
                    pe: core.me,
                    chare: "task".to_string(),
                    message,
                });
                core.current = owner.clone();
            }
        }
        core.current = Current::Main;
        ok
    }

    fn task_panicked(&mut self, message: String) {
        let pe = self.core.me;
        self.core.fail(RuntimeError::HandlerPanic {
            pe,
            chare: "task".to_string(),
            message,
        });
    }

    /// Forget task `id`; `left` names its owner when it ends because the owner is no
    /// longer on this PE (reported).
    fn end_task(&mut self, id: u64, left: Option<Current>) {
        self.core.tasks.get_mut().live.remove(&id);
        if let Some(owner) = left {
            let pe = self.core.me;
            self.core.fail(RuntimeError::TaskOwnerLeft {
                pe,
                owner: format!("{owner:?}"),
            });
        }
    }

    /// True if the chare a task runs as still lives on this PE.
    fn owner_here(&mut self, owner: &Current) -> bool {
        match owner {
            Current::Main => true,
            Current::Chare(id) => self.find_chare(*id).is_some(),
            Current::Group(coll) => self.colls.contains_key(coll),
            Current::Element(coll, addr) => self.colls.get(coll).is_some_and(|c| match &**c {
                Collection {
                    members: Members::Array { elements, .. },
                    ..
                } => elements.contains_key(&addr.key),
                _ => false,
            }),
        }
    }
}

impl PeRuntime {
    /// A checkpoint refuses a PE with an unfinished task: a task's future cannot be
    /// saved, and a restart without it would lose what it was waiting to do.
    pub(super) fn refuse_pending_tasks(
        &self,
    ) -> Result<(), crate::base::checkpoint_error::CheckpointError> {
        let Some(tasks) = self.core.tasks.get().filter(|t| !t.live.is_empty()) else {
            return Ok(());
        };
        let mut owners: Vec<String> = (tasks.live.iter())
            .map(|(id, l)| format!("task {id} of {:?}", l.owner))
            .collect();
        owners.sort();
        Err(crate::base::checkpoint_error::CheckpointError::Unsaveable {
            pe: self.core.me,
            what: format!(
                "{} unfinished async tasks ({})",
                owners.len(),
                owners.join(", ")
            ),
            why: "a task's future cannot be saved: checkpoint once every spawned task has finished"
                .into(),
        })
    }
}
