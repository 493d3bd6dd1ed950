//! Delivery of user messages to chares, group members and array elements, and
//! what happens to a message whose target is not (yet) here.

use super::{invoke, Collection, Current, Members, Origin, PeRuntime, Via};
use crate::base::error::MigrateError;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::base::tree;
use crate::msg::array::ElemAddr;
use crate::msg::envelope::SendOpts;
use crate::msg::envelope::{Dest, Envelope, Kind};
use crate::msg::kind::bcast::{Bcast, BcastMsg, NodeBcast};
use crate::msg::kind::quiescence::Orphans;
use crate::msg::payload::Payload;

impl PeRuntime {
    /// True if the chare or collection the envelope needs is not (yet) on this PE.
    pub(super) fn target_missing(&mut self, env: &Envelope) -> bool {
        match &env.kind {
            Kind::User {
                dest: Dest::Chare(id),
                ..
            } => self.find_chare(*id).is_none(),
            Kind::User { dest, .. } => dest.coll().is_some_and(|c| !self.colls.contains_key(&c)),
            kind => kind
                .family()
                .and_then(|f| f.body().needs())
                .is_some_and(|c| !self.colls.contains_key(&c)),
        }
    }

    /// Put a message aside until the chare or collection it names is created, or
    /// report it if that can no longer happen. A waiting message counts as processed
    /// and is counted as sent again when requeued, so quiescence can be reached with
    /// messages still waiting: at quiescence no creation is in flight, and they are
    /// reported as undeliverable (see `Orphans`).
    pub(super) fn wait_or_fail(&mut self, env: Envelope) {
        let me = self.core.me;
        let dest_coll = match &env.kind {
            Kind::User { dest, .. } => dest.coll().ok_or(dest.clone()),
            kind => match kind.family().and_then(|f| f.body().needs()) {
                Some(coll) => Ok(coll),
                None => return,
            },
        };
        match dest_coll {
            Ok(coll) => {
                if !self.colls_announced.contains(coll.creator, coll.seq) {
                    self.waiting_for_coll
                        .get_mut()
                        .entry(coll)
                        .or_default()
                        .push(env);
                } else {
                    self.core
                        .fail(RuntimeError::UnknownCollection { pe: me, coll });
                }
            }
            Err(Dest::Chare(id)) => {
                let announced = self.chares.get().map(|c| &c.announced);
                if !announced.is_some_and(|a| a.contains(id.creator, id.seq)) {
                    self.chares
                        .get_mut()
                        .waiting
                        .entry(id)
                        .or_default()
                        .push(env);
                } else {
                    self.core.fail(RuntimeError::UnknownChare {
                        pe: me,
                        chare: id.to_string(),
                    });
                }
            }
            Err(_) => {}
        }
    }

