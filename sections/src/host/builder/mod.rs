//! The builder group: one member per PE runs that PE's part of every creation over
//! chorus messages, keyed by the creation's token.

use crate::collectives::CollectivesHost;
use crate::creation::neighbour_discovery::Intermediaries;
use crate::creation::protocol::{
    Algorithm, Outbox, Phase, Protocol, ProtocolError, Setup, ToIntermediary, Wire,
};
use crate::free::FreedIds;
use crate::hash::mix64;
use crate::host::algo::{self, phase_of, Proto, ProtoMsg};
use crate::host::merge::{Hop, MergeRequest, MergeState, Route, Way};
use crate::host::rebuild::{self, Patched};
use crate::host::spec::{CreationReport, HostError, Membership, Parent, Request};
use crate::host::split::Split;
use crate::host::tally::Tally;
use crate::kary;
use crate::section::{Placement, Section, SectionId};
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Pe};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Key of the intermediary hash, mixed with each creation's token.
const SALT: u64 = 0x5EC7_104A_5400;

mod abort;
mod create;
mod finish;
mod free;
mod merging;
mod msg;
mod rank;
mod repair;
mod split;
mod survivors;
mod wait;

pub use msg::BuilderMsg;

/// Something that reached a PE before the creation started there.
#[derive(Debug)]
enum Early {
    Wire(Pe, u32, Wire<ProtoMsg>, u64),
    Done(Tally),
    Routed(u32, u32, ToIntermediary),
}

/// The state machine of one section of a creation.
enum Engine {
    /// A creation algorithm.
    Algo(Box<Proto>),
    /// A member's part in a merge.
    Merge(Box<MergeState>),
}

impl Engine {
    fn finished(&self) -> bool {
        match self {
            Engine::Algo(p) => p.finished(),
            Engine::Merge(m) => m.placement().is_some(),
        }
    }

    fn placement(&self) -> Option<&Placement> {
        match self {
            Engine::Algo(p) => p.placement(),
            Engine::Merge(m) => m.placement(),
        }
    }

    fn peak_state_bytes(&self) -> usize {
        match self {
            Engine::Algo(p) => p.peak_state_bytes(),
            Engine::Merge(m) => m.peak_state_bytes(),
        }
    }
}

/// A protocol message on its way inside one PE: (from, to, part, message, bytes to
/// count on arrival).
type Item = (Pe, Pe, u32, Wire<ProtoMsg>, u64);

/// A member's (key, PE) in a split by colour and key.
type Keyed = (i64, Pe);

/// Where a section's members and report go; kept for rebuilds.
#[derive(Debug, Clone)]
struct Meta {
    on_member: Callback,
    on_report: Callback,
    tag: u64,
}

/// What the builder group is created with: [`crate::host::register`] returns it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BuilderInit {
    /// The entry the runtime reports failed PEs to.
    pub on_failure: Entry<Builder, Pe>,
}

/// One section's state machine of a creation on this PE.
struct Part {
    proto: Engine,
    inter: Intermediaries,
    finished: bool,
}

