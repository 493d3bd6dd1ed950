//! Array sections (Charm++'s `CkMulticast`): a section's tree is the balanced k-ary
//! tree (`base::tree`, the one broadcasts use) over the home PEs of its members, in
//! ascending order. A multicast goes down it, one envelope per PE, and each PE
//! delivers it to the members the array's map places there: to those here at once,
//! and to those away as a message that follows them (the home's location table knows
//! where they went, and the location system forwards while they move), so each member
//! gets it once however it migrates, as a broadcast reaches an array's elements. A
//! section reduction counts every member at its home node wherever the member is, and
//! each contribution carries the path of (PE, count) nodes up to the root, so no PE
//! keeps a section's tree between calls.

use super::{invoke, Current, Members, Origin, PeCore, PeRuntime};
use crate::base::error::RuntimeError;
use crate::base::ids::{CollectionId, Pe};
use crate::base::section_error::SectionError;
use crate::base::tree;
use crate::msg::array::ElemAddr;
use crate::msg::callback::Callback;
use crate::msg::envelope::{Kind, SendOpts};
use crate::msg::kind::section::{Node, SectionCast, SectionMsg, SectionReduce, SectionSpec};
use crate::msg::payload::Payload;
use crate::msg::reduction::{self, Partial, RedData, Reducer};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One node's share of a section reduction, while it waits for the rest.
struct Gathering {
    reducer: Reducer,
    callback: Callback,
    partial: Option<Partial>,
    got: u32,
}

/// Section reductions in progress on this PE, by (section id, reduction number). An
/// entry lives from the first contribution its node receives to the last it waits
/// for, so the map holds only the reductions in flight here.
#[derive(Default)]
pub(super) struct SectionReductions(BTreeMap<(u64, u32), Gathering>);

impl SectionReductions {
    /// A reduction this node has some of its contributions for and waits for more:
    /// (section id, reduction number).
    pub(super) fn in_progress(&self) -> Option<(u64, u32)> {
        self.0.keys().next().copied()
    }
}

impl PeCore {
    /// The section of `coll` whose members are `addrs` (duplicates count once), placed
    /// by the array's map, with a tree of this job's `--tree-arity`.
    pub(crate) fn build_section(
        &mut self,
        coll: CollectionId,
        addrs: Vec<ElemAddr>,
    ) -> Result<SectionSpec, SectionError> {
        if self.array_meta(coll).is_none() {
            return Err(SectionError::UnknownArray { coll });
        }
        let id = (u64::from(self.me) << 32) | u64::from(self.next_section_seq);
        let spec = self.section_over(coll, addrs, id)?;
        self.next_section_seq = self.next_section_seq.wrapping_add(1);
        Ok(spec)
    }

    /// Section `spec` of a job restarted on another PE count: the same members and
    /// id, its tree over their homes in this job (each copy rebuilds the same one).
    pub(crate) fn rehome_section(
        &mut self,
        spec: &SectionSpec,
    ) -> Result<SectionSpec, SectionError> {
        let addrs = spec.members.iter().flatten().cloned().collect();
        self.section_over(spec.coll, addrs, spec.id)
    }

    /// The section `id` of `coll` over `addrs`, placed by the array's map.
    fn section_over(
        &mut self,
        coll: CollectionId,
        mut addrs: Vec<ElemAddr>,
        id: u64,
    ) -> Result<SectionSpec, SectionError> {
        addrs.sort_by(|a, b| a.key.cmp(&b.key));
        addrs.dedup_by(|a, b| a.key == b.key);
        if addrs.is_empty() {
            return Err(SectionError::Empty { coll });
        }
        let mut by_home: BTreeMap<Pe, Vec<ElemAddr>> = BTreeMap::new();
        for addr in addrs {
            let home = self
                .locate(coll, &addr)
                .map_err(|e| SectionError::Placement {
                    coll,
                    what: e.to_string(),
                })?;
            by_home.entry(home).or_default().push(addr);
        }
        let (roster, members) = by_home.into_iter().unzip();
        Ok(SectionSpec {
            id,
            coll,
            k: self.arity.max(2) as u32,
            roster,
            members,
        })
    }

