//! Ranking a split's new section by (key, PE), over the tree the algorithm made.
//!
//! The algorithms rank members in the order of the parent's tree, but a split
//! promises `MPI_Comm_split`'s order. So each member sends its parent the sorted
//! (key, PE) list of its subtree; the root, holding the section's whole list (O(m)
//! at one PE, as the centralized algorithm's root), gives every member its rank and
//! the PE of its parent in the new balanced tree, down the same tree, each PE
//! passing each child only its subtree's part; then each member tells its new
//! parent it is its child. Every PE holds the PEs of its subtree meanwhile: O(m·depth)
//! over the section, never a list of all members at every PE.

use super::*;
use crate::creation::protocol::fill_slot;

/// A member's (key, PE) in a split by colour and key, ordered by key, then PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Keyed {
    /// The key the member called with.
    pub key: i64,
    /// Its PE.
    pub pe: Pe,
}

/// A member's final rank in a ranked section and the PE of its tree parent.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Placed {
    /// The member's PE.
    pub pe: Pe,
    /// Its rank.
    pub rank: u32,
    /// Its parent's PE (None at the root).
    pub parent: Option<Pe>,
}

/// A child's sorted list of its subtree's members.
#[derive(Debug)]
pub(super) struct SubtreeList {
    /// The child.
    pub(super) from: Pe,
    pub(super) keys: Vec<Keyed>,
}

/// One member's part in ranking one section.
pub(super) struct Ranking {
    /// The section as the algorithm made it.
    made: Section,
    key: i64,
    on_member: Callback,
    /// A reduction to start over the section instead of telling `on_member`.
    then: Option<Box<Then>>,
    /// What to keep for rebuilds, if members keep the section.
    meta: Option<Meta>,
    /// Sorted lists from the children of the made tree, by child.
    lists: Vec<Option<Vec<Keyed>>>,
    /// Sorted PEs of each child's subtree, kept for the way down.
    subtrees: Vec<Vec<Pe>>,
    /// This member's rank and parent PE in the ranked tree, once known.
    mine: Option<(u32, Option<Pe>)>,
    /// (rank, PE) of this member's children in the ranked tree heard so far.
    children: Vec<(u32, Pe)>,
}

impl Builder {
    /// Start ranking the section `made` this PE is a member of.
    pub(super) fn start_ranking(
        &mut self,
        ctx: &mut Ctx,
        made: Section,
        key: i64,
        to: (Callback, Option<Box<Then>>),
        meta: Option<Meta>,
    ) -> Result<(), HostError> {
        let id = made.id;
        let (on_member, then) = to;
        let ranking = Ranking {
            lists: vec![None; made.children.len()],
            subtrees: Vec::new(),
            made,
            key,
            on_member,
            then,
            meta,
            mine: None,
            children: Vec::new(),
        };
        self.splits.rankings.insert(id, Box::new(ranking));
        for list in self.splits.early_ranks.remove(&id).unwrap_or_default() {
            self.take_list(id, list)?;
        }
        self.try_rank_up(ctx, id)
    }

    /// A child's subtree list.
    pub(super) fn on_rank_up(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        list: SubtreeList,
    ) -> Result<(), HostError> {
        if !self.splits.rankings.contains_key(&id) {
            self.splits.early_ranks.entry(id).or_default().push(list);
            return Ok(());
        }
        self.take_list(id, list)?;
        self.try_rank_up(ctx, id)
    }

    fn ranking(&mut self, id: SectionId, what: &'static str) -> Result<&mut Ranking, HostError> {
        let pe = self.me;
        self.splits
            .rankings
            .get_mut(&id)
            .map(|r| &mut **r)
            .ok_or(HostError::UnknownCreation {
                pe,
                token: SectionId::token(id.creator, id.counter),
                what,
            })
    }

    fn take_list(&mut self, id: SectionId, list: SubtreeList) -> Result<(), HostError> {
        let SubtreeList { from, keys } = list;
        let me = self.me;
        let r = self.ranking(id, "subtree list")?;
        if fill_slot(&r.made.children, &mut r.lists, from, keys) {
            Ok(())
        } else {
            Err(unexpected(me, from, id_token(id), "subtree list"))
        }
    }

