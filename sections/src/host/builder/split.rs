//! The splits part of the builder: a PE's own call in a split by colour and key,
//! numbered per parent, matched with the start the parent's root sends, and started
//! by the root; then the ranking of its sections by (key, PE) (`rank.rs`).

use super::rank::{Ranking, SubtreeList};
use super::*;

/// Messages of splits by colour and key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SplitMsg {
    /// From the application to the builder on its own PE: this PE's part in a split
    /// by colour and key; its section goes to `on_member` ([`crate::callback`]).
    Call {
        /// This PE's colour and key, and how to split.
        split: Split,
        /// Where this PE's section goes.
        on_member: Callback,
        /// A reduction over the section to run instead of telling `on_member`.
        then: Option<Box<Then>>,
    },
    /// (key, PE) of every member of a subtree of a split's new section, sorted, up
    /// the tree the algorithm made.
    RankUp {
        /// The new section.
        id: SectionId,
        /// The child that sends it.
        from: Pe,
        /// The subtree's members.
        keys: Vec<Keyed>,
    },
    /// Each member of a subtree's final rank and the PE of its tree parent, down the
    /// tree the algorithm made.
    RankDown {
        /// The new section.
        id: SectionId,
        /// Each member of the receiver's subtree.
        ranks: Vec<Placed>,
    },
    /// The distinct colours named in a subtree of a split by any colour's parent
    /// (sorted, at most `MAX_COLOURS + 1`: more is an error), up the parent's tree.
    ColoursUp {
        /// The split's parent.
        parent: Parent,
        /// Which of the parent's splits by any colour.
        seq: u64,
        /// The subtree's colours.
        colours: Vec<u64>,
    },
    /// Every distinct colour named in the split, down the parent's tree.
    ColoursDown {
        /// The split's parent.
        parent: Parent,
        /// Which of the parent's splits by any colour.
        seq: u64,
        /// The colours, sorted.
        colours: Vec<u64>,
    },
    /// A member tells its parent in the ranked tree that it is its child.
    RankChild {
        /// The new section.
        id: SectionId,
        /// The child's rank.
        rank: u32,
        /// The child's PE.
        pe: Pe,
    },
}

/// This PE's call in a split by colour and key.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) split: Split,
    /// Where this PE's section goes.
    pub(super) on_member: Callback,
    /// What to reduce over the section once it is made (`Sections::split_reduce`).
    pub(super) then: Option<Box<Then>>,
}

/// The start of a split this PE has not called yet.
#[derive(Debug)]
pub(super) struct HeldSplit {
    pub(super) token: u64,
    pub(super) req: Request,
}

/// The splits this PE has called and the rankings of their sections.
// Values boxed: see `Creations`.
#[derive(Default)]
pub(super) struct Splits {
    /// Splits by colour and key this PE has called, per parent: how many. One entry
    /// for the world and one per kept section split, removed when it is freed.
    pub(super) called: HashMap<Parent, u64>,
    /// This PE's calls whose start has not come yet, by (parent, number): removed
    /// when the start comes, so the splits in flight.
    pub(super) calls: HashMap<(Parent, u64), Box<Call>>,
    /// Starts of splits this PE has not called yet, by (parent, number). Removed at
    /// the call, or reported and dropped when this PE frees the parent without
    /// calling, so the splits in flight.
    pub(super) held: HashMap<(Parent, u64), Box<HeldSplit>>,
    /// Sections of splits being ranked by (key, PE) here: removed once ranked
    /// (`try_ranked`), so the splits in flight.
    pub(super) rankings: HashMap<SectionId, Box<Ranking>>,
    /// Subtree lists that came before this PE's own part of the section was made:
    /// removed when its ranking starts, so the splits in flight.
    pub(super) early_ranks: HashMap<SectionId, Vec<SubtreeList>>,
    /// Splits by any colour and the calls behind them (`colours.rs`).
    pub(super) any: AnyColour,
}

/// The searches of this PE and the calls waiting behind them.
#[derive(Default)]
pub(super) struct AnyColour {
    /// Per parent: the split by any colour whose colours are being found (first),
    /// then the calls of that parent made since, in call order. Removed when the
    /// queue empties, so it holds the splits in flight.
    pub(super) queued: HashMap<Parent, VecDeque<Call>>,
    /// Splits by any colour this PE has called, per parent: numbers the searches.
    /// One entry per parent split, removed when the parent is freed.
    pub(super) called: HashMap<Parent, u64>,
    /// Searches by (parent, number): colours gathered so far here and how many
    /// children have reported. Removed when this PE's part is sent up (or, at the
    /// root, sent down), so the searches in flight.
    pub(super) searches: HashMap<(Parent, u64), Search>,
}

/// One search on this PE.
#[derive(Default)]
pub(super) struct Search {
    /// The colours of this PE (once it called) and of the children that reported.
    pub(super) colours: Vec<u64>,
    pub(super) reports: usize,
    /// The tree's branching factor, known once this PE has called.
    pub(super) k: Option<u32>,
}