/// One PE's part in one creation.
struct Run {
    /// Members keep the sections made.
    keep: bool,
    /// How announcements reach intermediaries named by rank (None: ids are PEs).
    way: Option<Way>,
    on_member: Callback,
    on_report: Callback,
    tag: u64,
    /// This PE's key in a split by colour and key: its sections are ranked by it.
    key: Option<i64>,
    algorithm: Option<Algorithm>,
    parts: Vec<Part>,
    up: Option<Pe>,
    down: Vec<Pe>,
    tally: Tally,
    children_done: usize,
    finished: bool,
    sent_up: bool,
    released: bool,
    peak: u64,
    children_peaked: usize,
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
    counter: u32,
    proxy: Option<GroupProxy<Builder>>,
    /// Sections this PE is a member of and keeps: the application's live sections,
    /// each removed when this member frees it.
    sections: HashMap<SectionId, Section>,
    /// Callbacks of the kept sections, for rebuilds: the same keys as `sections`.
    meta: HashMap<SectionId, Meta>,
    /// PEs reported failed: at most the job's PEs.
    failed: BTreeSet<Pe>,
    /// Repairs waiting here, the rendezvous, for the dead rank's neighbours: removed
    /// when all of them have come, or when this PE frees the section. The rendezvous
    /// may be no member, so an entry whose neighbours never all come (some freed the
    /// section before they heard of the failure) stays: at most one per section alive
    /// at a failure and failed PE, and failures (a sim-layer event) are at most the PEs.
    meetings: HashMap<(SectionId, u32), Vec<(u32, Pe)>>,
    // Values boxed: a map holds at least 4 slots, and on sim 10^5 builders each hold
    // one run, call or ranking at once, so slots as large as the value cost 1-2 KB per PE.
    /// Creations this PE takes part in: removed when the peak wave has passed here
    /// (`try_peak_up`), so only creations in flight.
    runs: HashMap<u64, Box<Run>>,
    /// Messages of creations not started here yet: removed when the run starts
    /// (`replay`). A message reaches a PE of the creation's parent only, and every such
    /// PE joins the run (its start floods the parent), so only creations in flight.
    early: HashMap<u64, Vec<Early>>,
    /// Intermediaries serving creations not started here: removed when idle or when
    /// the run starts (`join`), so only creations in flight.
    orphans: HashMap<(u64, u32), Intermediaries>,
    /// Merges this PE offered as A's root: removed when B accepts, or when this PE
    /// frees A (a merge B refuses is reported there), so merges in flight.
    pending_merges: HashMap<u64, (MergeRequest, Section)>,
    /// Drained by every `flush`.
    outgoing: Vec<(Pe, u32, Wire<ProtoMsg>)>,
    /// Starts of creations from a parent section not stored here yet: (token, from,
    /// request). Removed when the parent is stored (`resume`); a neighbour in the
    /// parent's tree sent them, so this PE is a member and stores it once its part of
    /// the parent's creation ends. A start from a parent freed here is refused
    /// (`hold`), unless it was freed more than `FREED_MEMORY` frees ago: only a member
    /// splitting a section after the others freed it sends one, and it then stays.
    waiting: HashMap<SectionId, Vec<(u64, Pe, Request)>>,
    /// Splits by colour and key this PE has called, per parent: how many. One entry
    /// for the world and one per kept section split, removed when it is freed.
    splits_called: HashMap<Parent, u64>,
    /// This PE's calls whose start has not come yet, by (parent, number): removed
    /// when the start comes, so the splits in flight.
    calls: HashMap<(Parent, u64), Box<(Split, Callback)>>,
    /// Starts of splits this PE has not called yet, by (parent, number): (token,
    /// request). Removed at the call, or reported and dropped when this PE frees the
    /// parent without calling, so the splits in flight.
    held_splits: HashMap<(Parent, u64), Box<(u64, Request)>>,
    /// Sections of splits being ranked by (key, PE) here: removed once ranked
    /// (`try_ranked`), so the splits in flight.
    rankings: HashMap<SectionId, Box<rank::Ranking>>,
    /// Subtree lists that came before this PE's own part of the section was made:
    /// removed when its ranking starts, so the splits in flight.
    early_ranks: HashMap<SectionId, Vec<(Pe, Vec<Keyed>)>>,
    /// Frees waiting for this PE's split calls on the section to start: at most one
    /// per kept section.
    freeing: HashMap<SectionId, Box<free::Freeing>>,
    /// The last sections freed here, to tell late calls and messages for them apart:
    /// at most [`crate::free::FREED_MEMORY`].
    freed: FreedIds,
    /// Creations ended here by a failure: at most `abort::ABORTED_MEMORY`.
    aborted: abort::Aborted,
    /// Repair messages dropped because their section was freed here, and messages
    /// of creations ended by a failure.
    dropped: u64,
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
            sections: HashMap::new(),
            meta: HashMap::new(),
            failed: BTreeSet::new(),
            meetings: HashMap::new(),
            runs: HashMap::new(),
            early: HashMap::new(),
            orphans: HashMap::new(),
            pending_merges: HashMap::new(),
            outgoing: Vec::new(),
            waiting: HashMap::new(),
            splits_called: HashMap::new(),
            calls: HashMap::new(),
            held_splits: HashMap::new(),
            rankings: HashMap::new(),
            early_ranks: HashMap::new(),
            freeing: HashMap::new(),
            freed: FreedIds::default(),
            aborted: abort::Aborted::default(),
            dropped: 0,
        }
    }

    fn handle(&mut self, msg: BuilderMsg, ctx: &mut Ctx) {
        if let Err(e) = self.dispatch(msg, ctx) {
            ctx.fail("section builder", e);
        }
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

fn encoded_len(msg: &BuilderMsg) -> u64 {
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
        proxy.send(ctx, me, BuilderMsg::Create(req));
    }

    /// Ask the builder on this PE (a member of `req.a`) to merge two sections.
    pub fn merge_sections(proxy: &GroupProxy<Builder>, ctx: &mut Ctx, req: MergeRequest) {
        let me = ctx.my_pe();
        proxy.send(ctx, me, BuilderMsg::Merge(req));
    }

    fn proxy(&self) -> GroupProxy<Builder> {
        self.proxy.expect("the builder is a group member")
    }

    fn send(&self, ctx: &mut Ctx, to: Pe, msg: BuilderMsg) {
        self.proxy().send(ctx, to, msg);
    }

    fn dispatch(&mut self, msg: BuilderMsg, ctx: &mut Ctx) -> Result<(), HostError> {
        if msg.run_token().is_some_and(|t| self.aborted.contains(t)) {
            self.dropped += 1;
            return Ok(());
        }
        match msg {
            BuilderMsg::Create(req) => self.on_create(ctx, req),
            BuilderMsg::Split { split, on_member } => self.on_split(ctx, split, on_member),
            BuilderMsg::RankUp { id, from, keys } => self.on_rank_up(ctx, id, from, keys),
            BuilderMsg::RankDown { id, ranks } => self.on_rank_down(ctx, id, ranks),
            BuilderMsg::RankChild { id, rank, pe } => self.on_rank_child(ctx, id, rank, pe),
            BuilderMsg::Start {
                token,
                from,
                req,
                dead,
            } => self.on_start(ctx, token, from, req, dead),
            BuilderMsg::Proto {
                token,
                from,
                part,
                wire,
            } => {
                // Intermediaries' answers are counted where they arrive.
                let bytes = if is_answer(&wire) {
                    encoded_len(&BuilderMsg::Proto {
                        token,
                        from,
                        part,
                        wire: wire.clone(),
                    })
                } else {
                    0
                };
                let queue = VecDeque::from([(from, self.me, part, wire, bytes)]);
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Bundle { token, from, parts } => {
                let answers = parts.iter().all(|(_, w)| is_answer(w));
                let mut bytes = if answers {
                    encoded_len(&BuilderMsg::Bundle {
                        token,
                        from,
                        parts: parts.clone(),
                    })
                } else {
                    0
                };
                let mut queue = VecDeque::new();
                for (part, wire) in parts {
                    // The bundle counts once, with its first answer.
                    queue.push_back((from, self.me, part, wire, std::mem::take(&mut bytes)));
                }
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Done { token, tally } => match self.runs.get_mut(&token) {
                Some(run) => {
                    run.tally.merge(&tally);
                    run.children_done += 1;
                    self.try_up(ctx, token)
                }
                None => {
                    self.early
                        .entry(token)
                        .or_default()
                        .push(Early::Done(tally));
                    Ok(())
                }
            },
            BuilderMsg::Release { token } => self.on_release(ctx, token),
            BuilderMsg::Merge(req) => self.on_merge_ask(ctx, req, 0, 0),
            BuilderMsg::Failed(pe) => self.on_failed(ctx, pe),
            BuilderMsg::Hello {
                sid,
                dead,
                rank,
                pe,
                expect,
            } => self.on_hello(ctx, sid, dead, (rank, pe), expect),
            BuilderMsg::Links {
                token,
                sid,
                dead,
                parties,
            } => self.on_links(ctx, token, sid, dead, parties),
            BuilderMsg::Notice {
                token,
                sid,
                dead,
                from,
            } => self.on_notice(ctx, token, sid, dead, from),
            BuilderMsg::MergeAsk {
                req,
                messages,
                bytes,
            } => self.on_merge_ask(ctx, req, messages, bytes),
            BuilderMsg::Offer {
                token,
                req,
                a_root,
                a_size,
                messages,
                bytes,
            } => self.on_offer(ctx, token, req, a_root, a_size, (messages, bytes)),
            BuilderMsg::Accept {
                token,
                size,
                b_root,
            } => self.on_accept(ctx, token, size, b_root),
            BuilderMsg::Go {
                token,
                req,
                old,
                offset,
                size,
            } => self.on_go(ctx, token, req, old, offset, size),
            BuilderMsg::Routed {
                token,
                part,
                dest,
                msg,
            } => {
                if !self.runs.contains_key(&token) {
                    let early = Early::Routed(part, dest, msg);
                    self.early.entry(token).or_default().push(early);
                    return Ok(());
                }
                let queue = match self.route(ctx, token, part, dest, msg)? {
                    Some(msg) => {
                        VecDeque::from([(self.me, self.me, part, Wire::ToIntermediary(msg), 0)])
                    }
                    None => VecDeque::new(),
                };
                self.pump(ctx, token, queue)
            }
            BuilderMsg::Free {
                id,
                collectives,
                on_freed,
            } => self.on_free(ctx, id, collectives, on_freed),
            BuilderMsg::Stats {
                collectives,
                on_stats,
            } => {
                let stats = self.stats();
                CollectivesHost::send_stats(&collectives, ctx, stats, on_stats);
                Ok(())
            }
            BuilderMsg::Peak { token, bytes } => {
                let run = self.run(token, "peak")?;
                run.peak = run.peak.max(bytes);
                run.children_peaked += 1;
                self.try_peak_up(ctx, token)
            }
        }
    }

    fn run(&mut self, token: u64, what: &'static str) -> Result<&mut Run, HostError> {
        let pe = self.me;
        self.runs
            .get_mut(&token)
            .map(|r| &mut **r)
            .ok_or(HostError::UnknownCreation { pe, token, what })
    }

    /// The sections this PE is a member of, by id.
    pub fn sections(&self) -> &HashMap<SectionId, Section> {
        &self.sections
    }

    /// The section `id` as this PE sees it.
    fn view(&self, id: SectionId) -> Result<Section, HostError> {
        self.sections
            .get(&id)
            .cloned()
            .ok_or_else(|| self.missing(id))
    }

    /// Send a merge message that is not protocol traffic of a started run; returns
    /// its bytes.
    fn send_counted(&self, ctx: &mut Ctx, to: Pe, msg: BuilderMsg) -> u64 {
        let bytes = encoded_len(&msg);
        self.send(ctx, to, msg);
        bytes
    }
}
