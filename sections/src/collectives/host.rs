//! The per-PE group chare that hosts every collective's state machines: it numbers a
//! member's collectives per section, keys their messages by (section id, sequence
//! number), keeps messages that arrive before the local start, and fires callbacks.

use super::error::CollectiveError;
use super::machine::{children, Machine, Out, Received, Step, Stepped};
use super::multicast::{self, PerMember};
// Op was first defined here; re-exported so its public path stays valid.
pub use super::op::Op;
use super::topology::{Member, RangeMember, Rerooted, Topology};
use super::tuned::{self, Impl, Profile};
use super::value::Piece;
use crate::free::{BuilderStats, FreedIds, HostStats, SectionsStats};
use crate::range::RangeSection;
use crate::section::SectionId;
use chorus_core::{Callback, Chare, Ctx, Encoded, ErrorPolicy, GroupProxy, Pe, RedData};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Names one collective: its section and its number among the member's collectives on
/// that section (every member starts a section's collectives in the same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpKey {
    /// The section.
    pub section: SectionId,
    /// The collective's number on the section, from 0.
    pub seq: u64,
}

/// A local start: the member, the collective and where its result goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    /// The member's view of the section.
    pub member: Member,
    /// The collective.
    pub op: Op,
    /// Where this member's result goes.
    pub callback: Callback,
    /// The implementation to run; None lets the job's tuning profile choose.
    pub pin: Option<Impl>,
}

/// Messages of the collectives host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum HostMsg {
    /// The local member starts a collective (sent by `Collectives` on its own PE).
    Start(Box<Start>),
    /// A one-sided multicast from `root` over a range section, passing down its tree.
    Multicast {
        /// The section.
        section: RangeSection,
        /// Rank of the root.
        root: u32,
        /// The value.
        value: RedData,
        /// Where each member delivers it.
        target: PerMember,
    },
    /// A message of a collective from the member of rank `from`.
    Data {
        /// The collective.
        key: OpKey,
        /// Sender's rank.
        from: u32,
        /// Step of the algorithm.
        tag: u32,
        /// The data.
        piece: Piece,
    },
    /// A member's part of a collective failed, under the `drop` policy. With a roster
    /// the failing member tells every member; without one the news passes along the
    /// section's tree through the members still running it or not yet started (in a
    /// tree collective the members still waiting are joined to the failed one by such
    /// members). Each stops its part, or fails it at its start.
    Abort {
        /// What failed, and where first.
        abort: Abort,
        /// The PE this message came from (the news does not go back there).
        from: Pe,
    },
    /// The local member frees its view of built section `section` once its running
    /// collectives on it are done (sent by the builder after its own part, or by
    /// `Collectives::free` for a section the builder does not keep).
    Free {
        /// The section.
        section: SectionId,
        /// Where the section's id goes once it is freed.
        on_freed: Callback,
    },
    /// PE `0` failed (the runtime's `on_pe_failure`): end every collective here that
    /// involves it, and refuse those that would.
    PeFailed(Pe),
    /// Send every later failure of a collective of a member on this PE to the
    /// callback, as `Encoded<FailedCollective>` (`Collectives::watch_failures`).
    Watch(Callback),
    /// Send the sizes of this PE's maps, with the builder's, to `on_stats`.
    Stats {
        /// The builder's sizes on this PE.
        builder: BuilderStats,
        /// Where the [`SectionsStats`] goes.
        on_stats: Callback,
    },
}

/// A collective that failed at one member, as the others hear of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Abort {
    /// The collective.
    pub key: OpKey,
    /// Rank of the member whose part failed.
    pub rank: u32,
    /// That member's PE.
    pub pe: Pe,
    /// What it found wrong.
    pub cause: String,
    /// True if that member told every member itself (it had a roster), so the news
    /// needs no passing on.
    pub told_all: bool,
    /// The failed PE, if the collective ended because a PE of the section failed.
    pub dead: Option<Pe>,
}

/// A collective that ended without a result at a member on this PE, as watchers
/// (`Collectives::watch_failures`) receive it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedCollective {
    /// The section it ran on.
    pub section: SectionId,
    /// Its number among the section's collectives, from 0.
    pub seq: u64,
    /// The member's rank.
    pub rank: u32,
    /// The failed PE, if a PE of the section failed (then the section must be made
    /// again without it).
    pub dead: Option<Pe>,
    /// The error, as reported (`CollectiveError::Failed`).
    pub error: String,
}

