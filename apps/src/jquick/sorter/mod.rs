//! The sorter group: one member per PE runs that PE's part of every task. A task
//! fills with elements; a distributed one (three PEs or more) runs one level on its
//! range section — sample allgather, then a scan and an allreduce of the small
//! counts, both in flight at once — and sends its elements to the two subtasks point
//! to point. Tasks progress independently, so a janus PE works on both of its
//! sections at the same time. Base cases wait until the PE has no distributed task
//! left, then the PE reports its slice. With `--sections split-model`,
//! `create-group-model` or `native-create-group-model` every level first makes its children's groups as MPI would
//! (`splitting.rs`), and a child starts only on the group its own members made.

mod creating;
mod splitting;

use super::base::BaseCase;
use super::built::BuiltSections;
use super::input;
use super::key::Elem;
use super::layout::Layout;
use super::pivot;
use super::spec::SortSpec;
use super::split_model::table::PairTable;
use super::split_model::{SplitId, Splits};
use super::task::{self, Partitioned, TaskKey};
use super::verify::PeRecord;
use chorus_core::{Callback, Chare, Ctx, Encoded, Entry, GroupProxy, Reducer};
use chorus_sections::collectives::{Collectives, Member, RangeMember, Topology, TreeMember};
use chorus_sections::host::{Builder, Membership, Parent, Request};
use chorus_sections::protocol::{Algorithm, Filler};
use chorus_sections::range::RangeSection;
use chorus_sections::section::Section;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// Entries of the sorter that collectives deliver to.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SorterEntries {
    /// The start barrier is done: sort.
    pub go: Entry<Sorter, Vec<u64>>,
    /// A task's samples: [a, b, depth, key, origin, key, origin, ..].
    pub samples: Entry<Sorter, Vec<u64>>,
    /// A task's inclusive scan of small counts: [a, b, depth, small up to me].
    pub prefix: Entry<Sorter, Vec<u64>>,
    /// A task's total small count: [a, b, depth, small].
    pub total: Entry<Sorter, Vec<u64>>,
    /// A built task's small counts by PE: [a, b, depth, count of each PE in order].
    pub counts: Entry<Sorter, Vec<u64>>,
    /// A section the builder made (Shrink-and-Hash mode).
    pub section: Entry<Sorter, Encoded<Section>>,
    /// A modelled split's context-id allreduce: [a, b, depth, child, mask..].
    pub context: Entry<Sorter, Vec<u64>>,
    /// A collective of a modelled group creation: [a, b, depth, child, tag, ..].
    pub create_step: Entry<Sorter, Vec<u64>>,
}

/// What every sorter member starts from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SorterInit {
    /// The run.
    pub spec: SortSpec,
    /// The job's section collectives.
    pub collectives: Collectives,
    /// The section builder, when tasks get built sections instead of ranges.
    pub builder: Option<GroupProxy<Builder>>,
    /// The sorter's own entries.
    pub entries: SorterEntries,
    /// Where each PE's record goes (a Concat reduction over the group).
    pub records: Callback,
}

/// Messages of a sorter member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SorterMsg {
    /// Every PE has made its input (the start barrier).
    Go(Vec<u64>),
    /// Result of a task's sample allgather.
    Samples(Vec<u64>),
    /// Result of a task's scan of small counts.
    Prefix(Vec<u64>),
    /// Result of a task's allreduce of small counts.
    Total(Vec<u64>),
    /// Result of a built task's allreduce of small counts by PE.
    Counts(Vec<u64>),
    /// A section the builder made for a task this PE is in.
    Section(Encoded<Section>),
    /// Result of a modelled split's context-id allreduce.
    Context(Vec<u64>),
    /// A round of a modelled split's (colour, key) allgather.
    SplitRound {
        /// The split.
        id: SplitId,
        /// The round.
        round: u32,
        /// The pairs the sender passes on.
        table: PairTable,
    },
    /// Result of a collective of a modelled MPI_Comm_create_group.
    CreateStep(Vec<u64>),
    /// A group leader's half of a modelled MPI_Comm_create_group's exchange.
    CreateExchange {
        /// The creation (the child whose group it makes).
        id: SplitId,
        /// The exchange's tag.
        tag: u32,
        /// The words sent (their size is what the network model charges).
        words: Vec<u64>,
    },
    /// Elements of `key` for this PE; `section` is the task's range section when it
    /// spans three PEs or more (split from its parent's by the sender: no message).
    Data {
        /// The task.
        key: TaskKey,
        /// The sending PE.
        from: u32,
        /// Its section, if distributed.
        section: Option<RangeSection>,
        /// The elements.
        elems: Vec<Elem>,
    },
    /// The other PE's elements of a two-PE base case.
    Partner {
        /// The task.
        key: TaskKey,
        /// Its elements.
        elems: Vec<Elem>,
    },
}

