//! Creation of chares, groups, arrays and inserted elements, and the census that
//! counts an array's elements for its reductions.

use super::{
    guarded, Census, Collection, Current, Element, Members, Origin, PeRuntime, Pending, Singleton,
};
use crate::api::chare::AnyChare;
use crate::base::error::{DestroyError, RuntimeError};
use crate::base::hash::HashMap;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::base::tree;
use crate::msg::array::ElemAddr;
use crate::msg::envelope::SendOpts;
use crate::msg::kind::create::{
    Census as ChildCount, CreateArray, CreateChare, CreateGroup, CreateMsg, CreateNodeGroup,
    DoneInserting, Insert,
};
use crate::msg::kind::Kind;
use crate::msg::payload::Payload;

impl PeRuntime {
    pub(super) fn construct(
        &mut self,
        ty: u32,
        init: Payload,
        current: Current,
    ) -> Option<Box<dyn AnyChare>> {
        let Some(ctor) = self.core.reg.chares.get(ty as usize).map(|t| t.construct) else {
            let err = RuntimeError::UnknownChareType {
                pe: self.core.me,
                ty,
            };
            self.core.fail(err);
            return None;
        };
        // The registry is shared: borrowing the name from a handle on it saves a copy
        // of the name per construction.
        let reg = self.core.reg.clone();
        let name = &reg.chares[ty as usize].name;
        guarded(&mut self.core, current, name, |ctx| ctor(init, ctx))
    }

    pub(super) fn create_chare(&mut self, id: ChareId, ty: u32, init: Payload) {
        if self.chares.get().is_some_and(|c| c.slot.contains_key(&id)) {
            // A second creation once replaced the first chare and its state.
            let (pe, what) = (
                self.core.me,
                format!("{id} created twice; the first is kept"),
            );
            return self.core.fail(RuntimeError::BadInput { pe, what });
        }
        self.chares.get_mut().announced.insert(id.creator, id.seq);
        let constructed = self.construct(ty, init, Current::Chare(id));
        let c = self.chares.get_mut();
        if let Some(chare) = constructed {
            c.slot.insert(id, c.slab.len());
            c.slab.push(Singleton { ty, chare });
        }
        let waiting = c.waiting.remove(&id);
        self.requeue(waiting);
    }

    /// True (and reported) if `coll` already has members here: a second creation
    /// once replaced them and their state, and passed the creation on again.
    fn created_twice(&mut self, coll: CollectionId) -> bool {
        if !self.colls.contains_key(&coll) {
            return false;
        }
        let (pe, what) = (
            self.core.me,
            format!("{coll} created twice; the first is kept"),
        );
        self.core.fail(RuntimeError::BadInput { pe, what });
        true
    }

    pub(super) fn announce_collection(&mut self, coll: CollectionId) {
        self.colls_announced.insert(coll.creator, coll.seq);
    }

    /// Run a creation or census message.
    pub(super) fn on_create(&mut self, m: CreateMsg, from: Origin) {
        match m {
            CreateMsg::CreateChare(CreateChare { id, ty, init }) => self.create_chare(id, ty, init),
            CreateMsg::CreateGroup(g) => self.create_group(g),
            CreateMsg::CreateNodeGroup(g) => self.create_node_group(g),
            CreateMsg::CreateArray(a) => self.create_array(a),
            CreateMsg::Insert(i) => self.insert(i),
            CreateMsg::DoneInserting(DoneInserting { coll, root, expect }) => {
                self.done_inserting(coll, root, expect)
            }
            CreateMsg::Census(c) => self.census_report(c, from.src),
            CreateMsg::Emptied(e) => self.child_emptied(e, from.src),
        }
    }

    fn create_group(&mut self, g: CreateGroup) {
        if self.created_twice(g.coll) {
            return;
        }
        let children = tree::children(self.core.me, g.root, self.core.npes, self.core.arity);
        self.pass_group_creation(&g, children, |g| g.into());
        let children = self.core.tree_children().collect();
        self.add_group_member(g.coll, g.ty, g.init, children, false);
    }

