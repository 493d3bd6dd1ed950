//! Dispatch: what a PE does with each envelope it takes from its queue. It counts
//! and traces the envelope, checks it, sets it aside if its target is not here yet,
//! and routes it by family to the module that handles it; it holds no handler.

use super::{PeRuntime, Via};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::SendOpts;
use crate::msg::envelope::{Envelope, Kind};
use crate::trace::ns;

/// Who sent a message and how: what a handler may need besides the message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    pub(crate) src: Pe,
    pub(crate) seq: u32,
    pub(crate) prio: i32,
    pub(crate) expedited: bool,
}

impl Origin {
    fn of(env: &Envelope) -> Self {
        Origin {
            src: env.src,
            seq: env.seq,
            prio: env.prio,
            expedited: env.expedited,
        }
    }

    /// The priority and urgency it was sent with, to send on with the same.
    pub(crate) fn opts(&self) -> SendOpts {
        SendOpts {
            prio: self.prio,
            expedited: self.expedited,
        }
    }
}

impl PeRuntime {
    pub(super) fn process(&mut self, env: Envelope) {
        self.count_processed(&env);
        self.trace_arrival(&env);
        let from = Origin::of(&env);
        if let Err(what) = env.kind.check(self.core.npes) {
            let pe = self.core.me;
            let what = format!("envelope from PE {}: {what}; dropped", from.src);
            return self.core.fail(RuntimeError::BadInput { pe, what });
        }
        if self.target_missing(&env) {
            return self.wait_or_fail(env);
        }
        self.route(env.kind, from);
        self.core.trace_entries_end();
        self.settle();
    }

    /// Act on what the handler asked for once it returned: tasks it spawned or woke,
    /// contributions, moves, deletions and `at_sync` calls, until none is left (a
    /// resume may ask for more).
    pub(super) fn settle(&mut self) {
        loop {
            self.run_tasks();
            self.apply_deferred();
            self.apply_moves();
            self.apply_destroys();
            self.apply_syncs();
            if self.core.settled() && !self.tasks_ready() {
                break;
            }
        }
    }

    /// Hand a message to the module that handles its family.
    fn route(&mut self, kind: Kind, from: Origin) {
        match kind {
            Kind::User {
                dest,
                payload,
                hops,
            } => self.deliver(dest, payload, Via::new(from, hops)),
            Kind::Bcast(m) => self.on_bcast(m, from),
            Kind::Create(m) => self.on_create(m, from),
            Kind::Reduce(m) => self.on_reduce(m, from),
            Kind::Qd(m) => self.on_quiescence(m, from),
            Kind::Exit(m) => self.on_exit(m, from),
            Kind::Move(m) => self.on_move(m, from),
            Kind::Flow(m) => self.on_flow(m, from),
            Kind::Balance(m) => self.on_balance(m, from),
            Kind::Ckpt(m) => self.on_checkpoint(m, from),
            Kind::Task(m) => self.on_task(m, from),
            Kind::Section(m) => self.on_section(m, from),
        }
    }

    /// Open the trace's slice for a message about to run.
    fn trace_arrival(&mut self, env: &Envelope) {
        if let Some(t) = self.core.trace.as_deref_mut() {
            let port = &self.core.port;
            let ts = t.take_delivery_start().unwrap_or_else(|| ns(port.now()));
            t.idle_end(ts);
            t.incoming(ts, env.src, env.msg_id(), env.wire_bytes());
            if let Some(what) = env.kind.runtime_entry() {
                t.runtime_begin(ts, what);
            }
        }
    }
}
