//! The builder group: one member per PE runs that PE's part of every creation over
//! chorus messages, keyed by the creation's token.
//!
//! [`Builder`] is a router: each message family has a part that owns its state, its
//! message enum and its handlers, and `dispatch` hands each message to its part.
//! - creations (`creations.rs`: [`CreationMsg`], `Creations`): starts, the state
//!   machines' messages and the sums over the parent tree; `create.rs` starts and
//!   runs them, `wait.rs` holds starts that came before their parent, `finish.rs`
//!   ends them and `abort.rs` ends them at a failure;
//! - splits by colour and key (`split.rs`: [`SplitMsg`], `Splits`): the calls, and
//!   the ranking of their sections by (key, PE) (`rank.rs`); a split by any `u64`
//!   colour first finds the distinct colours over the parent's tree (`colours.rs`);
//! - merges (`merging.rs`: [`MergeMsg`], `Merges`);
//! - repairs after a failure (`repair.rs`: [`RepairMsg`], `Repairs`);
//! - frees and map sizes (`free.rs`: [`FreeMsg`], `Frees`).
//!
//! What several parts read stays on the builder: this PE, the sections it keeps
//! (`Kept`), the PEs known failed and the count of dropped messages.

use crate::collectives::{Collectives, CollectivesHost, TreeMember};
use crate::creation::neighbour_discovery::Intermediaries;
use crate::creation::protocol::{
    Algorithm, Outbox, Phase, Protocol, ProtocolError, Setup, ToIntermediary, Wire,
};
use crate::hash::mix64;
use crate::host::algo::{self, phase_of, Proto, ProtoMsg};
use crate::host::merge::{Hop, MergeRequest, MergeState, Route, Way};
use crate::host::rebuild::{self, Patched};
use crate::host::spec::{CreationReport, HostError, Membership, Parent, Request};
use crate::host::split::Split;
use crate::host::tally::Tally;
use crate::kary;
use crate::section::{Placement, Section, SectionId};
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Pe, RedData, Reducer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Key of the intermediary hash, mixed with each creation's token.
const SALT: u64 = 0x5EC7_104A_5400;

mod abort;
mod colours;
mod create;
mod creations;
mod finish;
mod free;
mod merging;
mod msg;
mod rank;
mod repair;
mod split;
mod survivors;
mod wait;

pub use creations::CreationMsg;
pub use free::FreeMsg;
pub use merging::MergeMsg;
pub use msg::BuilderMsg;
pub use rank::{Keyed, Placed};
pub use repair::{Party, RepairMsg};
pub use split::SplitMsg;

use creations::{Creations, Delivery, Early, Engine, Part, Run};
use free::Frees;
use merging::Merges;
use repair::Repairs;
use split::Splits;

/// Where a section's members and report go; kept for rebuilds.
#[derive(Debug, Clone)]
struct Meta {
    on_member: Callback,
    on_report: Callback,
    tag: u64,
}

/// A reduction a member starts over its section as soon as the split made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Then {
    /// This member's value.
    pub value: RedData,
    /// How values combine.
    pub reducer: Reducer,
    /// Where the section's result goes (its rank 0's callback counts).
    pub done: Callback,
    /// The collectives host that runs the reduction.
    pub collectives: Collectives,
}

/// What the builder group is created with: [`crate::host::register`] returns it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BuilderInit {
    /// The entry the runtime reports failed PEs to.
    pub on_failure: Entry<Builder, Pe>,
}

/// The sections this PE is a member of and keeps: the application's live sections,
/// each removed when this member frees it.
#[derive(Default)]
struct Kept {
    /// The member's view of each.
    sections: HashMap<SectionId, Section>,
    /// Callbacks of each, for rebuilds: the same keys as `sections`.
    meta: HashMap<SectionId, Meta>,
}

impl Kept {
    fn store(&mut self, section: Section, meta: Meta) {
        self.meta.insert(section.id, meta);
        self.sections.insert(section.id, section);
    }

    fn forget(&mut self, id: SectionId) {
        self.sections.remove(&id);
        self.meta.remove(&id);
    }
}

/// The per-PE builder: register it with [`crate::host::register`] and create it once
/// with `ctx.create_group::<Builder>(init)`, `init` from `register`.
///
/// Every map says at its field what bounds it: an entry belongs to a section this PE
/// keeps (removed when the member frees it, `free.rs`) or to a creation, split or
/// merge in flight (removed when it ends here).
pub struct Builder {
    me: Pe,
    npes: u32,
    /// Names this PE's creations, merges and rebuilds.
    counter: u32,
    proxy: Option<GroupProxy<Builder>>,
    kept: Kept,
    /// PEs reported failed: at most the job's PEs.
    failed: BTreeSet<Pe>,
    /// Repair messages dropped because their section was freed here, and messages
    /// of creations ended by a failure.
    dropped: u64,
    creations: Creations,
    splits: Splits,
    merges: Merges,
    repairs: Repairs,
    frees: Frees,
}

