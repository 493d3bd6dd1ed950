//! Migration of array elements on one PE: taking an element's request to move,
//! sending it off, installing one that arrives, and routing messages for elements
//! that are not here (the tables behind the routing are in `location.rs`).

use super::{
    describe_index, guarded, Current, Element, Members, MoveRequest, Origin, PeCore, PeRuntime, Via,
};
use crate::api::registry::{Migrator, Registry};
use crate::base::error::MigrateError;
use crate::base::error::RuntimeError;
use crate::base::ids::{CollectionId, IndexKey, Pe};
use crate::engine::location::{Loc, Route};
use crate::msg::array::ElemAddr;
use crate::msg::envelope::SendOpts;
use crate::msg::envelope::{Dest, Envelope, Kind};
use crate::msg::kind::migrate::{Migrate, MoveMsg, Moved};
use crate::msg::payload::Payload;
use std::sync::Arc;

/// How an element is named in errors.
pub(super) fn element_name(coll: CollectionId, addr: &ElemAddr) -> String {
    format!("element {} of {coll}", describe_index(addr))
}

/// A registered chare type's name, borrowed from the registry: every move looks it
/// up for the errors it might report, and a copy of the string cost an allocation.
pub(super) struct TypeName(Arc<Registry>, usize);

impl std::ops::Deref for TypeName {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.chares.get(self.1).map_or("", |t| t.name.as_str())
    }
}

impl PeCore {
    /// Record the running element's request to move to `to` once its handler returns.
    pub(crate) fn request_move(&mut self, to: Pe) -> Result<(), MigrateError> {
        let (coll, addr) = self.running_element().map_err(MigrateError::NotAnElement)?;
        if self.leaving {
            return Err(MigrateError::Leaving);
        }
        if self.in_step(coll, &addr.key) {
            return Err(MigrateError::InBalancingStep);
        }
        if self.destroying(coll, &addr) {
            return Err(MigrateError::Destroyed);
        }
        if to as usize >= self.npes {
            return Err(MigrateError::NoSuchPe {
                to,
                num_pes: self.npes,
            });
        }
        self.migrator(coll)?;
        // A later request replaces an earlier one; asking for this PE cancels it.
        self.moves.retain(|r| !(r.coll == coll && r.addr == addr));
        if to != self.me {
            self.moves.push(MoveRequest {
                coll,
                addr,
                to,
                balancing: false,
            });
        }
        Ok(())
    }

    /// The running array element, or what is running instead (for the refusal of
    /// what only elements may do).
    pub(super) fn running_element(&self) -> Result<(CollectionId, ElemAddr), String> {
        match &self.current {
            Current::Element(coll, addr) => Ok((*coll, addr.clone())),
            Current::Main => Err("the main function".into()),
            Current::Chare(id) => Err(id.to_string()),
            Current::Group(c) => Err(format!("a member of group {c}")),
        }
    }

    /// How elements of array `coll` move, with their type's registered name.
    pub(super) fn migrator(
        &self,
        coll: CollectionId,
    ) -> Result<(Migrator, TypeName), MigrateError> {
        let ty = self.array_meta(coll).map(|m| m.ty as usize);
        match ty.and_then(|ty| Some((ty, self.reg.chares.get(ty)?))) {
            Some((ty, t)) => match t.migrate {
                Some(m) => Ok((m, TypeName(Arc::clone(&self.reg), ty))),
                None => Err(MigrateError::NotMigratable {
                    chare: t.name.clone(),
                }),
            },
            None => Err(MigrateError::NotMigratable {
                chare: format!("of {coll} (not known on this PE)"),
            }),
        }
    }

    pub(super) fn fail_move(&mut self, coll: CollectionId, addr: &ElemAddr, reason: MigrateError) {
        let err = RuntimeError::Migrate {
            pe: self.me,
            element: element_name(coll, addr),
            reason,
        };
        self.fail(err);
    }

    /// An element's home PE: this one if the location table says so, else the map's.
    fn home_of(&mut self, coll: CollectionId, addr: &ElemAddr) -> Result<Pe, RuntimeError> {
        match self.loc.get(coll, &addr.key) {
            Some(l) if l.homed_here => Ok(self.me),
            _ => self.locate(coll, addr),
        }
    }

    /// Tell `to` that an element whose home is `home` reached `pe` on move `moves`.
    pub(crate) fn send_news(&mut self, to: Pe, news: Moved) {
        let env = self.envelope(news, SendOpts::default());
        self.post(to, env);
    }

    /// Tell `src`, which sent a message to an element that has moved on, that it is on
    /// PE `at.0` after move `at.1` (once in a row), so its next messages go straight there.
    fn tell_sender(&mut self, src: Pe, coll: CollectionId, addr: &ElemAddr, at: (Pe, u32)) {
        let (pe, moves) = at;
        if !self.loc.should_tell(src, coll, &addr.key, moves) {
            return;
        }
        match self.home_of(coll, addr) {
            Ok(home) => {
                let news = Moved {
                    coll,
                    addr: addr.clone(),
                    home,
                    pe,
                    moves,
                };
                self.send_news(src, news);
            }
            Err(e) => self.fail(e),
        }
    }