    /// At quiescence: messages still waiting for a creation can never be delivered.
    pub(super) fn report_orphans(&mut self, root: Pe) {
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            self.core.uncounted(c, Orphans { root });
        }
        let me = self.core.me;
        let chares: Vec<ChareId> = match self.chares.built_mut() {
            Some(c) => c.waiting.drain().map(|(id, _)| id).collect(),
            None => Vec::new(),
        };
        for id in chares {
            self.core.fail(RuntimeError::UnknownChare {
                pe: me,
                chare: id.to_string(),
            });
        }
        let colls: Vec<CollectionId> = self
            .waiting_for_coll
            .take()
            .into_iter()
            .flat_map(HashMap::into_keys)
            .collect();
        for coll in colls {
            self.core
                .fail(RuntimeError::UnknownCollection { pe: me, coll });
        }
        // Messages for an element that never arrived: its state was lost on the way.
        for (coll, key, envs) in self.core.loc.drain_waiting() {
            let order = envs.iter().find_map(|env| match &env.kind {
                Kind::User {
                    dest: Dest::ElementAt(_, addr, _),
                    ..
                } => Some(addr.order),
                _ => None,
            });
            let addr = ElemAddr {
                key,
                order: order.unwrap_or_default(),
            };
            let messages = envs.iter().map(Envelope::weight).sum();
            self.core
                .fail_move(coll, &addr, MigrateError::Lost { pe: me, messages });
        }
    }

    /// Put messages that waited for a creation or a migration back in line, ahead of
    /// what arrived after them and in their own order: a sender's messages to one
    /// destination run in the order it sent them. (Queued behind later arrivals, they
    /// ran after them, or never when one of those ended the job.)
    pub(super) fn requeue(&mut self, waiting: Option<Vec<Envelope>>) {
        let waiting = waiting.unwrap_or_default();
        for env in &waiting {
            if env.counted {
                self.core.ledger.requeued(env.weight());
            }
        }
        // Expedited ones too: queued behind a recount that arrived meanwhile, an
        // insert waiting for its array went uncounted.
        for env in waiting.into_iter().rev() {
            let (prio, exp) = (env.prio, env.expedited);
            self.core.queue.push_front(env, prio, exp);
        }
    }

    pub(super) fn deliver(&mut self, dest: Dest, payload: Payload, via: Via) {
        let me = self.core.me;
        let prio = via.prio;
        match dest {
            // `process` has put messages for absent chares and collections aside.
            Dest::Chare(id) => {
                if let Some(slot) = self.find_chare(id) {
                    let chare = self.chares.get_mut().slab[slot].chare.as_mut();
                    if let Some(rest) = invoke(
                        &mut self.core,
                        &mut self.delivered,
                        Current::Chare(id),
                        chare,
                        payload,
                    ) {
                        self.requeue_rest(Dest::Chare(id), rest, prio);
                    }
                }
            }
            Dest::Group(coll) => match self.colls.get_mut(&coll).map(|b| &mut **b) {
                Some(Collection {
                    members: Members::Group { member, .. },
                    ..
                }) => {
                    let cur = Current::Group(coll);
                    if let Some(rest) = invoke(
                        &mut self.core,
                        &mut self.delivered,
                        cur,
                        member.as_mut(),
                        payload,
                    ) {
                        self.requeue_rest(Dest::Group(coll), rest, prio);
                    }
                }
                Some(_) => self.core.fail(RuntimeError::WrongCollectionKind {
                    pe: me,
                    coll,
                    is: "an array",
                    addressed: "a group",
                }),
                None => {}
            },
            Dest::Element(coll, addr) => self.deliver_element(coll, addr, 0, payload, via),
            Dest::ElementAt(coll, addr, moves) => {
                self.deliver_element(coll, addr, moves, payload, via)
            }
            Dest::Array(coll) => self
                .core
                .fail(RuntimeError::WholeArrayPointToPoint { pe: me, coll }),
        }
    }

    /// Deliver to an array element here, or route the message on if it is elsewhere.
    pub(super) fn deliver_element(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
        moves: u32,
        payload: Payload,
        via: Via,
    ) {
        let me = self.core.me;
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        let Members::Array { elements, .. } = &mut c.members else {
            return self.core.fail(RuntimeError::WrongCollectionKind {
                pe: me,
                coll,
                is: "a group",
                addressed: "an array element",
            });
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return self.element_absent(coll, addr, moves, payload, via);
        };
        if via.src != me {
            self.core.syncs.note_sender(coll, &addr.key, via.src);
        }
        // Messages routed by news name the element by key; its order key is here.
        let addr = ElemAddr {
            order: e.order,
            ..addr
        };
        // Only a run can stop early; its address is kept for the rest.
        let keep = payload.is_run().then(|| addr.clone());
        let cur = Current::Element(coll, addr);
        let rest = invoke(
            &mut self.core,
            &mut self.delivered,
            cur,
            e.chare.as_mut(),
            payload,
        );
        e.load += self.core.syncs.take_last();
        if let (Some(rest), Some(addr)) = (rest, keep) {
            let dest = if moves == 0 {
                Dest::Element(coll, addr)
            } else {
                Dest::ElementAt(coll, addr, moves)
            };
            self.requeue_rest(dest, rest, via.prio);
        }
    }

    /// Put the messages a run did not get to back at the head of their priority.
    pub(super) fn requeue_rest(&mut self, dest: Dest, rest: Payload, prio: i32) {
        self.core.ledger.put_back(rest.count() as u64);
        let kind = Kind::User {
            dest,
            payload: rest,
            hops: 0,
        };
        let env = self.core.envelope(kind, SendOpts::prio(prio));
        self.core.queue.push_front(env, prio, false);
    }

    pub(super) fn find_chare(&mut self, id: ChareId) -> Option<usize> {
        let c = self.chares.built_mut()?;
        match c.last {
            Some((last, slot)) if last == id => Some(slot),
            _ => {
                let slot = *c.slot.get(&id)?;
                c.last = Some((id, slot));
                Some(slot)
            }
        }
    }

    /// Run a broadcast here and pass it down its tree.
    pub(super) fn on_bcast(&mut self, m: BcastMsg, from: Origin) {
        match m {
            BcastMsg::Bcast(b) => self.bcast_here(b, from.opts()),
            BcastMsg::NodeBcast(b) => self.node_bcast_here(b, from.opts()),
        }
    }

    /// Run a nodegroup broadcast on this node's member and pass it down the tree over
    /// nodes.
    fn node_bcast_here(&mut self, b: NodeBcast, opts: SendOpts) {
        let NodeBcast {
            coll,
            root,
            payload,
        } = b;
        let root_node = root as usize / self.core.node_size;
        for c in self.core.node_children(root_node) {
            let kind = NodeBcast {
                coll,
                root,
                payload: payload.duplicate(),
            };
            let env = self.core.envelope(kind, opts);
            self.core.post(c, env);
        }
        let Some(Collection {
            members: Members::Group { member, .. },
            ..
        }) = self.colls.get_mut(&coll).map(|b| &mut **b)
        else {
            let (pe, what) = (
                self.core.me,
                format!("a nodegroup broadcast to {coll}, which has no member here; dropped"),
            );
            return self.core.fail(RuntimeError::BadInput { pe, what });
        };
        invoke(
            &mut self.core,
            &mut self.delivered,
            Current::Group(coll),
            member.as_mut(),
            payload,
        );
    }

    fn bcast_here(&mut self, b: Bcast, opts: SendOpts) {
        let Bcast {
            dest,
            root,
            payload,
        } = b;
        let Some(coll) = dest.coll() else { return };
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let env = self.core.envelope(
                Bcast {
                    dest: dest.clone(),
                    root,
                    payload: payload.duplicate(),
                },
                opts,
            );
            self.core.post(c, env);
        }
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        // A broadcast carries one message, never a run, so nothing is ever left over.
        match &mut c.members {
            Members::Group { member, .. } => {
                invoke(
                    &mut self.core,
                    &mut self.delivered,
                    Current::Group(coll),
                    member.as_mut(),
                    payload,
                );
            }
            Members::Array { elements, .. } => {
                // Each element gets a broadcast through its home: here if it is here,
                // else as a message that follows it (see `send_to_away`), so an
                // element on the move gets it once.
                let me = self.core.me;
                let (away, homed) = if self.core.loc.is_empty() {
                    (Vec::new(), elements.len())
                } else {
                    let homed = elements.values().filter(|e| e.home == me).count();
                    (self.core.loc.away_from_home(coll, me), homed)
                };
                self.core.send_to_away(coll, away, &payload, opts);
                let mut payload = Some(payload);
                let homed_here = elements.iter_mut().filter(|(_, e)| e.home == me);
                for (i, (key, e)) in homed_here.enumerate() {
                    // Handing the last receiver the original saves one duplicate.
                    let p = if i + 1 == homed {
                        payload.take()
                    } else {
                        payload.as_ref().map(Payload::duplicate)
                    };
                    let Some(p) = p else { break };
                    let addr = ElemAddr {
                        key: key.clone(),
                        order: e.order,
                    };
                    invoke(
                        &mut self.core,
                        &mut self.delivered,
                        Current::Element(coll, addr),
                        e.chare.as_mut(),
                        p,
                    );
                    e.load += self.core.syncs.take_last();
                }
            }
        }
    }
}