/// A parent's name in a report.
fn parent_name(p: &Parent) -> String {
    match p {
        Parent::World => "the world".to_string(),
        Parent::Section(id) => format!("section {id}"),
    }
}

impl Splits {
    /// The splits here that cannot finish without other PEs' calls, for
    /// `Chare::unfinished`: the same words on every PE for one split and role, sorted.
    pub(super) fn unfinished(&self) -> Vec<String> {
        let held = self.held.keys().map(|(p, seq)| {
            let p = parent_name(p);
            format!("split #{seq} of {p}: started, never called")
        });
        let calls = self.calls.keys().map(|(p, seq)| {
            let p = parent_name(p);
            format!("split #{seq} of {p}: called, its start never came")
        });
        let searches = self.any.searches.keys().map(|(p, seq)| {
            let p = parent_name(p);
            format!("split by any colour #{seq} of {p}: colours never all gathered")
        });
        let rankings =
            (self.rankings.keys()).map(|id| format!("ranking of split section {id}: unfinished"));
        let mut out: Vec<String> = held.chain(calls).chain(searches).chain(rankings).collect();
        out.sort();
        out
    }

    /// Drop the starts of splits of section `id` this PE never called; returns how
    /// many.
    pub(super) fn drop_uncalled(&mut self, id: SectionId) -> usize {
        let parent = Parent::Section(id);
        let before = self.held.len();
        self.held.retain(|(p, _), _| *p != parent);
        self.any.forget(parent);
        before - self.held.len()
    }

    /// Whether a call of a split of section `id` waits for its start.
    pub(super) fn calling(&self, id: SectionId) -> bool {
        let parent = Parent::Section(id);
        self.calls.keys().any(|(p, _)| *p == parent) || self.any.calling(parent)
    }

    /// Forget every split of section `id`, freed here.
    pub(super) fn forget(&mut self, id: SectionId) {
        let parent = Parent::Section(id);
        self.called.remove(&parent);
        self.calls.retain(|(p, _), _| *p != parent);
        self.held.retain(|(p, _), _| *p != parent);
        self.rankings.remove(&id);
        self.early_ranks.remove(&id);
        self.any.forget(parent);
    }
}

impl Builder {
    /// Handle a split message.
    pub(super) fn on_split_msg(&mut self, ctx: &mut Ctx, msg: SplitMsg) -> Result<(), HostError> {
        match msg {
            SplitMsg::Call {
                split,
                on_member,
                then,
            } => self.on_split(
                ctx,
                Call {
                    split,
                    on_member,
                    then,
                },
            ),
            SplitMsg::RankUp { id, from, keys } => {
                self.on_rank_up(ctx, id, SubtreeList { from, keys })
            }
            SplitMsg::RankDown { id, ranks } => self.on_rank_down(ctx, id, ranks),
            SplitMsg::RankChild { id, rank, pe } => self.on_rank_child(ctx, id, rank, pe),
            SplitMsg::ColoursUp {
                parent,
                seq,
                colours,
            } => self.on_colours_up(ctx, parent, seq, colours),
            SplitMsg::ColoursDown {
                parent,
                seq,
                colours,
            } => self.on_colours_down(ctx, parent, seq, colours),
        }
    }

    /// This PE's part in a split: behind a split by any colour of the same parent
    /// whose colours are not found yet, it waits (so splits run in call order);
    /// a split by any colour finds its colours first; else it runs now.
    fn on_split(&mut self, ctx: &mut Ctx, call: Call) -> Result<(), HostError> {
        call.split.validate()?;
        if self.splits.any.waiting(&call) {
            return Ok(());
        }
        if call.split.any {
            return self.find_colours(ctx, call);
        }
        self.run_split(ctx, call)
    }

    /// Run this PE's part in a split by colours 0..n-1: run the split's start if it
    /// came already, and start the split if this PE is the parent's root.
    pub(super) fn run_split(&mut self, ctx: &mut Ctx, call: Call) -> Result<(), HostError> {
        let parent = call.split.parent;
        // The world's root is PE 0; a section's is its member of rank 0.
        let (root, parent_pes) = match parent {
            Parent::World => (self.me == 0, self.npes),
            Parent::Section(id) => {
                let s = self.view(id)?;
                (s.rank == 0, s.size)
            }
        };
        let counter = self.splits.called.entry(parent).or_insert(0);
        let seq = *counter;
        *counter += 1;
        let req = call.split.request(seq, parent_pes);
        match self.splits.held.remove(&(parent, seq)) {
            Some(held) => self.join(ctx, held.token, held.req, Some(call), &[])?,
            None => {
                self.splits.calls.insert((parent, seq), Box::new(call));
            }
        }
        if root {
            self.on_create(ctx, req)?;
        }
        Ok(())
    }
}