/// Where a distributed task is in its level.
enum Stage {
    /// Waiting for elements.
    Filling,
    /// Waiting for the samples.
    Sampling,
    /// Waiting for the scan and the total.
    Counting {
        small: Vec<Elem>,
        large: Vec<Elem>,
        inclusive: Option<u64>,
        total: Option<u64>,
    },
}

/// This PE's part of one task.
struct Task {
    /// The task's range section (range mode, three PEs or more).
    section: Option<RangeSection>,
    /// This PE's member of the task's section, once it has one.
    member: Option<Member>,
    /// The elements arrived so far, by sending PE (at most one piece per PE).
    pieces: Vec<(u32, Vec<Elem>)>,
    got: u64,
    /// All elements, in sending-PE order, once they are here: so the order, and with
    /// it the pivots and the recursion, never depends on message timing.
    elems: Vec<Elem>,
    expect: u64,
    stage: Stage,
}

/// One PE's sorter.
pub struct Sorter {
    init: SorterInit,
    me: u32,
    layout: Layout,
    tasks: HashMap<TaskKey, Task>,
    bases: Vec<BaseCase>,
    early_partner: HashMap<TaskKey, Vec<Elem>>,
    /// Positions of this PE that are in base cases.
    covered: u64,
    running: u64,
    record: PeRecord,
    /// This PE's input, until the start barrier.
    input: Option<Vec<Elem>>,
    /// Built sections and the tasks waiting for them (Shrink-and-Hash mode).
    built: BuiltSections,
    /// Modelled MPI_Comm_splits or MPI_Comm_create_groups under way (modelled modes).
    splits: Splits,
    done: bool,
}

impl Chare for Sorter {
    type Init = SorterInit;
    type Msg = SorterMsg;

    fn create(init: SorterInit, ctx: &mut Ctx) -> Self {
        let me = ctx.my_pe();
        let layout = Layout::new(init.spec.n, ctx.num_pes() as u32);
        let s = &init.spec;
        let (first, len) = (layout.start(me), layout.len(me));
        let elems = input::generate(s.input, s.keys, s.seed, s.n, first, len);
        let sorter = Sorter {
            me,
            layout,
            tasks: HashMap::new(),
            bases: Vec::new(),
            early_partner: HashMap::new(),
            covered: 0,
            running: 0,
            record: PeRecord {
                fp_in: input::fingerprint(&elems),
                ..PeRecord::default()
            },
            input: Some(elems),
            built: BuiltSections::default(),
            splits: Splits::default(),
            done: false,
            init,
        };
        // Start together, as the MPI baseline does after its barrier, so the time
        // does not include making the group and the input.
        let world = sorter.world();
        let cb = sorter.callback(ctx, sorter.init.entries.go);
        sorter
            .init
            .collectives
            .barrier(ctx, sorter.member(world), cb)
            .expect("the start barrier is well formed");
        sorter
    }

    fn handle(&mut self, msg: SorterMsg, ctx: &mut Ctx) {
        match msg {
            SorterMsg::Go(_) => self.go(ctx),
            SorterMsg::Samples(v) => self.samples(ctx, &v),
            SorterMsg::Prefix(v) => self.counted(ctx, &v, true),
            SorterMsg::Total(v) => self.counted(ctx, &v, false),
            SorterMsg::Counts(v) => self.counts_by_pe(ctx, &v),
            SorterMsg::Context(v) => self.context_id(ctx, &v),
            SorterMsg::SplitRound { id, round, table } => self.split_round(ctx, id, round, table),
            SorterMsg::CreateStep(v) => self.create_step(ctx, &v),
            SorterMsg::CreateExchange { id, tag, .. } => self.create_exchange(ctx, id, tag),
            SorterMsg::Section(Encoded(section)) => {
                if let Some((key, section)) = self.built.arrive(section) {
                    self.sample(ctx, key, TreeMember::new(section, self.me).into());
                }
            }
            SorterMsg::Data {
                key,
                from,
                section,
                elems,
            } => self.receive(ctx, key, from, section, elems),
            SorterMsg::Partner { key, elems } => {
                match self.bases.iter_mut().find(|b| b.key == key) {
                    Some(b) => {
                        if let Some((_, slot)) = &mut b.partner {
                            *slot = Some(elems);
                        }
                    }
                    None => {
                        self.early_partner.insert(key, elems);
                    }
                }
                self.try_finish(ctx);
            }
        }
    }
}