    /// Send a copy of a broadcast's `payload` on to each element homed here that is
    /// elsewhere, with the broadcast's priority and expedited flag (`opts`).
    pub(crate) fn send_to_away(
        &mut self,
        coll: CollectionId,
        away: Vec<(IndexKey, Loc)>,
        payload: &Payload,
        opts: SendOpts,
    ) {
        for (key, l) in away {
            let addr = ElemAddr {
                key,
                order: l.order,
            };
            let kind = Kind::User {
                dest: Dest::ElementAt(coll, addr, l.moves),
                payload: payload.duplicate(),
                hops: 0,
            };
            let env = self.envelope(kind, opts);
            self.post(l.pe, env);
        }
    }
}

impl PeRuntime {
    /// The layer could not deliver `env`, sent from here, because PE `failed` had
    /// failed: an element's migrating state or a message for an element is reported
    /// lost (quiescence counts it processed at the dead PE, `lost_here`). Returns
    /// false, leaving `env` to the layer's count of drops, for anything else.
    pub(crate) fn undeliverable(&mut self, env: &Envelope, failed: Pe) -> bool {
        let (coll, addr, what) = match &env.kind {
            Kind::Move(MoveMsg::Migrate(Migrate { coll, addr, .. })) => {
                (*coll, addr, "the migrating state".to_string())
            }
            Kind::User {
                dest: Dest::Element(coll, addr) | Dest::ElementAt(coll, addr, _),
                ..
            } => {
                let what = format!("{} message(s)", env.weight());
                (*coll, addr, what)
            }
            _ => return false,
        };
        let err = RuntimeError::ElementLost {
            pe: self.core.me,
            element: element_name(coll, addr),
            failed,
            what,
        };
        self.core.fail(err);
        true
    }

    /// Make the moves the handler that just ran asked for.
    pub(super) fn apply_moves(&mut self) {
        while !self.core.moves.is_empty() {
            for req in std::mem::take(&mut self.core.moves) {
                self.depart(req);
            }
        }
    }

    /// Serialize an element and send it to its new PE, leaving a forwarding pointer.
    fn depart(&mut self, req: MoveRequest) {
        let MoveRequest {
            coll,
            addr,
            to,
            balancing,
        } = req;
        let me = self.core.me;
        let (m, name) = match self.core.migrator(coll) {
            Ok(found) => found,
            Err(reason) => return self.core.fail_move(coll, &addr, reason),
        };
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        let Some(e) = elements.get_mut(&addr.key) else {
            return self.core.fail_move(coll, &addr, MigrateError::NotHere);
        };
        // Checked before packing, so an element that cannot move stays intact.
        let Some(moves) = e.moves.checked_add(1) else {
            let reason = MigrateError::TooManyMoves(e.moves);
            return self.core.fail_move(coll, &addr, reason);
        };
        // `about_to_migrate` runs inside the pack: a move it asks for is refused.
        self.core.leaving = true;
        let state = guarded(
            &mut self.core,
            Current::Element(coll, addr.clone()),
            &name,
            |ctx| {
                // Named only on failure: formatting the name cost a quarter of a move.
                (m.pack)(e.chare.as_mut(), ctx).map_err(|r| RuntimeError::Migrate {
                    pe: me,
                    element: element_name(coll, &addr),
                    reason: MigrateError::Pack(r),
                })
            },
        );
        self.core.leaving = false;
        // A state that did not serialize stays here (the error went to the policy).
        let Some(state) = state else { return };
        // What `about_to_migrate` contributed counts before the element leaves.
        self.apply_deferred();
        let Some(e) = self
            .colls
            .get_mut(&coll)
            .and_then(|c| match &mut c.members {
                Members::Array { elements, .. } => elements.remove(&addr.key),
                Members::Group { .. } => None,
            })
        else {
            return;
        };
        let (pe, order, homed_here) = (to, addr.order, e.home == me);
        let loc = Loc {
            pe,
            moves,
            order,
            homed_here,
        };
        self.core.loc.learn(coll, &addr.key, loc);
        let kind = Migrate {
            coll,
            addr: addr.clone(),
            home: e.home,
            moves,
            contributed: e.contributed,
            syncs: e.syncs,
            balancing,
            state: Box::new(state),
        };
        // Expedited, as creations are: the element is installed before its messages run.
        let env = self.core.envelope(kind, SendOpts::expedited());
        self.core.post(to, env);
        self.tell_senders(coll, addr, (e.home, to, moves), balancing);
    }

    /// Run a migration or location message.
    pub(super) fn on_move(&mut self, m: MoveMsg, from: Origin) {
        match m {
            MoveMsg::Migrate(m) => self.arrive(m),
            MoveMsg::Moved(news) => self.learn(news),
            MoveMsg::Destroy(d) => self.on_destroy(d, from),
            MoveMsg::Deleted(d) => self.on_deleted(d),
        }
    }