    /// Create a nodegroup's member on this node's first PE and pass the creation on
    /// down the tree over nodes.
    fn create_node_group(&mut self, CreateNodeGroup(g): CreateNodeGroup) {
        if self.created_twice(g.coll) {
            return;
        }
        let me = self.core.me;
        if self.core.node_pe(self.core.my_node()) != me {
            let coll = g.coll;
            let what = format!("the creation of nodegroup {coll} reached PE {me}, not its node's first PE; dropped");
            return self.core.fail(RuntimeError::BadInput { pe: me, what });
        }
        let root_node = g.root as usize / self.core.node_size;
        let children = self.core.node_children(root_node);
        self.pass_group_creation(&g, children, |g| CreateNodeGroup(g).into());
        self.core.rare.get_mut().node_groups.insert(g.coll);
        // Reductions climb the tree over nodes rooted at node 0, as group ones the
        // PE tree rooted at PE 0.
        let children = self.core.node_children(0);
        self.add_group_member(g.coll, g.ty, g.init, children, true);
    }

    /// Send a copy of the (node)group creation `g`, as `kind` makes it, to each of
    /// `children`.
    fn pass_group_creation(
        &mut self,
        g: &CreateGroup,
        children: impl IntoIterator<Item = Pe>,
        kind: fn(CreateGroup) -> Kind,
    ) {
        for c in children {
            let copy = CreateGroup {
                coll: g.coll,
                ty: g.ty,
                root: g.root,
                init: g.init.duplicate(),
            };
            self.core.create(c, kind(copy));
        }
    }

    /// Build a group's (or nodegroup's) member here, counting one member here and
    /// `children` below in its reductions.
    fn add_group_member(
        &mut self,
        coll: CollectionId,
        ty: u32,
        init: Payload,
        children: Vec<Pe>,
        per_node: bool,
    ) {
        self.announce_collection(coll);
        if let Some(member) = self.construct(ty, init, Current::Group(coll)) {
            let census = Census {
                local: 1,
                active_children: children,
                done: true,
                ..Census::default()
            };
            self.colls.insert(
                coll,
                Box::new(Collection {
                    ty,
                    members: Members::Group {
                        member,
                        contributed: 0,
                        per_node,
                    },
                    census,
                    reductions: Pending::default(),
                }),
            );
        }
        let waiting = (self.waiting_for_coll.built_mut()).and_then(|w| w.remove(&coll));
        self.requeue(waiting);
    }