impl Abort {
    /// The error of a member that heard of this failure (before it started or not).
    fn error(&self, before_start: bool) -> CollectiveError {
        if let Some(pe) = self.dead {
            return CollectiveError::PeFailed { pe };
        }
        CollectiveError::Aborted {
            rank: self.rank,
            pe: self.pe,
            cause: self.cause.clone(),
            before_start,
        }
    }
}

/// Who errors of collectives are reported by (`RuntimeError::Reported::by`).
pub const REPORTER: &str = "section collectives";

struct Running {
    /// The collective's name, for errors.
    collective: String,
    member: Member,
    /// Rank the tree is re-rooted at for this collective.
    root: u32,
    callback: Callback,
    machine: Box<dyn Machine>,
}

/// The collectives group member on one PE.
///
/// Every map is keyed by section, or by (section, sequence number), and a member's
/// free of a section removes all of its entries (`free`): each says at its field
/// what bounds it while the section lives.
#[derive(Default)]
pub struct CollectivesHost {
    profile: Option<Arc<Profile>>,
    /// Count of collectives started here, per section: one entry per section this
    /// PE's members have used and not freed. Range sections cannot be freed: a
    /// range's id recurs whenever the same range is made again, and its count must go
    /// on, or a collective of the range made again could take the number of one still
    /// running on a slower member. Their entries are bounded by the distinct ranges
    /// the application uses.
    next_seq: HashMap<SectionId, u64>,
    // Boxed: a map holds at least 4 slots, and on sim 10^5 hosts each run one.
    /// Collectives running here: removed when this member's part ends, so the
    /// collectives in flight.
    running: HashMap<OpKey, Box<Running>>,
    /// Messages of collectives this member has not started yet: removed at the
    /// start. Other members may run ahead by as many collectives as the application
    /// lets them (its window of collectives in flight); what is left at a free was
    /// sent by a member that started collectives this one never did, and is reported.
    early: HashMap<OpKey, Vec<(u32, u32, Piece)>>,
    /// Collectives that failed here: their late messages are dropped. One per
    /// failure (each reported) on a live section; removed when it is freed.
    failed: HashSet<OpKey>,
    /// Collectives another member failed before this member started them, with the
    /// PE the news came from: removed at the start, or when the section is freed.
    aborted: HashMap<OpKey, (Abort, Pe)>,
    /// Frees waiting for the section's running collectives, with the callback for
    /// the freed id: at most one per section in `next_seq`.
    freeing: HashMap<SectionId, Callback>,
    /// The last sections freed here: at most [`crate::free::FREED_MEMORY`].
    freed: FreedIds,
    /// Messages dropped because their section was freed here.
    dropped: u64,
    /// PEs reported failed: at most the job's PEs.
    dead: BTreeSet<Pe>,
    /// Where failures of collectives go: one per distinct callback the application
    /// asked for (`watch`), so bounded by its code, not by the run.
    watchers: Vec<Callback>,
}

impl CollectivesHost {
    fn flush(ctx: &mut Ctx, key: OpKey, from: u32, out: Out) {
        let group: GroupProxy<CollectivesHost> =
            ctx.this_group().expect("the host runs as a group member");
        for (pe, tag, piece) in out.sends {
            group.send(
                ctx,
                pe,
                HostMsg::Data {
                    key,
                    from,
                    tag,
                    piece,
                },
            );
        }
    }

