//! Dispatch: what a PE does with each envelope it takes from its queue, by kind,
//! and its part in quiescence detection waves.

use super::{flow, PeRuntime, Via};
use crate::api::proxy::SendOpts;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::base::tree;
use crate::engine::location::Loc;
use crate::msg::envelope::{Envelope, Kind};
use crate::msg::reduction::RedData;
use crate::trace::ns;

impl PeRuntime {
    pub(super) fn process(&mut self, env: Envelope) {
        if env.counted {
            self.core.processed += env.weight();
            if env.src != self.core.me && flow::windowed(&env) {
                if let Some(n) = self.core.flow.handled(env.src, env.weight()) {
                    self.core.uncounted(env.src, Kind::Credit { n });
                }
            }
        }
        if let Some(t) = self.core.trace.as_deref_mut() {
            let net = &self.core.net;
            let ts = t.take_delivery_start().unwrap_or_else(|| ns(net.now()));
            t.idle_end(ts);
            t.incoming(ts, env.src, env.msg_id(), env.wire_bytes());
            if let Some(what) = env.kind.runtime_entry() {
                t.runtime_begin(ts, what);
            }
        }
        let src = env.src;
        if let Err(what) = check_kind(&env.kind, self.core.npes) {
            let pe = self.core.me;
            let what = format!("envelope from PE {src}: {what}; dropped");
            return self.core.fail(RuntimeError::BadInput { pe, what });
        }
        if self.target_missing(&env) {
            return self.wait_or_fail(env);
        }
        match env.kind {
            Kind::User {
                dest,
                payload,
                hops,
            } => {
                let via = Via {
                    src,
                    seq: env.seq,
                    prio: env.prio,
                    expedited: env.expedited,
                    hops,
                };
                self.deliver(dest, payload, via)
            }
            Kind::Bcast {
                dest,
                root,
                payload,
            } => {
                let opts = SendOpts {
                    prio: env.prio,
                    expedited: env.expedited,
                };
                self.deliver_broadcast(dest, root, payload, opts)
            }
            Kind::CreateChare { id, ty, init } => self.create_chare(id, ty, init),
            Kind::CreateGroup {
                coll,
                ty,
                root,
                init,
            } => self.create_group(coll, ty, root, init),
            Kind::CreateArray {
                coll,
                ty,
                root,
                init,
                shape,
                map,
            } => self.create_array(coll, ty, root, init, shape, map),
            Kind::Insert {
                coll,
                addr,
                init,
                hops,
            } => self.insert(coll, addr, init, hops),
            Kind::DoneInserting { coll, root } => self.recount(coll, root),
            Kind::Census { coll, epoch, count } => {
                if let Some(c) = self.colls.get_mut(&coll) {
                    c.census
                        .reports
                        .entry(epoch)
                        .or_default()
                        .push((src, count));
                    self.advance_census(coll);
                }
            }
            Kind::Contribute {
                coll,
                seq,
                reducer,
                body,
            } => {
                let (callback, partial) = *body;
                self.add_partial(coll, seq, reducer, callback, partial, false)
            }
            Kind::QdRequest { callback } => {
                let start = self.core.qd.request(callback);
                if start {
                    self.start_wave();
                }
            }
            Kind::QdWave { wave } => {
                let children: Vec<Pe> = self.core.tree_children().collect();
                for &c in &children {
                    self.core.uncounted(c, Kind::QdWave { wave });
                }
                self.core.qd.join_wave(wave, children);
            }
            Kind::QdReply {
                wave,
                sent,
                processed,
            } => {
                let parent = self.core.tree_parent();
                let out = self
                    .core
                    .qd
                    .child_reply(wave, src, sent, processed, parent.is_none());
                match out {
                    Ok(out) => self.qd_outcome(out, parent),
                    Err(e) => {
                        let pe = self.core.me;
                        let what = e.to_string();
                        self.core.fail(RuntimeError::BadInput { pe, what });
                    }
                }
            }
            Kind::Orphans { root } => self.report_orphans(root),
            Kind::Exit { root, error } => {
                let (me, n, k) = (self.core.me, self.core.npes, self.core.arity);
                // A PE stops at the first exit it sees, so it passes on only that one.
                // When PEs exit at once from several roots, a PE's parent in one tree
                // may have stopped on another's exit: every PE also passes its exit
                // down PE 0's tree, which PE 0 always starts, so each PE hears of one.
                let mut kids: Vec<Pe> = tree::children(me, root, n, k).collect();
                if root != 0 {
                    kids.extend(tree::children(me, 0, n, k).filter(|c| *c != root));
                    kids.sort_unstable();
                    kids.dedup();
                }
                for c in kids {
                    self.core.uncounted(
                        c,
                        Kind::Exit {
                            root,
                            error: error.clone(),
                        },
                    );
                }
                if let Some(e) = error {
                    if !self.core.report.errors.contains(&e) {
                        self.core.report.record_error(e);
                    }
                    self.core.report.aborted = true;
                }
                self.core.exiting = true;
            }
            Kind::Credit { n } => {
                if let Some(held) = self.core.flow.credited(src, n) {
                    for env in held {
                        let (prio, exp) = (env.prio, env.expedited);
                        self.core.queue.push(env, prio, exp);
                    }
                }
            }
            Kind::PeFailed { pe, callback } => {
                self.core.fire(&callback, RedData::U64(vec![u64::from(pe)]));
            }
            Kind::Migrate {
                coll,
                addr,
                home,
                moves,
                contributed,
                state,
            } => self.arrive(coll, addr, home, moves, contributed, state),
            Kind::Moved {
                coll,
                addr,
                home,
                pe,
                moves,
            } => {
                let homed_here = home == self.core.me;
                self.core.loc.learn(
                    coll,
                    &addr.key,
                    Loc {
                        pe,
                        moves,
                        order: addr.order,
                        homed_here,
                    },
                );
            }
            Kind::HomeContribute {
                coll,
                seq,
                reducer,
                body,
            } => {
                // The home counts an element away as one of its own.
                let (callback, partial) = *body;
                self.add_partial(coll, seq, reducer, callback, partial, true)
            }
        }
        self.core.trace_entries_end();
        self.apply_deferred();
        self.apply_moves();
    }

