//! The sorter's modelled communicator creation: before its exchange every level makes
//! its children's groups as MPI would — split-model mode splits the parent's group as
//! MPICH's MPI_Comm_split would (`split_model`), the two create-group-model modes
//! run `creating.rs` — and a child starts only on the group its own members made.

use super::{Sorter, SorterMsg, Stage};
use crate::jquick::spec::SectionMode;
use crate::jquick::split_model::gather::{self, PairGather};
use crate::jquick::split_model::table::{self, PairTable};
use crate::jquick::split_model::{self, ParentSplits, SplitId};
use crate::jquick::task::TaskKey;
use chorus_core::{Ctx, Reducer};
use chorus_sections::collectives::Topology;
use chorus_sections::range::RangeSection;

impl Sorter {
    /// Whether every level makes its children's groups by a modelled MPI call.
    pub(super) fn modelled(&self) -> bool {
        self.init.spec.sections.is_model()
    }

    /// Modelled modes: true while the creation of `key`'s children's groups (one call
    /// per distributed child, one after the other) keeps its exchange waiting; starts
    /// them the first time.
    pub(super) fn groups_first(&mut self, ctx: &mut Ctx, key: TaskKey) -> bool {
        if !self.modelled() {
            return false;
        }
        if let Some(p) = self.splits.parents.get(&key) {
            return p.next < 2;
        }
        let task = &self.tasks[&key];
        let Stage::Counting {
            total: Some(total), ..
        } = task.stage
        else {
            unreachable!("a task splits once its counts are in");
        };
        let section = task.section.expect("a distributed task has a section");
        self.splits.parents.insert(
            key,
            ParentSplits {
                section,
                children: key.children(total),
                next: 0,
                groups: [None, None],
            },
        );
        self.next_group(ctx, key)
    }

    /// Start the creation of `parent`'s next distributed child's group (with
    /// MPI_Comm_create_group, only of one this PE is in); false if none is left.
    pub(super) fn next_group(&mut self, ctx: &mut Ctx, parent: TaskKey) -> bool {
        let p = &self.splits.parents[&parent];
        let (section, children, mut next) = (p.section, p.children, p.next);
        let collective = self.init.spec.sections == SectionMode::SplitModel;
        // Only a child of three PEs or more gets a communicator, as in mpi_split.rs.
        while next < 2 && {
            let child = children[next as usize];
            let theirs = self.layout.overlap(self.me, child.a, child.b) == 0;
            self.child_section(section, child).is_none() || (theirs && !collective)
        } {
            next += 1;
        }
        if let Some(p) = self.splits.parents.get_mut(&parent) {
            p.next = next;
        }
        if next == 2 {
            return false;
        }
        let child = children[next as usize];
        let id = SplitId {
            parent,
            child: next,
        };
        if !collective {
            self.create_group(ctx, id, section, child);
            return true;
        }
        let member = self.layout.overlap(self.me, child.a, child.b) > 0;
        let colour = if member { 0 } else { table::UNDEFINED };
        let size = section.size();
        let rank = section
            .rank(self.me)
            .expect("a PE splits only its own groups");
        let mine = PairTable::one(table::pair(colour, 0));
        let mut g = PairGather::new(
            gather::modelled(size, self.init.spec.split_ring),
            rank,
            size,
            mine,
        );
        let mut out: Vec<_> = g.start().into_iter().collect();
        for (round, t) in self.splits.early.remove(&id).unwrap_or_default() {
            out.extend(g.arrive(round, t));
        }
        let done = g.is_done();
        self.splits.gathers.insert(id, g);
        self.send_rounds(ctx, section, id, out);
        if done {
            self.gathered(ctx, id);
        }
        true
    }

    fn send_rounds(
        &self,
        ctx: &mut Ctx,
        section: RangeSection,
        id: SplitId,
        out: Vec<gather::Outgoing>,
    ) {
        let proxy = Self::proxy(ctx);
        for o in out {
            let pe = section.pe(o.to).expect("a round goes to a parent member");
            let msg = SorterMsg::SplitRound {
                id,
                round: o.round,
                table: o.table,
            };
            proxy.send(ctx, pe, msg);
        }
    }

    /// A round of a split's allgather arrived (maybe before this PE started it).
    pub(super) fn split_round(&mut self, ctx: &mut Ctx, id: SplitId, round: u32, t: PairTable) {
        let Some(g) = self.splits.gathers.get_mut(&id) else {
            self.splits.early.entry(id).or_default().push((round, t));
            return;
        };
        let out = g.arrive(round, t);
        let done = g.is_done();
        let section = self.splits.parents[&id.parent].section;
        self.send_rounds(ctx, section, id, out);
        if done {
            self.gathered(ctx, id);
        }
    }

    /// The split's table is complete: allreduce the context-id mask, as MPICH does.
    fn gathered(&mut self, ctx: &mut Ctx, id: SplitId) {
        let g = self.splits.gathers.remove(&id).expect("a finished gather");
        self.splits.tables.insert(id, g.finish());
        let section = self.splits.parents[&id.parent].section;
        let member = self.member(section);
        // Rank 0 names the split; the others' all-ones leave it under the bitwise and.
        let mut v = vec![u64::MAX; split_model::CONTEXT_WORDS];
        if member.rank() == 0 {
            v[..4].copy_from_slice(&id.words());
        }
        let cb = self.callback(ctx, self.init.entries.context);
        self.init
            .collectives
            .allreduce(ctx, member, v, Reducer::BitAnd, cb)
            .expect("the context-id allreduce is well formed");
    }

    /// A split's context id is agreed: sort the table into this PE's new group (time
    /// charged on the simulator), then split the next child or exchange.
    pub(super) fn context_id(&mut self, ctx: &mut Ctx, v: &[u64]) {
        let id = SplitId::from_words(v).expect("a context id names its split");
        let t = self.splits.tables.remove(&id).expect("a gathered split");
        let p = self
            .splits
            .parents
            .get_mut(&id.parent)
            .expect("a parent splitting");
        let rank = p.section.rank(self.me).expect("a member of the parent");
        let group = table::new_group(&t, rank);
        let cost = split_model::local_cost(t.len(), group.as_ref().map(|g| g.members.len() as u32));
        if let Some(g) = group {
            // Counted where the child starts, as range sections are.
            p.groups[id.child as usize] = Some(split_model::group_section(p.section, &g.members));
        }
        p.next += 1;
        if self.init.spec.sim_ns_per_elem.is_some() {
            // On the simulator only: elsewhere the scan and sort above took real time.
            ctx.work(cost);
        }
        if !self.next_group(ctx, id.parent) {
            self.exchange(ctx, id.parent);
        }
    }
}