    /// Every address of the shape `coll` was created with, if this PE knows it.
    pub(crate) fn array_addresses(
        &self,
        coll: CollectionId,
    ) -> Result<Vec<ElemAddr>, SectionError> {
        let meta = self
            .array_meta(coll)
            .ok_or(SectionError::UnknownArray { coll })?;
        if matches!(*meta.shape, crate::msg::array::Shape::List(ref l) if l.is_empty()) {
            return Err(SectionError::NoShape { coll });
        }
        Ok(meta.shape.addresses().collect())
    }

    /// Multicast `payload` to every member of `spec`: down the tree re-rooted at this
    /// PE if it is one of the section's, else from its rank 0.
    pub(crate) fn section_cast(
        &mut self,
        spec: Arc<SectionSpec>,
        payload: Payload,
        opts: SendOpts,
    ) {
        let root = spec.rank_of(self.me).unwrap_or(0);
        let to = spec.roster[root as usize];
        let cast = SectionCast {
            spec,
            root,
            rank: root,
            payload,
        };
        let env = self.envelope(cast, opts);
        self.post(to, env);
    }

    /// The running element's contribution to reduction `red` of section `spec`, sent
    /// to its home node.
    pub(crate) fn section_contribute(
        &mut self,
        spec: &SectionSpec,
        red: u32,
        value: RedData,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), SectionError> {
        let coll = spec.coll;
        let not_member = |cur: &Current| SectionError::NotAMember {
            coll,
            from: format!("{cur:?}"),
        };
        let addr = match &self.current {
            Current::Element(c, addr) if *c == coll => addr.clone(),
            cur => return Err(not_member(cur)),
        };
        let rank = self
            .locate(coll, &addr)
            .ok()
            .and_then(|home| spec.rank_of(home))
            .filter(|&r| {
                let list = &spec.members[r as usize];
                list.binary_search_by(|a| a.key.cmp(&addr.key)).is_ok()
            })
            .ok_or_else(|| not_member(&self.current))?;
        reduction::check_value(reducer, &value)
            .map_err(|what| SectionError::BadValue { coll, what })?;
        let path = path_to_root(spec, rank);
        let partial = reduction::partial_of(reducer, addr.order, value);
        let msg = SectionReduce {
            id: spec.id,
            coll,
            red,
            path,
            reducer,
            body: Box::new((callback, partial)),
        };
        let to = msg.path[0].pe;
        let env = self.envelope(msg, SendOpts::default());
        self.post(to, env);
        Ok(())
    }
}

/// The nodes from tree rank `rank` up to the root (rank 0), each with the number of
/// contributions it waits for: its own members' and one per child.
fn path_to_root(spec: &SectionSpec, rank: u32) -> Vec<Node> {
    let (m, k) = (spec.roster.len(), spec.k as usize);
    let node = |r: u32| Node {
        pe: spec.roster[r as usize],
        expect: (spec.members[r as usize].len() + tree::children(r, 0, m, k).count()) as u32,
    };
    tree::path_up(rank, 0, m, k).map(node).collect()
}

impl PeRuntime {
    /// Run a section multicast or reduction message here.
    pub(super) fn on_section(&mut self, m: SectionMsg, from: Origin) {
        match m {
            SectionMsg::SectionCast(c) => self.section_cast_here(c, from.opts()),
            SectionMsg::SectionReduce(r) => self.section_reduce_here(r),
        }
    }