    pub(super) fn start_wave(&mut self) {
        let wave = self.core.qd.begin_wave();
        let children: Vec<Pe> = self.core.tree_children().collect();
        for &c in &children {
            self.core.uncounted(c, Kind::QdWave { wave });
        }
        self.core.qd.join_wave(wave, children);
    }

    pub(super) fn qd_outcome(
        &mut self,
        out: crate::engine::quiescence::Outcome,
        parent: Option<Pe>,
    ) {
        use crate::engine::quiescence::Outcome;
        match out {
            Outcome::Nothing => {}
            Outcome::Reply {
                wave,
                sent,
                processed,
            } => {
                if let Some(p) = parent {
                    self.core.uncounted(
                        p,
                        Kind::QdReply {
                            wave,
                            sent,
                            processed,
                        },
                    );
                }
            }
            Outcome::Quiescent(callbacks) => {
                self.report_orphans(self.core.me);
                for cb in callbacks {
                    self.core.fire(&cb, RedData::List(Vec::new()));
                }
            }
            Outcome::AnotherWave => self.start_wave(),
            Outcome::Stalled => self.core.abort(RuntimeError::Stalled(
                "every PE waits for a message and none is on its way, and no PE saw an exit; \
                 end the program with ctx.exit(), ctx.exit_on_quiescence() or Callback::Exit"
                    .into(),
            )),
        }
    }
}

/// What `process` checks before acting on an envelope from elsewhere: the tree roots
/// and array shapes it names (the rest is checked where it is used).
fn check_kind(kind: &Kind, npes: usize) -> Result<(), String> {
    let root = match kind {
        Kind::CreateArray { root, shape, .. } => {
            shape.check().map_err(|e| e.to_string())?;
            Some(*root)
        }
        Kind::Bcast { root, .. }
        | Kind::CreateGroup { root, .. }
        | Kind::DoneInserting { root, .. }
        | Kind::Orphans { root }
        | Kind::Exit { root, .. } => Some(*root),
        _ => None,
    };
    match root {
        Some(r) => tree::check_root(r, npes).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}