    fn start(&mut self, s: Start, ctx: &mut Ctx) {
        let Start {
            member,
            op,
            callback,
            pin,
        } = s;
        let choice =
            pin.unwrap_or_else(|| tuned::choose(self.profile.as_deref(), &op, member.size()));
        let op = tuned::apply(choice, op, member.has_roster());
        let collective = op.name();
        let id = member.id();
        if self.freeing.contains_key(&id) || self.freed.contains(&id) {
            let pe = member.my_pe();
            return ctx.fail(REPORTER, CollectiveError::Freed { section: id, pe });
        }
        let counter = self.next_seq.entry(id).or_insert(0);
        let key = OpKey {
            section: member.id(),
            seq: *counter,
        };
        *counter += 1;
        let (root, op) = op.reroot(member.has_roster());
        let mut run = Running {
            collective,
            machine: op.machine(member.rank(), member.has_roster()),
            member,
            root,
            callback,
        };
        if let Some((abort, from)) = self.aborted.remove(&key) {
            self.early.remove(&key);
            return self.end_failed(ctx, key, run, abort.error(true), Some((abort, from)));
        }
        // A section that holds a failed PE cannot complete a collective: refuse it
        // now rather than wait on the dead PE.
        if let Some(&pe) = self.dead.iter().find(|&&pe| run.member.involves(pe)) {
            self.early.remove(&key);
            return self.end_failed(ctx, key, run, CollectiveError::PeFailed { pe }, None);
        }
        let mut out = Out::default();
        let view = Rerooted::new(&run.member, root);
        let mut step = run.machine.start(&view, &mut out);
        Self::flush(ctx, key, run.member.rank(), out);
        for (from, tag, piece) in self.early.remove(&key).unwrap_or_default() {
            match step {
                Ok(Step::Pending) => {}
                Ok(Step::Done(_)) => {
                    step = Err(CollectiveError::Protocol(format!(
                        "a message from rank {from} after this member's part ended"
                    )));
                    break;
                }
                Err(_) => break,
            }
            let mut out = Out::default();
            let view = Rerooted::new(&run.member, root);
            let got = Received { from, tag, piece };
            step = run.machine.receive(&view, got, &mut out);
            Self::flush(ctx, key, run.member.rank(), out);
        }
        self.settle(ctx, key, run, step);
    }

    fn settle(&mut self, ctx: &mut Ctx, key: OpKey, run: Running, step: Stepped) {
        match step {
            Ok(Step::Pending) => {
                self.running.insert(key, Box::new(run));
            }
            Ok(Step::Done(Some(v))) => {
                let cb = crate::callback::for_member(&run.callback, run.member.my_pe());
                ctx.send_to_callback(&cb, v)
            }
            Ok(Step::Done(None)) => {}
            Err(cause) => self.end_failed(ctx, key, run, cause, None),
        }
    }

    /// End a collective that cannot complete at this member: report it, and pass the
    /// news on to the members that would wait on this one. `heard` is the abort this
    /// member heard of and the PE it came from; None if the failure is this member's.
    fn end_failed(
        &mut self,
        ctx: &mut Ctx,
        key: OpKey,
        run: Running,
        cause: CollectiveError,
        heard: Option<(Abort, Pe)>,
    ) {
        let me = &run.member;
        let (abort, from) = match heard {
            Some((abort, from)) => (abort, Some(from)),
            None => {
                let dead = match cause {
                    CollectiveError::PeFailed { pe } => Some(pe),
                    _ => None,
                };
                let abort = Abort {
                    key,
                    rank: me.rank(),
                    pe: me.my_pe(),
                    cause: cause.to_string(),
                    told_all: me.has_roster(),
                    dead,
                };
                (abort, None)
            }
        };
        let tell: Vec<Pe> = match (abort.told_all, from) {
            (true, Some(_)) => Vec::new(),
            // Every member with a roster hears of the failed PE itself.
            (true, None) if abort.dead.is_some() => Vec::new(),
            (true, None) => (0..me.size())
                .filter(|&r| r != me.rank())
                .filter_map(|r| me.pe_of(r))
                .collect(),
            (false, _) => {
                let view = Rerooted::new(me, run.root);
                view.parent_pe()
                    .into_iter()
                    .chain(children(&view))
                    .filter(|&pe| Some(pe) != from && !self.dead.contains(&pe))
                    .collect()
            }
        };
        let err = CollectiveError::Failed {
            collective: run.collective,
            section: key.section,
            seq: key.seq,
            rank: me.rank(),
            pe: me.my_pe(),
            cause: Box::new(cause),
        };
        self.failed.insert(key);
        let notice = FailedCollective {
            section: key.section,
            seq: key.seq,
            rank: me.rank(),
            dead: abort.dead,
            error: err.to_string(),
        };
        for w in &self.watchers {
            let cb = crate::callback::for_member(w, me.my_pe());
            ctx.send_to_callback(&cb, Encoded(notice.clone()));
        }
        if ctx.on_error() == ErrorPolicy::Abort {
            // The job ends with this error; news of it would only race the exit and
            // put a consequence in the cause's place.
            return ctx.fail(REPORTER, err);
        }
        let group: GroupProxy<CollectivesHost> =
            ctx.this_group().expect("the host runs as a group member");
        let here = ctx.my_pe();
        for pe in tell {
            let abort = abort.clone();
            group.send(ctx, pe, HostMsg::Abort { abort, from: here });
        }
        ctx.fail(REPORTER, err);
    }