impl Sorter {
    fn world(&self) -> RangeSection {
        RangeSection::world(self.layout.pes(), self.init.spec.k).expect("the spec's k was checked")
    }

    /// Sort this PE's input from the root task.
    fn go(&mut self, ctx: &mut Ctx) {
        self.record.t0 = ctx.now();
        let elems = self.input.take().expect("the start barrier ends once");
        // PEs without positions (n < p) take no part in any task.
        if !elems.is_empty() {
            let root = TaskKey {
                a: 0,
                b: self.layout.n(),
                depth: 0,
            };
            let section = self.child_section(self.world(), root);
            self.receive(ctx, root, self.me, section, elems);
        }
        self.try_finish(ctx);
    }

    fn proxy(ctx: &Ctx) -> GroupProxy<Sorter> {
        ctx.this_group::<Sorter>()
            .expect("a sorter runs as a group member")
    }

    fn callback(&self, ctx: &Ctx, entry: Entry<Sorter, Vec<u64>>) -> Callback {
        Callback::group_member(&Self::proxy(ctx), self.me, entry)
    }

    /// Charge `units` element steps of local work on the simulator.
    fn charge(&self, ctx: &mut Ctx, units: f64) {
        if let Some(ns) = self.init.spec.sim_ns_per_elem {
            ctx.work(Duration::from_nanos((units * ns) as u64));
        }
    }

    fn member(&self, section: RangeSection) -> RangeMember {
        RangeMember::new(section, self.me)
            .unwrap_or_else(|e| panic!("PE {} is not in {section:?}: {e}", self.me))
    }

    /// Elements of `key` arrived (or were kept); start the task once all are here.
    fn receive(
        &mut self,
        ctx: &mut Ctx,
        key: TaskKey,
        from: u32,
        section: Option<RangeSection>,
        elems: Vec<Elem>,
    ) {
        let expect = self.layout.overlap(self.me, key.a, key.b);
        let task = self.tasks.entry(key).or_insert_with(|| Task {
            section,
            member: None,
            pieces: Vec::new(),
            got: 0,
            elems: Vec::new(),
            expect,
            stage: Stage::Filling,
        });
        if task.section.is_none() {
            task.section = section;
        }
        task.got += elems.len() as u64;
        if !elems.is_empty() {
            task.pieces.push((from, elems));
        }
        assert!(
            task.got <= task.expect,
            "PE {} got too many elements of {key:?}",
            self.me
        );
        if task.got == task.expect {
            if !task.pieces.is_empty() {
                task.pieces.sort_unstable_by_key(|p| p.0);
                task.elems = Vec::with_capacity(expect as usize);
                for (_, piece) in std::mem::take(&mut task.pieces) {
                    task.elems.extend(piece);
                }
            }
            self.start(ctx, key);
        }
    }

    /// All of this PE's elements of `key` are here: a base case waits for the end of
    /// the distributed phase; a distributed task gets its section and starts.
    fn start(&mut self, ctx: &mut Ctx, key: TaskKey) {
        let (first, last) = self.layout.span(key.a, key.b);
        if last - first < 2 {
            let task = self.tasks.remove(&key).expect("a full task is stored");
            self.covered += task.expect;
            let partner = (first != last).then(|| {
                let other = if self.me == first { last } else { first };
                Self::proxy(ctx).send(
                    ctx,
                    other,
                    SorterMsg::Partner {
                        key,
                        elems: task.elems.clone(),
                    },
                );
                (other, self.early_partner.remove(&key))
            });
            self.bases.push(BaseCase {
                key,
                mine: task.elems,
                partner,
                left: self.me == first,
            });
            self.try_finish(ctx);
            return;
        }
        if self.modelled() && self.tasks[&key].section.is_none() {
            // The elements beat this PE's own creation of the group: wait for it.
            return;
        }
        self.running += 1;
        self.record.max_concurrent = self.record.max_concurrent.max(self.running);
        self.record.levels = self.record.levels.max(u64::from(key.depth) + 1);
        if let Some(builder) = self.init.builder {
            if self.me == first {
                self.record.sections += 1;
                let on_member = Callback::group_all(&Self::proxy(ctx), self.init.entries.section);
                let req = Request {
                    algorithm: Algorithm::ShrinkAndHash(Filler::None),
                    k: self.init.spec.k,
                    parent: Parent::World,
                    membership: Membership::Run { first, last },
                    on_member,
                    on_report: Callback::Ignore,
                    tag: key.a,
                    keep: false,
                };
                Builder::create_section(&builder, ctx, req);
            }
            if let Some(section) = self.built.want((first, last - first + 1), key) {
                self.sample(ctx, key, TreeMember::new(section, self.me).into());
            }
            return;
        }
        let task = self.tasks.get(&key).expect("a full task is stored");
        let section = task.section.expect("a distributed task has a section");
        let member = self.member(section);
        if member.rank() == 0 {
            self.record.sections += 1;
        }
        self.sample(ctx, key, member.into());
    }