    /// Pass a multicast to this node's children, then deliver it to its members.
    fn section_cast_here(&mut self, cast: SectionCast, opts: SendOpts) {
        let SectionCast {
            spec,
            root,
            rank,
            payload,
        } = cast;
        let me = self.core.me;
        if spec.roster[rank as usize] != me {
            let what = format!("a section multicast for rank {rank} reached PE {me}; dropped");
            return self.core.fail(RuntimeError::BadInput { pe: me, what });
        }
        let (m, k) = (spec.roster.len(), spec.k as usize);
        for c in tree::children(rank, root, m, k) {
            let down = SectionCast {
                spec: spec.clone(),
                root,
                rank: c,
                payload: payload.duplicate(),
            };
            let env = self.core.envelope(down, opts);
            self.core.post(spec.roster[c as usize], env);
        }
        let members = &spec.members[rank as usize];
        let mut payload = Some(payload);
        for (i, addr) in members.iter().enumerate() {
            // Handing the last member the original saves one duplicate.
            let p = if i + 1 == members.len() {
                payload.take()
            } else {
                payload.as_ref().map(Payload::duplicate)
            };
            let Some(p) = p else { break };
            self.section_deliver(spec.coll, addr, p, opts);
        }
    }

    /// Deliver to a member homed here: at once if it is here, else as a message the
    /// location system routes to wherever it is (or holds until it is created).
    fn section_deliver(&mut self, coll: CollectionId, addr: &ElemAddr, p: Payload, opts: SendOpts) {
        let here = match self.colls.get_mut(&coll).map(|c| &mut c.members) {
            Some(Members::Array { elements, .. }) => elements.get_mut(&addr.key),
            _ => None,
        };
        if let Some(e) = here {
            let addr = ElemAddr {
                key: addr.key.clone(),
                order: e.order,
            };
            // One message, never a run: nothing is ever left over.
            invoke(
                &mut self.core,
                &mut self.delivered,
                Current::Element(coll, addr),
                e.chare.as_mut(),
                p,
            );
            e.load += self.core.syncs.take_last();
            return;
        }
        if let Some((pe, dest)) = self.core.route_element(coll, addr.clone()) {
            let kind = Kind::User {
                dest,
                payload: p,
                hops: 0,
            };
            let env = self.core.envelope(kind, opts);
            self.core.post(pe, env);
        }
    }

    /// Merge a contribution into its node's share; a node with all it waits for
    /// passes the share up its path, and the root fires the callback.
    fn section_reduce_here(&mut self, r: SectionReduce) {
        let SectionReduce {
            id,
            coll,
            red,
            mut path,
            reducer,
            body,
        } = r;
        let (callback, partial) = *body;
        let reg = self.core.reg.clone();
        let table = &mut self.sections.get_mut().0;
        let g = table.entry((id, red)).or_insert_with(|| Gathering {
            reducer,
            callback,
            partial: None,
            got: 0,
        });
        let seq = u64::from(red);
        let merged = if g.reducer != reducer {
            Err(format!(
                "members used different reducers ({:?} and {reducer:?})",
                g.reducer
            ))
        } else {
            match g.partial.take() {
                None => Ok(partial),
                Some(acc) => {
                    reduction::merge_partials(reducer, acc, partial, &|i| reg.custom_reducer(i))
                }
            }
        };
        match merged {
            Ok(p) => g.partial = Some(p),
            Err(what) => {
                table.remove(&(id, red));
                return self
                    .core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what });
            }
        }
        g.got += 1;
        if g.got < path[0].expect {
            return;
        }
        let Some(done) = table.remove(&(id, red)) else {
            return;
        };
        let Some(partial) = done.partial else { return };
        path.remove(0);
        if path.is_empty() {
            match reduction::finish(done.reducer, partial) {
                Ok(value) => self.core.fire(&done.callback, value),
                Err(what) => self
                    .core
                    .fail(RuntimeError::ReducerMismatch { coll, seq, what }),
            }
            return;
        }
        let up = SectionReduce {
            id,
            coll,
            red,
            path,
            reducer: done.reducer,
            body: Box::new((done.callback, partial)),
        };
        let to = up.path[0].pe;
        let env = self.core.envelope(up, SendOpts::default());
        self.core.post(to, env);
    }
}