    /// PE `pe` failed: end every collective running here whose section holds it
    /// (or, for a member without a roster, has it as a tree neighbour).
    fn pe_failed(&mut self, ctx: &mut Ctx, pe: Pe) {
        self.dead.insert(pe);
        let mut hit: Vec<OpKey> = (self.running.iter())
            .filter(|(_, run)| run.member.involves(pe))
            .map(|(k, _)| *k)
            .collect();
        hit.sort_unstable_by_key(|k| (k.section, k.seq));
        for key in hit {
            if let Some(run) = self.running.remove(&key) {
                let cause = CollectiveError::PeFailed { pe };
                self.end_failed(ctx, key, *run, cause, None);
                self.free_if_done(ctx, key.section);
            }
        }
    }

    /// Another member failed collective `abort.key`: stop this member's part, or
    /// remember it for when this member starts it. A member that has finished its
    /// part already has nothing to stop; one that has freed the section drops it.
    fn abort(&mut self, ctx: &mut Ctx, abort: Abort, from: Pe) {
        let key = abort.key;
        if let Some(run) = self.running.remove(&key) {
            let cause = abort.error(false);
            self.end_failed(ctx, key, *run, cause, Some((abort, from)));
            return self.free_if_done(ctx, key.section);
        }
        // News of a failure may reach a member that finished its part and freed the
        // section (a roster member tells everyone): nothing is waiting for it.
        if self.freed.contains(&key.section) {
            self.dropped += 1;
            return;
        }
        let started = self.next_seq.get(&key.section).copied().unwrap_or(0) > key.seq;
        if !started {
            self.aborted.insert(key, (abort, from));
        }
    }
}

impl CollectivesHost {
    /// Send `msg` to the host on this PE (a free of a built section, or the
    /// builder's sizes to add to).
    pub(crate) fn send_here(group: &GroupProxy<CollectivesHost>, ctx: &mut Ctx, msg: HostMsg) {
        let me = ctx.my_pe();
        group.send(ctx, me, msg);
    }

    /// The sizes of this PE's maps.
    pub fn stats(&self) -> HostStats {
        HostStats {
            next_seq: self.next_seq.len(),
            running: self.running.len(),
            early: self.early.len(),
            failed: self.failed.len(),
            aborted: self.aborted.len(),
            freeing: self.freeing.len(),
            freed_remembered: self.freed.len(),
            dropped: self.dropped,
        }
    }

    /// The local member frees `section`: now, or once its running collectives on it
    /// are done (MPI's rule: pending operations complete first). Starting a
    /// collective on it from now on is an error.
    fn free(&mut self, ctx: &mut Ctx, section: SectionId, on_freed: Callback) {
        if self.freeing.contains_key(&section) || self.freed.contains(&section) {
            let pe = ctx.my_pe();
            return ctx.fail(REPORTER, CollectiveError::Freed { section, pe });
        }
        self.freeing.insert(section, on_freed);
        self.free_if_done(ctx, section);
    }

