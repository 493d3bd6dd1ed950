//! Nodegroups (Charm++'s `NodeGroup`): one member per node, where a node is a
//! process. On mpi a node is a rank (with `--pes-per-rank`, its PEs); on threads and
//! sim, where every PE shares one process, it is a block of `--pes-per-node` PEs
//! (default 1: each PE its own node). Node `n` is PEs `n * size ..`, the last block
//! possibly smaller.
//!
//! A member lives on its node's first PE, and every message to it runs there, one at
//! a time: a PE's chares are its thread's alone (no locks, no `unsafe`), so the other
//! PEs of the node reach the member by message (`nodegroup.local(ctx)`, Charm++'s
//! `ckLocalBranch()` turned into a send) where Charm++ lets any PE of the node call
//! it directly or run its entries (non-`[exclusive]` ones even at once). A broadcast
//! reaches each node's member once, down a tree over the nodes; a member's
//! `ctx.contribute` counts once per node, the reduction climbing the same tree.
//!
//! ```ignore
//! let counters = ctx.create_node_group::<Counter>(());
//! counters.broadcast(ctx, Msg::Reset);
//! counters.send(ctx, 1, Msg::Add(5)); // node 1's member
//! counters.local(ctx).deliver(ctx, Msg::Add(1)); // this PE's node's member
//! ```

use crate::api::chare::Chare;
use crate::api::ctx::Ctx;
use crate::api::registry::Entry;
use crate::api::target::Target;
use crate::base::ids::CollectionId;
use crate::msg::callback::Callback;
use crate::msg::envelope::{GroupMember, SendOpts};
use crate::msg::kind::create::{CreateGroup, CreateNodeGroup};
use crate::msg::payload::Payload;
use crate::msg::reduction::Reducible;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

/// Handle to a nodegroup: one member on every node.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct NodeGroupProxy<C> {
    coll: CollectionId,
    #[serde(skip)]
    _p: PhantomData<fn() -> C>,
}

impl<C> Clone for NodeGroupProxy<C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for NodeGroupProxy<C> {}
impl<C> PartialEq for NodeGroupProxy<C> {
    fn eq(&self, other: &Self) -> bool {
        self.coll == other.coll
    }
}
impl<C> Eq for NodeGroupProxy<C> {}
impl<C> std::fmt::Debug for NodeGroupProxy<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeGroupProxy({:?})", self.coll)
    }
}

impl<C> NodeGroupProxy<C> {
    pub(crate) fn new(coll: CollectionId) -> Self {
        NodeGroupProxy {
            coll,
            _p: PhantomData,
        }
    }

    /// The nodegroup's identity.
    pub fn id(&self) -> CollectionId {
        self.coll
    }

    /// The member on node `node`.
    pub fn at(&self, node: usize) -> NodeMemberProxy<C> {
        NodeMemberProxy { group: *self, node }
    }

    /// The member on the running PE's node (Charm++'s `ckLocalBranch()`, reached by
    /// message: see the module's notes).
    pub fn local(&self, ctx: &Ctx) -> NodeMemberProxy<C> {
        self.at(ctx.my_node())
    }
}

impl<C: Chare> NodeGroupProxy<C> {
    /// Send to the member on node `node` (a node outside the job is reported under
    /// `--on-error` and the message dropped).
    pub fn send(&self, ctx: &mut Ctx, node: usize, msg: C::Msg) {
        self.send_with(ctx, node, msg, SendOpts::default());
    }

    /// Send to the member on node `node` with options.
    pub fn send_with(&self, ctx: &mut Ctx, node: usize, msg: C::Msg, opts: SendOpts) {
        if let Some(pe) = ctx.core.node_member_pe(node) {
            ctx.core.send_typed(pe, GroupMember(self.coll), msg, opts);
        }
    }

    /// Send to every member once, down the tree over the nodes.
    pub fn broadcast(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast_with(ctx, msg, SendOpts::default());
    }

    /// Broadcast with options.
    pub fn broadcast_with(&self, ctx: &mut Ctx, msg: C::Msg, opts: SendOpts) {
        ctx.core.node_broadcast(self.coll, Payload::new(msg), opts);
    }
}

impl<'a> Ctx<'a> {
    /// Create a nodegroup: one member on every node's first PE, each built from a
    /// copy of `init`.
    pub fn create_node_group<C: Chare>(&mut self, init: C::Init) -> NodeGroupProxy<C> {
        let coll = self.core.new_collection_id();
        if let Some(ty) = self.type_index::<C>() {
            let root = self.core.node_pe(self.core.my_node());
            let kind = CreateNodeGroup(CreateGroup {
                coll,
                ty,
                root,
                init: Payload::new(init),
            });
            self.core.create(root, kind);
        }
        NodeGroupProxy::new(coll)
    }

    /// Proxy of the nodegroup the running chare is a member of.
    pub fn this_node_group<C: Chare>(&self) -> Option<NodeGroupProxy<C>> {
        match self.this_id() {
            Some(Err(coll)) if self.core.is_node_group(coll) => Some(NodeGroupProxy::new(coll)),
            _ => None,
        }
    }
}

impl Callback {
    /// Deliver to `entry` of the nodegroup member on node `node`.
    pub fn node_group_member<C: Chare, T: Reducible>(
        proxy: &NodeGroupProxy<C>,
        node: usize,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::NodeGroupMember {
            coll: proxy.coll,
            node: node as u32,
            entry: entry.id,
        }
    }

    /// Broadcast to `entry` of every nodegroup member.
    pub fn node_group_all<C: Chare, T: Reducible>(
        proxy: &NodeGroupProxy<C>,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::NodeGroupAll {
            coll: proxy.coll,
            entry: entry.id,
        }
    }
}

impl<C: Chare> Target<C> for NodeGroupProxy<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast(ctx, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::node_group_all(self, entry)
    }
}

/// One member of a nodegroup: `nodegroup.at(node)`.
pub struct NodeMemberProxy<C> {
    group: NodeGroupProxy<C>,
    node: usize,
}

impl<C> NodeMemberProxy<C> {
    /// The member's node.
    pub fn node(&self) -> usize {
        self.node
    }
}

impl<C: Chare> Target<C> for NodeMemberProxy<C> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.group.send(ctx, self.node, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::node_group_member(&self.group, self.node, entry)
    }
}