impl Chare for Builder {
    type Init = BuilderInit;
    type Msg = BuilderMsg;

    fn create(init: BuilderInit, ctx: &mut Ctx) -> Self {
        let proxy: Option<GroupProxy<Builder>> = ctx.this_group();
        if let Some(g) = &proxy {
            let me = ctx.my_pe();
            ctx.on_pe_failure(Callback::group_member(g, me, init.on_failure));
        }
        Builder {
            me: ctx.my_pe(),
            npes: ctx.num_pes() as u32,
            counter: 0,
            proxy,
            kept: Kept::default(),
            failed: BTreeSet::new(),
            dropped: 0,
            creations: Creations::default(),
            splits: Splits::default(),
            merges: Merges::default(),
            repairs: Repairs::default(),
            frees: Frees::default(),
        }
    }

    fn handle(&mut self, msg: BuilderMsg, ctx: &mut Ctx) {
        if let Err(e) = self.dispatch(msg, ctx) {
            ctx.fail("section builder", e);
        }
    }

    fn unfinished(&self) -> Vec<String> {
        self.splits.unfinished()
    }
}

/// Where a member's callback goes on PE `pe` (the crate's rule: [`crate::callback`]).
fn local_callback(cb: &Callback, pe: Pe) -> Callback {
    crate::callback::for_member(cb, pe)
}

/// A member's view of the section it was placed in (ids are PEs on the builder).
fn section_of(p: &Placement) -> Section {
    Section {
        id: SectionId::from_token(p.token, p.size),
        rank: p.rank,
        size: p.size,
        k: p.k,
        parent: p.parent,
        children: p.children.clone(),
    }
}

/// The bytes a creation counts for a message: its family's message, without the
/// builder's routing tag.
fn encoded_len<M: Serialize>(msg: &M) -> u64 {
    bincode::serialized_size(msg).unwrap_or(0)
}

fn unexpected(me: Pe, from: Pe, token: u64, what: &'static str) -> HostError {
    HostError::Protocol {
        token,
        source: ProtocolError::Unexpected { me, from, what },
    }
}

fn is_answer(w: &Wire<ProtoMsg>) -> bool {
    matches!(w, Wire::FromIntermediary(_))
}

impl Builder {
    /// Ask the builder on this PE to create a section.
    pub fn create_section(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: Request) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, CreationMsg::Create(req).into());
    }

    /// Ask the builder on this PE (a member of `req.a`) to merge two sections.
    pub fn merge_sections(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: MergeRequest) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, MergeMsg::Merge(req).into());
    }

    fn proxy(&self) -> GroupProxy<Builder> {
        self.proxy.expect("the builder is a group member")
    }

    fn send(&self, ctx: &mut Ctx, to: Pe, msg: impl Into<BuilderMsg>) {
        self.proxy().send(ctx, to, msg.into());
    }

    /// Hand the message to the part that owns its family.
    fn dispatch(&mut self, msg: BuilderMsg, ctx: &mut Ctx) -> Result<(), HostError> {
        match msg {
            BuilderMsg::Creation(m) => self.on_creation(ctx, m),
            BuilderMsg::Split(m) => self.on_split_msg(ctx, m),
            BuilderMsg::Merge(m) => self.on_merge_msg(ctx, m),
            BuilderMsg::Repair(m) => self.on_repair(ctx, m),
            BuilderMsg::Free(m) => self.on_free_msg(ctx, m),
        }
    }

    /// The sections this PE is a member of, by id.
    pub fn sections(&self) -> &HashMap<SectionId, Section> {
        &self.kept.sections
    }

    /// The section `id` as this PE sees it.
    fn view(&self, id: SectionId) -> Result<Section, HostError> {
        self.kept
            .sections
            .get(&id)
            .cloned()
            .ok_or_else(|| self.missing(id))
    }

    /// Send a message that is not protocol traffic of a started run; returns the
    /// bytes it counts.
    fn send_counted(&self, ctx: &mut Ctx, to: Pe, msg: impl Into<BuilderMsg> + Serialize) -> u64 {
        let bytes = encoded_len(&msg);
        self.send(ctx, to, msg);
        bytes
    }
}