    /// Start the task's sample allgather on its section.
    fn sample(&mut self, ctx: &mut Ctx, key: TaskKey, member: Member) {
        let me_first = self.layout.start(self.me).max(key.a);
        let spec = &self.init.spec;
        let task = self.tasks.get_mut(&key).expect("a full task is stored");
        task.stage = Stage::Sampling;
        task.member = Some(member.clone());
        let samples = pivot::local_samples(spec.seed, key, spec.samples, me_first, &task.elems);
        let mut v = member_head(&member, key).map(Vec::from).unwrap_or_default();
        v.extend(samples);
        let cb = self.callback(ctx, self.init.entries.samples);
        self.init
            .collectives
            .allreduce(ctx, member, v, Reducer::Concat, cb)
            .expect("the sample allgather is well formed");
    }

    fn samples(&mut self, ctx: &mut Ctx, v: &[u64]) {
        let key = TaskKey::from_words(v).expect("samples carry their task");
        let pivot = pivot::median(&v[3..]).expect("a task draws at least one sample");
        let task = self.tasks.get_mut(&key).expect("sampled task is running");
        let elems = std::mem::take(&mut task.elems);
        let n = elems.len();
        let (small, large): (Vec<Elem>, Vec<Elem>) = elems.into_iter().partition(|e| *e < pivot);
        let member = task.member.clone().expect("a sampled task has a member");
        let s = small.len() as u64;
        task.stage = Stage::Counting {
            small,
            large,
            inclusive: None,
            total: None,
        };
        self.charge(ctx, n as f64);
        let mut v: Vec<u64> = member_head(&member, key).map_or([0; 3], |h| h).to_vec();
        let collectives = self.init.collectives;
        if self.init.builder.is_some() {
            // A built section ranks its members in no particular order, so a scan by
            // rank is no prefix by PE: every member learns every PE's count instead.
            let (first, last) = self.layout.span(key.a, key.b);
            let mut slots = vec![0u64; (last - first + 1) as usize];
            slots[(self.me - first) as usize] = s;
            v.extend(slots);
            let cb = self.callback(ctx, self.init.entries.counts);
            collectives
                .allreduce(ctx, member, v, Reducer::Sum, cb)
                .expect("the count allreduce is well formed");
            return;
        }
        v.push(s);
        let cb = self.callback(ctx, self.init.entries.prefix);
        collectives
            .scan(ctx, member.clone(), v.clone(), Reducer::Sum, cb)
            .expect("the count scan is well formed");
        let cb = self.callback(ctx, self.init.entries.total);
        collectives
            .allreduce(ctx, member, v, Reducer::Sum, cb)
            .expect("the count allreduce is well formed");
    }

    /// A built task's counts by PE: this PE's inclusive prefix and the total.
    fn counts_by_pe(&mut self, ctx: &mut Ctx, v: &[u64]) {
        let key = TaskKey::from_words(v).expect("counts carry their task");
        let (first, _) = self.layout.span(key.a, key.b);
        let counts = &v[3..];
        let mine = (self.me - first) as usize;
        let inclusive: u64 = counts[..=mine].iter().sum();
        let total: u64 = counts.iter().sum();
        let task = self.tasks.get_mut(&key).expect("counted task is running");
        let Stage::Counting {
            inclusive: i,
            total: t,
            ..
        } = &mut task.stage
        else {
            panic!("counts of {key:?} before its samples");
        };
        *i = Some(inclusive);
        *t = Some(total);
        self.exchange(ctx, key);
    }

    fn counted(&mut self, ctx: &mut Ctx, v: &[u64], is_prefix: bool) {
        let key = TaskKey::from_words(v).expect("counts carry their task");
        let count = v[3];
        let task = self.tasks.get_mut(&key).expect("counted task is running");
        let Stage::Counting {
            inclusive, total, ..
        } = &mut task.stage
        else {
            panic!("counts of {key:?} before its samples");
        };
        if is_prefix {
            *inclusive = Some(count);
        } else {
            *total = Some(count);
        }
        if inclusive.is_some() && total.is_some() {
            self.exchange(ctx, key);
        }
    }