    fn create_array(&mut self, a: CreateArray) {
        let CreateArray {
            coll,
            ty,
            root,
            init,
            shape,
            map,
        } = a;
        if self.created_twice(coll) {
            return;
        }
        for c in tree::children(self.core.me, root, self.core.npes, self.core.arity) {
            let kind = CreateArray {
                coll,
                ty,
                root,
                init: init.duplicate(),
                shape: shape.clone(),
                map,
            };
            self.core.create(c, kind);
        }
        self.announce_collection(coll);
        self.core.register_array(coll, ty, shape.clone(), map);
        let me = self.core.me;
        let mut elements = HashMap::default();
        for addr in shape.addresses() {
            match self.core.locate(coll, &addr) {
                Ok(pe) if pe == me => {
                    let order = addr.order;
                    let key = addr.key.clone();
                    if let Some(chare) =
                        self.construct(ty, init.duplicate(), Current::Element(coll, addr))
                    {
                        elements.insert(
                            key,
                            Element {
                                chare,
                                order,
                                contributed: 0,
                                home: me,
                                moves: 0,
                                load: 0.0,
                                syncs: 0,
                            },
                        );
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    self.core.fail(e);
                    break;
                }
            }
        }
        let census = Census {
            local: elements.len() as u64,
            ..Census::default()
        };
        self.colls.insert(
            coll,
            Box::new(Collection {
                ty,
                members: Members::Array {
                    elements,
                    seq_floor: 0,
                },
                census,
                reductions: Pending::default(),
            }),
        );
        self.advance_census(coll);
        let waiting = (self.waiting_for_coll.built_mut()).and_then(|w| w.remove(&coll));
        self.requeue(waiting);
    }

    /// Insert an element at its home, or send the insert on towards it.
    fn insert(&mut self, i: Insert) {
        let coll = i.coll;
        if !self.colls.contains_key(&coll) {
            return;
        }
        let home = match self.core.locate(coll, &i.addr) {
            Ok(home) => home,
            Err(e) => return self.core.fail(e),
        };
        if home != self.core.me {
            return self.forward_insert(i, home);
        }
        let origin = i.origin;
        self.insert_at_home(i, home);
        self.insert_arrived(coll, origin);
    }

    /// Create the element `i` inserts here, its home, unless it would be a twin.
    fn insert_at_home(&mut self, i: Insert, home: Pe) {
        let (me, coll) = (self.core.me, i.coll);
        let Some(c) = self.colls.get(&coll) else {
            return;
        };
        let ty = c.ty;
        let Insert {
            addr, init, round, ..
        } = i;
        let resident = match &c.members {
            Members::Array { elements, .. } => elements.contains_key(&addr.key),
            Members::Group { .. } => false,
        };
        // An element that moved away is still homed here: a second one would be a twin.
        let away = self
            .core
            .loc
            .get(coll, &addr.key)
            .filter(|l| l.homed_here && l.pe != me)
            .map(|l| l.pe);
        if c.census.is_deleted(&addr.key) {
            return self.core.fail(RuntimeError::Destroy {
                pe: me,
                element: format!("element {} of {coll}", describe_index(&addr)),
                reason: DestroyError::Reinserted,
            });
        }
        if resident || away.is_some() {
            return self.core.fail(RuntimeError::DuplicateIndex {
                pe: me,
                coll,
                index: describe_index(&addr),
                on: away.unwrap_or(me),
            });
        }
        let order = addr.order;
        let key = addr.key.clone();
        let Some(chare) = self.construct(ty, init, Current::Element(coll, addr)) else {
            return;
        };
        if let Some(Collection {
            members:
                Members::Array {
                    elements,
                    seq_floor,
                },
            ..
        }) = self.colls.get_mut(&coll).map(|b| &mut **b)
        {
            elements.insert(
                key,
                Element {
                    chare,
                    order,
                    contributed: *seq_floor,
                    home,
                    moves: 0,
                    load: 0.0,
                    // The first step neither its home nor the inserting PE had
                    // begun (see `balance`): from main or a group while a step
                    // runs, the next one, as from an element inside the step.
                    syncs: self.core.next_round(coll).max(round),
                },
            );
        }
    }

    /// Send an insert on to its element's home PE. It came here from a PE that did
    /// not know the array yet, so to its creator: an element living off its home
    /// would be missed by broadcasts and censuses.
    fn forward_insert(&mut self, i: Insert, home: Pe) {
        if i.hops >= MAX_INSERT_HOPS {
            return self.core.fail(RuntimeError::InsertLooped {
                pe: self.core.me,
                index: describe_index(&i.addr),
                coll: i.coll,
                hops: i.hops,
                home,
            });
        }
        let kind = Insert {
            hops: i.hops + 1,
            ..i
        };
        let env = self.core.envelope(kind, SendOpts::expedited());
        self.core.post(home, env);
    }

    /// Count this PE's elements of `coll` again, for a new census epoch.
    pub(super) fn recount(&mut self, coll: CollectionId) {
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if let Members::Array { elements, .. } = &c.members {
            // A PE counts the elements it is home to, here or away (see `location.rs`).
            let me = self.core.me;
            let homed = elements.values().filter(|e| e.home == me).count() as u64;
            c.census.epoch += 1;
            // A deleted element's home stands in for it (see `destroy.rs`).
            let deleted = c.census.deleted.get().map_or(0, HashMap::len) as u64;
            c.census.local = homed + self.core.loc.away_count(coll, me) + deleted;
            c.census.done = false;
            self.advance_census(coll);
        }
    }

    /// A child's count of its subtree's elements.
    fn census_report(&mut self, m: ChildCount, src: Pe) {
        let ChildCount { coll, epoch, count } = m;
        if let Some(c) = self.colls.get_mut(&coll) {
            c.census
                .rare
                .get_mut()
                .reports
                .entry(epoch)
                .or_default()
                .push((src, count));
            self.advance_census(coll);
        }
    }

    /// Finish this PE's census once every child has reported its subtree count.
    pub(super) fn advance_census(&mut self, coll: CollectionId) {
        let children: Vec<Pe> = self.core.tree_children().collect();
        let parent = self.core.tree_parent();
        let Some(c) = self.colls.get_mut(&coll) else {
            return;
        };
        if c.census.done {
            return;
        }
        let epoch = c.census.epoch;
        let rare = c.census.rare.get();
        let reports = rare.and_then(|r| r.reports.get(&epoch)).map_or(0, Vec::len);
        if reports < children.len() {
            return;
        }
        let reports = (c.census.rare.built_mut())
            .and_then(|r| r.reports.remove(&epoch))
            .unwrap_or_default();
        let subtree = c.census.local + reports.iter().map(|r| r.1).sum::<u64>();
        c.census.active_children = reports.iter().filter(|r| r.1 > 0).map(|r| r.0).collect();
        c.census.done = true;
        if let Some(p) = parent {
            let env = self.core.envelope(
                ChildCount {
                    coll,
                    epoch,
                    count: subtree,
                },
                SendOpts::expedited(),
            );
            self.core.post(p, env);
        }
        self.recheck(coll);
    }
}

/// Forwards an insert may take to its element's home (one is all a correct map needs).
pub(super) const MAX_INSERT_HOPS: u8 = 4;

pub(super) fn describe_index(addr: &ElemAddr) -> String {
    format!("with order key {} ({} bytes)", addr.order, addr.key.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::chare::Chare;
    use crate::api::ctx::Ctx;
    use crate::api::registry::Registry;
    use crate::base::config::{Config, ErrorPolicy};
    use crate::engine::PeSetup;
    use crate::msg::array::{ArrayMap, Shape};
    use crate::msg::envelope::{Envelope, Kind};
    use std::sync::Arc;

    use crate::engine::nowhere::Nowhere;

    /// Counts the messages it got, so a replaced chare shows.
    struct Counter(u64);

    impl Chare for Counter {
        type Init = ();
        type Msg = ();
        fn create(_: (), _: &mut Ctx) -> Self {
            Counter(0)
        }
        fn handle(&mut self, _: (), ctx: &mut Ctx) {
            self.0 += 1;
            ctx.publish("count", &self.0);
        }
    }

    /// PE 1 of 4, dropping errors into its report.
    fn pe() -> PeRuntime {
        let mut reg = Registry::new();
        reg.chare::<Counter>("Counter");
        let cfg = Config {
            on_error: ErrorPolicy::Drop,
            ..Config::with_pes(4)
        };
        PeRuntime::new(
            PeSetup::new(&cfg, 4, 1, None),
            Arc::new(reg),
            Box::new(Nowhere),
        )
    }

    fn from(src: Pe, kind: impl Into<Kind>) -> Envelope {
        Envelope {
            src,
            seq: 0,
            prio: 0,
            expedited: true,
            counted: false,
            kind: kind.into(),
        }
    }

    /// The creation of `coll`, an array of no elements yet, placed round robin.
    fn empty_array(coll: CollectionId) -> CreateArray {
        CreateArray {
            coll,
            ty: 0,
            root: 0,
            init: Payload::new(()),
            shape: Arc::new(Shape::List(Vec::new())),
            map: ArrayMap::RoundRobin,
        }
    }

    fn bad_inputs(rt: &PeRuntime) -> Vec<String> {
        let errors = rt.core.report.get().into_iter().flat_map(|r| &r.errors);
        errors
            .filter(|e| matches!(e, RuntimeError::BadInput { .. }))
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_second_creation_is_reported_and_keeps_the_first() {
        let mut rt = pe();
        let id = ChareId {
            pe: 1,
            creator: 0,
            seq: 0,
        };
        let create = || CreateChare {
            id,
            ty: 0,
            init: Payload::new(()),
        };
        rt.process(from(0, create()));
        rt.process(from(0, create()));
        assert_eq!(
            rt.chares.get().map_or(0, |c| c.slab.len()),
            1,
            "the second creation replaced nothing"
        );
        let coll = CollectionId { creator: 0, seq: 0 };
        let group = || CreateGroup {
            coll,
            ty: 0,
            root: 0,
            init: Payload::new(()),
        };
        rt.process(from(0, group()));
        rt.process(from(0, group()));
        let bad = bad_inputs(&rt);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("created twice"), "{bad:?}");
        assert!(bad[1].contains("collection 0.0 created twice"), "{bad:?}");
    }

    #[test]
    fn an_insert_waiting_for_its_array_runs_before_a_recount_queued_meanwhile() {
        // On threads an insert sent straight to its home can pass the array's creation,
        // which comes down the tree, and the recount can be queued behind the
        // creation: the insert must still be counted.
        let mut rt = pe();
        let coll = CollectionId { creator: 0, seq: 0 };
        let insert = Insert {
            coll,
            addr: crate::msg::array::ElemAddr::of(&1u64),
            init: Payload::new(()),
            hops: 0,
            round: 0,
            origin: 0,
        };
        rt.process(from(0, insert));
        assert!(rt.colls.is_empty(), "the insert waits for its array");
        rt.core.queue.push(from(0, empty_array(coll)), 0, true);
        rt.core.queue.push(
            from(
                0,
                DoneInserting {
                    coll,
                    root: 0,
                    expect: Vec::new(),
                },
            ),
            0,
            true,
        );
        while let Some(env) = rt.core.queue.pop() {
            rt.process(env);
        }
        let c = rt.colls.get(&coll).expect("the array exists");
        assert_eq!(c.census.local, 1, "the inserted element counts");
    }

    #[test]
    fn a_recount_waits_for_the_inserts_its_root_sent_here_and_later_ones_queue() {
        let mut rt = pe();
        let coll = CollectionId { creator: 0, seq: 0 };
        rt.process(from(0, empty_array(coll)));
        let census = |rt: &PeRuntime| {
            let c = &rt.colls.get(&coll).expect("the array").census;
            (c.epoch, c.local)
        };
        let done = |root, expect| DoneInserting { coll, root, expect };
        // PE 0 sent two inserts here (PE 1): its flood overtook them.
        rt.process(from(0, done(0, vec![(1, 2)])));
        // A later flood from PE 2, which inserted nothing here, waits behind it.
        rt.process(from(2, done(2, Vec::new())));
        assert_eq!(census(&rt), (0, 0), "no recount before the inserts");
        let insert = |i: u64| Insert {
            coll,
            addr: crate::msg::array::ElemAddr::of(&i),
            init: Payload::new(()),
            hops: 0,
            round: 0,
            origin: 0,
        };
        rt.process(from(0, insert(5)));
        assert_eq!(
            census(&rt),
            (0, 0),
            "one of the two inserts is still on its way"
        );
        rt.process(from(0, insert(9)));
        assert_eq!(
            census(&rt),
            (2, 2),
            "both recounts, in order, with both elements"
        );
        let below = rt.core.expected_below(&[(1, 2), (2, 1), (3, 4)], 0, 2);
        assert_eq!(below, vec![(2, 1)], "the child's subtree only");
    }

    #[test]
    fn a_root_outside_the_job_is_bad_input_not_an_underflow() {
        let mut rt = pe();
        let kind = CreateGroup {
            coll: CollectionId { creator: 0, seq: 0 },
            ty: 0,
            root: 99,
            init: Payload::new(()),
        };
        rt.process(from(0, kind));
        let kind = CreateArray {
            coll: CollectionId { creator: 0, seq: 1 },
            ty: 0,
            root: 0,
            init: Payload::new(()),
            shape: Arc::new(Shape::Dense2(u64::MAX, 2)),
            map: ArrayMap::Block,
        };
        rt.process(from(0, kind));
        let bad = bad_inputs(&rt);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("tree root 99"), "{bad:?}");
        assert!(bad[1].contains("too large"), "{bad:?}");
        assert!(rt.colls.is_empty());
    }

    #[test]
    fn errors_past_the_kept_number_are_counted_not_kept() {
        let mut rt = pe();
        let bad = crate::api::report::MAX_ERRORS_KEPT + 500;
        for seq in 0..bad {
            let id = ChareId {
                pe: 1,
                creator: 0,
                seq: 1_000 + seq as u32,
            };
            let kind = Kind::User {
                dest: crate::msg::envelope::Dest::Chare(id),
                payload: Payload::new(()),
                hops: 0,
            };
            rt.process(from(0, kind));
        }
        // None of those chares can be created any more: at quiescence each message
        // becomes an error.
        rt.report_orphans(0);
        let report = rt.core.report.get().expect("errors were reported");
        assert_eq!(report.errors.len(), crate::api::report::MAX_ERRORS_KEPT);
        assert_eq!(report.errors_not_kept, 500);
        assert!(
            report.errors[0].to_string().contains("does not exist"),
            "{:?}",
            report.errors[0]
        );
    }
}