    /// Finish the free of `section`, if one waits and none of its collectives runs.
    fn free_if_done(&mut self, ctx: &mut Ctx, section: SectionId) {
        // Called after every message of a running collective: the lookup comes first.
        if !self.freeing.contains_key(&section) || self.running.keys().any(|k| k.section == section)
        {
            return;
        }
        let Some(on_freed) = self.freeing.remove(&section) else {
            return;
        };
        self.next_seq.remove(&section);
        self.failed.retain(|k| k.section != section);
        // Messages and news for collectives this member never started: their senders
        // broke the rule that every member starts the same collectives.
        let keys: Vec<OpKey> = (self.early.keys())
            .filter(|k| k.section == section)
            .copied()
            .collect();
        let mut late = Vec::new();
        for key in keys {
            let msgs = self.early.remove(&key).unwrap_or_default();
            self.dropped += msgs.len() as u64;
            if let Some(&(from, _, _)) = msgs.first() {
                late.push((key.seq, from));
            }
        }
        let before = self.aborted.len();
        self.aborted.retain(|k, _| k.section != section);
        self.dropped += (before - self.aborted.len()) as u64;
        self.freed.insert(section);
        let pe = ctx.my_pe();
        for (seq, from) in late {
            let err = CollectiveError::AfterFree {
                section,
                seq,
                from,
                pe,
            };
            ctx.fail(REPORTER, err);
        }
        let cb = crate::callback::for_member(&on_freed, pe);
        ctx.send_to_callback(&cb, section);
    }

    /// A message of collective `key` came for a section freed here: drop it, count
    /// it and report it (the sender started a collective this member never did).
    fn late_message(&mut self, ctx: &mut Ctx, key: OpKey, from: u32) {
        self.dropped += 1;
        let err = CollectiveError::AfterFree {
            section: key.section,
            seq: key.seq,
            from,
            pe: ctx.my_pe(),
        };
        ctx.fail(REPORTER, err);
    }
}

impl Chare for CollectivesHost {
    /// The job's tuning profile, if it has one.
    type Init = Option<Arc<Profile>>;
    type Msg = HostMsg;

    fn create(profile: Option<Arc<Profile>>, ctx: &mut Ctx) -> Self {
        let failed = ctx.find_entry::<CollectivesHost, Pe>(super::PE_FAILED_ENTRY);
        if let (Some(entry), Some(g)) = (failed, ctx.this_group::<CollectivesHost>()) {
            let me = ctx.my_pe();
            ctx.on_pe_failure(Callback::group_member(&g, me, entry));
        }
        CollectivesHost {
            profile,
            ..CollectivesHost::default()
        }
    }

    fn handle(&mut self, msg: HostMsg, ctx: &mut Ctx) {
        match msg {
            HostMsg::Start(s) => self.start(*s, ctx),
            HostMsg::Multicast {
                section,
                root,
                value,
                target,
            } => {
                let me = RangeMember::new(section, ctx.my_pe())
                    .expect("a multicast reaches members only");
                let group: GroupProxy<CollectivesHost> =
                    ctx.this_group().expect("the host runs as a group member");
                for pe in multicast::children(me, root) {
                    let msg = HostMsg::Multicast {
                        section,
                        root,
                        value: value.clone(),
                        target: target.clone(),
                    };
                    group.send(ctx, pe, msg);
                }
                ctx.send_to_callback(&target.callback(me.rank(), ctx.my_pe()), value);
            }
            HostMsg::Data {
                key,
                from,
                tag,
                piece,
            } => match self.running.remove(&key) {
                None if self.failed.contains(&key) => {}
                Some(mut run) => {
                    let mut out = Out::default();
                    let view = Rerooted::new(&run.member, run.root);
                    let got = Received { from, tag, piece };
                    let step = run.machine.receive(&view, got, &mut out);
                    Self::flush(ctx, key, run.member.rank(), out);
                    self.settle(ctx, key, *run, step);
                    self.free_if_done(ctx, key.section);
                }
                None if self.freed.contains(&key.section) => self.late_message(ctx, key, from),
                None => self.early.entry(key).or_default().push((from, tag, piece)),
            },
            HostMsg::Abort { abort, from } => self.abort(ctx, abort, from),
            HostMsg::PeFailed(pe) => self.pe_failed(ctx, pe),
            HostMsg::Watch(cb) => {
                if !self.watchers.contains(&cb) {
                    self.watchers.push(cb);
                }
            }
            HostMsg::Free { section, on_freed } => self.free(ctx, section, on_freed),
            HostMsg::Stats { builder, on_stats } => {
                let stats = SectionsStats {
                    builder,
                    host: self.stats(),
                };
                let cb = crate::callback::for_member(&on_stats, ctx.my_pe());
                ctx.send_to_callback(&cb, stats);
            }
        }
    }
}