    /// Once every child's list is in: pass the subtree's list up, or rank at the root.
    fn try_rank_up(&mut self, ctx: &mut Ctx, id: SectionId) -> Result<(), HostError> {
        let me = self.me;
        let r = self.ranking(id, "ranking")?;
        if r.lists.iter().any(Option::is_none) {
            return Ok(());
        }
        let mut keys = vec![Keyed { key: r.key, pe: me }];
        r.subtrees = Vec::with_capacity(r.lists.len());
        for list in r.lists.drain(..).flatten() {
            let mut pes: Vec<Pe> = list.iter().map(|k| k.pe).collect();
            pes.sort_unstable();
            r.subtrees.push(pes);
            keys.extend(list);
        }
        keys.sort_unstable();
        match r.made.parent {
            Some(p) => {
                self.send(ctx, p, SplitMsg::RankUp { id, from: me, keys });
                Ok(())
            }
            None => {
                let k = r.made.k as usize;
                let ranks = (0..keys.len())
                    .map(|i| Placed {
                        pe: keys[i].pe,
                        rank: i as u32,
                        parent: (i > 0).then(|| keys[(i - 1) / k].pe),
                    })
                    .collect();
                self.on_rank_down(ctx, id, ranks)
            }
        }
    }

    /// The ranks of this member's subtree: keep its own, pass the rest down.
    pub(super) fn on_rank_down(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        ranks: Vec<Placed>,
    ) -> Result<(), HostError> {
        let me = self.me;
        let r = self.ranking(id, "ranks")?;
        let mut parts: Vec<Vec<Placed>> = vec![Vec::new(); r.subtrees.len()];
        for placed in ranks {
            if placed.pe == me {
                r.mine = Some((placed.rank, placed.parent));
                continue;
            }
            let pe = placed.pe;
            let child = r.subtrees.iter().position(|s| s.binary_search(&pe).is_ok());
            match child {
                Some(c) => parts[c].push(placed),
                None => return Err(unexpected(me, pe, id_token(id), "rank of a stranger")),
            }
        }
        r.subtrees = Vec::new();
        let mine = r.mine;
        let children = r.made.children.clone();
        for (child, ranks) in children.into_iter().zip(parts) {
            self.send(ctx, child, SplitMsg::RankDown { id, ranks });
        }
        match mine {
            Some((rank, Some(parent))) => {
                let msg = SplitMsg::RankChild { id, rank, pe: me };
                self.send(ctx, parent, msg);
            }
            Some(_) => {}
            None => return Err(unexpected(me, me, id_token(id), "ranks without mine")),
        }
        self.try_ranked(ctx, id)
    }

    /// A member of the ranked tree names this member its parent.
    pub(super) fn on_rank_child(
        &mut self,
        ctx: &mut Ctx,
        id: SectionId,
        rank: u32,
        pe: Pe,
    ) -> Result<(), HostError> {
        self.ranking(id, "child")?.children.push((rank, pe));
        self.try_ranked(ctx, id)
    }

    /// Once this member knows its rank and every child: the section is made here.
    fn try_ranked(&mut self, ctx: &mut Ctx, id: SectionId) -> Result<(), HostError> {
        let r = self.ranking(id, "ranking")?;
        let Some((rank, parent)) = r.mine else {
            return Ok(());
        };
        let (size, k) = (r.made.size, r.made.k);
        if r.children.len() < kary::children(rank, size, k).count() {
            return Ok(());
        }
        let mut r = self.splits.rankings.remove(&id).expect("looked up above");
        r.children.sort_unstable();
        let section = Section {
            id,
            rank,
            size,
            k,
            parent,
            children: r.children.into_iter().map(|(_, pe)| pe).collect(),
        };
        if let Some(meta) = r.meta {
            self.kept.store(section.clone(), meta);
        }
        match r.then {
            Some(then) => {
                let Then {
                    value,
                    reducer,
                    done,
                    collectives,
                } = *then;
                let member = TreeMember::new(section, self.me);
                collectives.reduce(ctx, member, 0, value, reducer, done)?;
                // Nobody else holds the section: free it once the reduction is done here.
                let free = FreeMsg::Free {
                    id,
                    collectives: collectives.group(),
                    on_freed: Callback::Ignore,
                };
                self.send(ctx, self.me, free);
            }
            None => ctx.send_to_callback(&r.on_member, Encoded(section)),
        }
        self.resume(ctx, id)
    }
}

/// The creation token a section's id was made from.
fn id_token(id: SectionId) -> u64 {
    SectionId::token(id.creator, id.counter)
}