    /// Note where an element has gone (and pass it on to where elements that sent
    /// to it went in a balancing step).
    fn learn(&mut self, news: Moved) {
        self.relay_news(&news);
        let Moved {
            coll,
            addr,
            home,
            pe,
            moves,
        } = news;
        let homed_here = home == self.core.me;
        let loc = Loc {
            pe,
            moves,
            order: addr.order,
            homed_here,
        };
        self.core.loc.learn(coll, &addr.key, loc);
    }

    /// Install an element that migrated here, tell its home, and run what waited for it.
    fn arrive(&mut self, m: Migrate) {
        let Migrate {
            coll,
            addr,
            home,
            moves,
            contributed,
            syncs,
            balancing,
            state,
        } = m;
        let me = self.core.me;
        let (m, name) = match self.core.migrator(coll) {
            Ok(found) => found,
            Err(reason) => return self.core.fail_move(coll, &addr, reason),
        };
        let occupied = match self.colls.get(&coll).map(|c| &c.members) {
            Some(Members::Array { elements, .. }) => elements.contains_key(&addr.key),
            _ => false,
        };
        if occupied {
            // Overwriting would silently lose the resident element's state.
            return self
                .core
                .fail_move(coll, &addr, MigrateError::Occupied { pe: me });
        }
        let chare = guarded(
            &mut self.core,
            Current::Element(coll, addr.clone()),
            &name,
            |ctx| {
                (m.unpack)(*state, ctx).map_err(|r| RuntimeError::Migrate {
                    pe: me,
                    element: element_name(coll, &addr),
                    reason: MigrateError::Unpack(r),
                })
            },
        );
        // A lost element's waiting messages are reported at quiescence.
        let Some(chare) = chare else { return };
        let e = Element {
            chare,
            order: addr.order,
            contributed,
            home,
            moves,
            load: 0.0,
            syncs,
        };
        self.install(coll, addr, e, balancing);
    }

    /// Put an arrived element in place, record where it is, tell its home, and run
    /// what waited for it; one moved by a balancing step waits for the step's resume.
    fn install(&mut self, coll: CollectionId, addr: ElemAddr, e: Element, balancing: bool) {
        let me = self.core.me;
        let (home, moves, syncs) = (e.home, e.moves, e.syncs);
        let Some(Members::Array { elements, .. }) =
            self.colls.get_mut(&coll).map(|c| &mut c.members)
        else {
            return;
        };
        elements.insert(addr.key.clone(), e);
        let homed_here = home == me;
        self.core.loc.learn(
            coll,
            &addr.key,
            Loc {
                pe: me,
                moves,
                order: addr.order,
                homed_here,
            },
        );
        let waiting = self.core.loc.arrived(coll, &addr.key);
        if balancing {
            self.arrived_in_step(coll, addr.key.clone(), syncs.saturating_sub(1));
        }
        if !homed_here {
            let news = Moved {
                coll,
                addr,
                home,
                pe: me,
                moves,
            };
            self.core.send_news(home, news);
        }
        self.requeue(waiting);
    }

    /// Route a message for an element that is not on this PE: along newer news of
    /// it, to its home, or into the wait for an element on its way here.
    pub(super) fn element_absent(
        &mut self,
        coll: CollectionId,
        addr: ElemAddr,
        moves: u32,
        payload: Payload,
        via: Via,
    ) {
        let me = self.core.me;
        if self.drop_if_deleted(coll, &addr, payload.count() as u64) {
            return;
        }
        let opts = SendOpts {
            prio: via.prio,
            expedited: via.expedited,
        };
        match self.core.loc.route(coll, &addr.key, moves, me) {
            Route::Forward { pe, moves } => {
                if via.src != me && via.src != pe {
                    self.core.tell_sender(via.src, coll, &addr, (pe, moves));
                }
                let kind = Kind::User {
                    dest: Dest::ElementAt(coll, addr, moves),
                    payload,
                    hops: via.hops.saturating_add(1),
                };
                let env = self.core.envelope(kind, opts);
                self.core.post(pe, env);
            }
            Route::NoNews if moves > 0 => {
                // The news it followed was sent after the element was sent here.
                let env = via.waiting(Kind::User {
                    dest: Dest::ElementAt(coll, addr.clone(), moves),
                    payload,
                    hops: via.hops,
                });
                self.core.loc.wait(coll, addr.key, env);
            }
            Route::NoNews => match self.core.locate(coll, &addr) {
                // Sent by a PE that did not know the array yet: its creator forwards.
                Ok(home) if home != me && via.hops < 4 => {
                    let kind = Kind::User {
                        dest: Dest::Element(coll, addr),
                        payload,
                        hops: via.hops + 1,
                    };
                    let env = self.core.envelope(kind, opts);
                    self.core.post(home, env);
                }
                Ok(_) => {
                    let index = describe_index(&addr);
                    self.core.fail(RuntimeError::UnknownArrayIndex {
                        pe: me,
                        coll,
                        index,
                    });
                }
                Err(e) => self.core.fail(e),
            },
        }
    }
}
