//! Create-group-model modes: each child's group is made, before the parent's
//! exchange, by a modelled MPI_Comm_create_group over the child's PEs only (Dinan et
//! al.'s noncollective algorithm, or MPICH's native one-allreduce implementation:
//! `mpi_model::comm_create`), one child after the other on a janus PE, as blocking
//! calls would. The parent's other members take no part.

use super::{Sorter, SorterMsg};
use crate::jquick::spec::SectionMode;
use crate::jquick::split_model::SplitId;
use crate::jquick::task::TaskKey;
use crate::mpi_model::comm_create::{self, Block, Method};
use crate::mpi_model::script_run::{Env, ScriptRun};
use chorus_core::Ctx;
use chorus_sections::range::RangeSection;

impl Sorter {
    /// Start making `child`'s group out of the parent's `section` (this PE is in it).
    pub(super) fn create_group(
        &mut self,
        ctx: &mut Ctx,
        id: SplitId,
        section: RangeSection,
        child: TaskKey,
    ) {
        let (first, last) = self.layout.span(child.a, child.b);
        let parent = Block {
            first: section.pe(0).expect("a section has members"),
            size: section.size(),
        };
        let group = Block {
            first,
            size: last - first + 1,
        };
        let method = match self.init.spec.sections {
            SectionMode::NativeCreateGroupModel => Method::CreateGroup,
            _ => Method::Dinan,
        };
        let steps = comm_create::steps(method, self.me, parent, group);
        let mut run = ScriptRun::new(id.words().to_vec(), steps);
        for tag in self.splits.early_exchanges.remove(&id).unwrap_or_default() {
            run.exchanged(tag)
                .unwrap_or_else(|e| panic!("PE {}: {e}", self.me));
        }
        self.splits.creating.insert(id, run);
        self.advance_creation(ctx, id);
    }

    /// A collective of a creation finished here.
    pub(super) fn create_step(&mut self, ctx: &mut Ctx, v: &[u64]) {
        let id = SplitId::from_words(v).expect("a creation's result names it");
        let run = self
            .splits
            .creating
            .get_mut(&id)
            .expect("a collective result for a creation under way");
        run.collective_done(v)
            .unwrap_or_else(|e| panic!("PE {}: {e}", self.me));
        self.advance_creation(ctx, id);
    }

    /// Another group leader's half of an exchange arrived.
    pub(super) fn create_exchange(&mut self, ctx: &mut Ctx, id: SplitId, tag: u32) {
        let Some(run) = self.splits.creating.get_mut(&id) else {
            self.splits.early_exchanges.entry(id).or_default().push(tag);
            return;
        };
        run.exchanged(tag)
            .unwrap_or_else(|e| panic!("PE {}: {e}", self.me));
        self.advance_creation(ctx, id);
    }

    /// Run creation `id` on; once its group is made, make the next child's or
    /// exchange.
    fn advance_creation(&mut self, ctx: &mut Ctx, id: SplitId) {
        let env = Env {
            collectives: self.init.collectives,
            k: self.init.spec.k,
            pes: self.layout.pes(),
            me: self.me,
            callback: self.callback(ctx, self.init.entries.create_step),
            // On the simulator only, as the split model charges its local work.
            charge_local: self.init.spec.sim_ns_per_elem.is_some(),
        };
        let proxy = Self::proxy(ctx);
        let mut send = |ctx: &mut Ctx, peer: u32, tag: u32, words: u32| {
            let msg = SorterMsg::CreateExchange {
                id,
                tag,
                words: vec![0; words as usize],
            };
            proxy.send(ctx, peer, msg);
        };
        let run = self
            .splits
            .creating
            .get_mut(&id)
            .expect("a creation under way");
        let done = run
            .advance(ctx, &env, &mut send)
            .unwrap_or_else(|e| panic!("PE {}: {e}", self.me));
        if !done {
            return;
        }
        self.splits.creating.remove(&id);
        let p = self
            .splits
            .parents
            .get_mut(&id.parent)
            .expect("a parent making its children's groups");
        let child = p.children[id.child as usize];
        let section = p.section;
        p.next += 1;
        // Counted where the child starts, as range sections are.
        let group = self.child_section(section, child);
        if let Some(p) = self.splits.parents.get_mut(&id.parent) {
            p.groups[id.child as usize] = group;
        }
        if !self.next_group(ctx, id.parent) {
            self.exchange(ctx, id.parent);
        }
    }
}