    /// Send this PE's elements of `key` to the subtasks and drop the task (in
    /// split-model mode, once the task's modelled splits are done).
    fn exchange(&mut self, ctx: &mut Ctx, key: TaskKey) {
        if self.groups_first(ctx, key) {
            return;
        }
        let task = self.tasks.remove(&key).expect("exchanged task is running");
        let Stage::Counting {
            small,
            large,
            inclusive: Some(inclusive),
            total: Some(total),
        } = task.stage
        else {
            unreachable!("exchange runs once both counts are in");
        };
        self.running -= 1;
        let children = key.children(total);
        let (mine_lo, mine_hi) = (self.layout.start(self.me), self.layout.start(self.me + 1));
        let cut = children[0].b;
        if !children[0].is_empty() && !children[1].is_empty() && mine_lo < cut && cut < mine_hi {
            self.record.janus += 1;
            ctx.trace_event("jquick::janus");
        }
        // In modelled modes a PE's groups come from its own creations and data messages
        // carry none, so no member starts a child before its creation made the group.
        let mut own = [None, None];
        let sections = match task.section {
            Some(_) if self.modelled() => {
                if let Some(done) = self.splits.parents.remove(&key) {
                    own = done.groups;
                }
                [None, None]
            }
            Some(section) => children.map(|c| self.child_section(section, c)),
            None => [None, None],
        };
        for (child, group) in children.into_iter().zip(own) {
            if let Some(group) = group {
                self.receive(ctx, child, self.me, Some(group), Vec::new());
            }
        }
        let part = Partitioned {
            small_before: inclusive - small.len() as u64,
            small,
            large,
            small_total: total,
        };
        let me_first = mine_lo.max(key.a);
        let mut local = Vec::new();
        let proxy = Self::proxy(ctx);
        for r in task::routes(&self.layout, key, me_first, part) {
            let section = if r.child == children[0] {
                sections[0]
            } else {
                sections[1]
            };
            if r.pe == self.me {
                local.push((r.child, section, r.elems));
            } else {
                let msg = SorterMsg::Data {
                    key: r.child,
                    from: self.me,
                    section,
                    elems: r.elems,
                };
                proxy.send(ctx, r.pe, msg);
            }
        }
        for (child, section, elems) in local {
            self.receive(ctx, child, self.me, section, elems);
        }
        self.try_finish(ctx);
    }

    /// The child's range section, nested in the parent's (O(1), no message), if the
    /// child spans three PEs or more.
    fn child_section(&self, parent: RangeSection, child: TaskKey) -> Option<RangeSection> {
        if child.is_empty() {
            return None;
        }
        let (f, l) = self.layout.span(child.a, child.b);
        if l - f < 2 {
            return None;
        }
        let base = parent.pe(0).expect("a section has members");
        Some(
            parent
                .split(f - base, l - base, 1)
                .expect("a child's PEs are a range of its parent's"),
        )
    }

    /// Once every position is in a base case and every partner has answered, sort
    /// the base cases and report the slice.
    fn try_finish(&mut self, ctx: &mut Ctx) {
        if self.done
            || self.input.is_some()
            || self.covered != self.layout.len(self.me)
            || !self.bases.iter().all(BaseCase::ready)
        {
            return;
        }
        self.done = true;
        let mut bases = std::mem::take(&mut self.bases);
        bases.sort_by_key(|b| b.key.a);
        let mut slice = Vec::with_capacity(self.layout.len(self.me) as usize);
        let mut work = 0.0;
        for b in bases {
            let (sorted, n) = b.solve();
            let n = n as f64;
            work += n * n.max(2.0).log2();
            slice.extend(sorted);
        }
        self.charge(ctx, work);
        let rec = PeRecord {
            t1: ctx.now(),
            ..PeRecord::of_slice(self.me, &slice)
        };
        self.record = PeRecord {
            t0: self.record.t0,
            fp_in: self.record.fp_in,
            janus: self.record.janus,
            sections: self.record.sections,
            levels: self.record.levels,
            max_concurrent: self.record.max_concurrent,
            ..rec
        };
        if self.init.spec.keep_output {
            let keys: Vec<u64> = slice.iter().map(|e| e.0).collect();
            ctx.publish("slice", &keys);
        }
        ctx.contribute(
            self.record.words().to_vec(),
            Reducer::Concat,
            self.init.records.clone(),
        );
    }
}

/// The task's name words, from rank 0 only (the others give zeros, so sums and
/// concatenations carry the name once).
fn member_head(member: &Member, key: TaskKey) -> Option<[u64; 3]> {
    (member.rank() == 0).then(|| key.words())
}
