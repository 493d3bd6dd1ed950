//! Shrink-and-Balance (langer, section V): the upward pass shrinks the parent's tree
//! to a tree of members (child-as-filler or leaf-as-filler, [`crate::creation::shrink`]); the
//! downward pass then moves vertices between subtrees until the tree is balanced.
//!
//! The downward pass is the paper's supplier/consumer matchmaking (Algorithm 1) with
//! one change: a child slot's capacity is the exact size of that subtree in the
//! balanced k-ary tree of m ranks, not the paper's maximum (equation 7). The result
//! is then the standard k-ary tree (rank r's parent (r-1)/k) of ideal height
//! d_{m,k}, so it is a [`crate::section::Section`] like every other algorithm's and
//! the collectives run on it unchanged; the paper's own shape (height d_{m,k} but
//! any subtree sizes) has no rank formula and would need one.
//!
//! A vertex holding rank r sees its pieces: the subtrees of the shrunk tree below it,
//! subtrees handed to it in its placement (`extras`) and subtrees given to it by
//! suppliers elsewhere (`Give`). It picks one piece as root of each child slot, fills
//! the slots with the rest, and where a piece does not fit, asks its root to export
//! the excess (`Export`, the paper's vertex request) straight to the slot roots that
//! lack vertices; those wait for exactly that many vertices before balancing their
//! own subtrees. An exporting vertex hands over whole subtrees where they fit and
//! passes the remainder of a request down to one subtree's root. When a vertex has
//! fewer pieces than slots it asks pieces for single vertices (to itself) first.
//! Ranks are the positions in the k-ary tree the pass builds; a member's parent and
//! children are known from the pass itself, so no neighbour discovery follows.

use crate::creation::protocol::{words, Filler, Outbox, Protocol, ProtocolError, Setup, Wire};
use crate::creation::shrink::{Child, Shrink, ShrinkMsg};
use crate::kary;
use crate::section::Placement;
use serde::{Deserialize, Serialize};

/// A subtree of members that moves as a whole, named by its root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    /// Its root.
    pub root: u32,
    /// Its members, after the exports already asked of it.
    pub size: u32,
    /// Relocation messages its root receives in the upward pass.
    pub relocations: u32,
    /// Leaf-filler victims taken out of it, told to its root with every message.
    pub victims: Vec<u32>,
    /// Export messages its root has been sent.
    pub exports: u32,
}

impl From<Child> for Piece {
    fn from(c: Child) -> Self {
        Piece {
            root: c.root,
            size: c.size,
            relocations: c.relocations,
            victims: c.victims,
            exports: 0,
        }
    }
}

/// Messages of Shrink-and-Balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Upward pass.
    Shrink(ShrinkMsg),
    /// Take `rank` of `m` under `parent` once `exports` export requests are done and
    /// `awaited` vertices have been given to you; first export `moves`.
    Place {
        /// The receiver's rank in the new section.
        rank: u32,
        /// The number of members of the new section.
        m: u32,
        /// The creation's token.
        token: u64,
        /// The id of the receiver's parent in the new tree, None at rank 0.
        parent: Option<u32>,
        /// Relocation messages the receiver gets in the upward pass.
        relocations: u32,
        /// Leaf-filler victims taken out of the receiver's subtree.
        victims: Vec<u32>,
        /// Export requests the receiver has been sent.
        exports: u32,
        /// (consumer id, count) pairs: the vertices the receiver exports first.
        moves: Vec<(u32, u32)>,
        /// Subtrees handed to the receiver with its placement.
        extras: Vec<Piece>,
        /// Vertices suppliers elsewhere will give the receiver.
        awaited: u32,
    },
    /// Give away, for each (consumer, count), that many vertices below you.
    Export {
        /// Relocation messages the receiver gets in the upward pass.
        relocations: u32,
        /// Leaf-filler victims taken out of the receiver's subtree.
        victims: Vec<u32>,
        /// (consumer id, count) pairs: the vertices to give each consumer.
        moves: Vec<(u32, u32)>,
    },
    /// Subtrees handed to a consumer.
    Give(Vec<Piece>),
}

/// Where a member is to go, from its Place.
#[derive(Debug, Clone)]
struct Slot {
    rank: u32,
    m: u32,
    token: u64,
    parent: Option<u32>,
    exports: u32,
    awaited: u32,
}

/// One PE's Shrink-and-Balance state.
#[derive(Debug, Clone)]
pub struct ShrinkAndBalance {
    setup: Setup,
    shrink: Shrink,
    started_down: bool,
    held: Vec<(u32, Msg)>,
    own: Option<Vec<Piece>>,
    victims: Vec<u32>,
    given: Vec<Piece>,
    got: u32,
    asked: u32,
    exports_done: u32,
    slot: Option<Slot>,
    placement: Option<Placement>,
    peak: usize,
}

fn pieces_bytes(p: &[Piece]) -> usize {
    p.iter().map(|p| words(4 + p.victims.len(), 1)).sum()
}

/// Largest first, ties by id, so every schedule sorts alike.
fn sort_desc(p: &mut [Piece]) {
    p.sort_by_key(|p| (std::cmp::Reverse(p.size), p.root));
}

impl ShrinkAndBalance {
    /// The state of the PE `setup` describes, with the given upward-pass filler.
    pub fn new(setup: Setup, filler: Filler) -> Result<Self, ProtocolError> {
        if filler == Filler::None {
            return Err(ProtocolError::Setup(
                "shrink-and-balance needs a filler: the balancing pass moves members only".into(),
            ));
        }
        Ok(ShrinkAndBalance {
            shrink: Shrink::new(&setup, filler),
            setup,
            started_down: false,
            held: Vec::new(),
            own: None,
            victims: Vec::new(),
            given: Vec::new(),
            got: 0,
            asked: 0,
            exports_done: 0,
            slot: None,
            placement: None,
            peak: 0,
        })
    }

    fn inconsistent(&self, detail: String) -> ProtocolError {
        ProtocolError::Inconsistent {
            me: self.setup.me,
            detail,
        }
    }

    fn state_bytes(&self) -> usize {
        let held: usize = self
            .held
            .iter()
            .map(|(_, m)| match m {
                Msg::Place { extras, .. } => words(12, 1) + pieces_bytes(extras),
                Msg::Export { moves, .. } => words(2 + 2 * moves.len(), 1),
                _ => 0,
            })
            .sum();
        self.shrink.state_bytes()
            + held
            + self.own.as_deref().map_or(0, pieces_bytes)
            + pieces_bytes(&self.given)
            + words(12 + self.victims.len(), 1)
    }

    /// At the parent's root, once the upward pass is over: place the shrunk tree's root.
    fn after_upward(&mut self, out: &mut Outbox<Msg>) {
        let Some(Some(tree)) = self.shrink.result() else {
            return;
        };
        if self.started_down {
            return;
        }
        self.started_down = true;
        let place = Msg::Place {
            rank: 0,
            m: tree.size,
            token: self.setup.token,
            parent: None,
            relocations: tree.relocations,
            victims: Vec::new(),
            exports: 0,
            moves: Vec::new(),
            extras: Vec::new(),
            awaited: 0,
        };
        if tree.root == self.setup.me {
            self.held.push((self.setup.me, place));
        } else {
            out.push((tree.root, Wire::Role(place)));
        }
    }

    /// Handle held placements and export requests once the upward pass is over here.
    fn progress(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        loop {
            let ready = |rel: u32, s: &Self| s.shrink.reported() && s.shrink.relocations() >= rel;
            let at = self.held.iter().position(|(_, m)| match m {
                Msg::Place { relocations, .. } | Msg::Export { relocations, .. } => {
                    ready(*relocations, self)
                }
                _ => false,
            });
            let Some(at) = at else { break };
            let (from, msg) = self.held.remove(at);
            self.peak = self.peak.max(self.state_bytes());
            match msg {
                Msg::Place {
                    rank,
                    m,
                    token,
                    parent,
                    victims,
                    exports,
                    moves,
                    extras,
                    awaited,
                    ..
                } => {
                    if self.slot.is_some() {
                        return Err(ProtocolError::Unexpected {
                            me: self.setup.me,
                            from,
                            what: "second placement",
                        });
                    }
                    self.take_own(&victims)?;
                    self.export(&moves, out)?;
                    // Extras count as given vertices that are already here.
                    let here: u32 = extras.iter().map(|p| p.size).sum();
                    self.got += here;
                    self.given.extend(extras);
                    self.slot = Some(Slot {
                        rank,
                        m,
                        token,
                        parent,
                        exports,
                        awaited: awaited + here,
                    });
                }
                Msg::Export { victims, moves, .. } => {
                    self.take_own(&victims)?;
                    self.export(&moves, out)?;
                    self.exports_done += 1;
                }
                _ => unreachable!("only placements and exports are held"),
            }
        }
        self.try_balance(out)
    }

    /// Take this vertex's subtrees from the upward pass, after applying the victims
    /// every downward message to it carries (the same list in each: it is fixed when
    /// the vertex's old parent takes its own subtrees).
    fn take_own(&mut self, victims: &[u32]) -> Result<(), ProtocolError> {
        match &self.own {
            None => {
                self.shrink.apply_victims(victims)?;
                self.victims = victims.to_vec();
                self.own = Some(
                    self.shrink
                        .take_children()
                        .into_iter()
                        .map(Piece::from)
                        .collect(),
                );
            }
            Some(_) if victims != self.victims.as_slice() => {
                return Err(
                    self.inconsistent(format!("victims {victims:?} after {:?}", self.victims))
                );
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Hand over, to each consumer, that many vertices of the own subtrees: whole
    /// subtrees where they fit, the rest asked of one larger subtree's root.
    fn export(&mut self, moves: &[(u32, u32)], out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let me = self.setup.me;
        let own = self.own.as_mut().expect("taken before exporting");
        for &(to, count) in moves {
            let mut need = count;
            let mut give = Vec::new();
            while need > 0 {
                sort_desc(own);
                if let Some(i) = own.iter().position(|p| p.size <= need) {
                    let p = own.remove(i);
                    need -= p.size;
                    give.push(p);
                } else if let Some(p) = own.last_mut() {
                    out.push((
                        p.root,
                        Wire::Role(Msg::Export {
                            relocations: p.relocations,
                            victims: p.victims.clone(),
                            moves: vec![(to, need)],
                        }),
                    ));
                    p.size -= need;
                    p.exports += 1;
                    need = 0;
                } else {
                    return Err(ProtocolError::Inconsistent {
                        me,
                        detail: format!("asked to export {count} to {to} with nothing below"),
                    });
                }
            }
            if !give.is_empty() {
                out.push((to, Wire::Role(Msg::Give(give))));
            }
        }
        Ok(())
    }

    /// Once everything this vertex waits for is here: pick a root for each child
    /// slot, fill the slots, and send the placements.
    fn try_balance(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let Some(slot) = self.slot.clone() else {
            return Ok(());
        };
        if self.placement.is_some()
            || self.exports_done < slot.exports
            || self.got < slot.awaited + self.asked
        {
            return Ok(());
        }
        let k = self.setup.k;
        let (r, m) = (slot.rank, slot.m);
        let caps: Vec<u32> = kary::children(r, m, k)
            .map(|c| kary::subtree_size(c, m, k))
            .collect();
        let pieces = self.gathered(&slot, &caps)?;
        if pieces.len() < caps.len() {
            self.ask_for_singles(pieces, caps.len(), out);
            return Ok(());
        }
        let mut fitting = self.fit(pieces, &caps)?;
        let spread = fitting.spread_excess(out);
        if fitting.rem.iter().any(|&x| x > 0) {
            let rem = &fitting.rem;
            return Err(self.inconsistent(format!("rank {r}: slots left short {rem:?}")));
        }
        self.place_children(&slot, fitting, spread, out);
        Ok(())
    }

    /// Every piece below this slot, largest first, checked against the room below it.
    fn gathered(&mut self, slot: &Slot, caps: &[u32]) -> Result<Vec<Piece>, ProtocolError> {
        let mut pieces: Vec<Piece> = self.own.take().unwrap_or_default();
        pieces.append(&mut self.given);
        let total: u32 = pieces.iter().map(|p| p.size).sum();
        let want: u32 = caps.iter().sum();
        if total != want {
            let (r, m) = (slot.rank, slot.m);
            return Err(self.inconsistent(format!(
                "rank {r} of {m}: {total} vertices below for a subtree of {want} below"
            )));
        }
        sort_desc(&mut pieces);
        Ok(pieces)
    }

    /// Too few subtrees to root every one of `slots` slots: ask the largest for
    /// single vertices, and wait for them.
    fn ask_for_singles(&mut self, mut pieces: Vec<Piece>, slots: usize, out: &mut Outbox<Msg>) {
        let mut short = (slots - pieces.len()) as u32;
        for p in pieces.iter_mut() {
            let t = short.min(p.size - 1);
            if t == 0 {
                continue;
            }
            out.push((
                p.root,
                Wire::Role(Msg::Export {
                    relocations: p.relocations,
                    victims: p.victims.clone(),
                    moves: vec![(self.setup.me, 1); t as usize],
                }),
            ));
            p.size -= t;
            p.exports += 1;
            self.asked += t;
            short -= t;
        }
        self.given = pieces;
    }

    /// Root each child slot (room `caps`) at one of the largest pieces and fill it
    /// with the others, best fit first.
    fn fit(&self, mut pieces: Vec<Piece>, caps: &[u32]) -> Result<Fitting, ProtocolError> {
        let n = caps.len();
        let rest = pieces.split_off(n);
        let mut f = Fitting {
            roots: pieces,
            rem: caps.to_vec(),
            extras: vec![Vec::new(); n],
            root_excess: vec![0; n],
            extra_excess: Vec::new(),
        };
        for (i, p) in f.roots.iter_mut().enumerate() {
            let keep = p.size.min(caps[i]);
            f.rem[i] -= keep;
            f.root_excess[i] = p.size - keep;
            p.size = keep;
        }
        for p in rest {
            let rem = &f.rem;
            let fit = (0..n)
                .filter(|&j| rem[j] >= p.size)
                .min_by_key(|&j| (rem[j], j));
            let j = fit.unwrap_or_else(|| (0..n).max_by_key(|&j| (rem[j], n - j)).expect("a slot"));
            let keep = p.size.min(rem[j]);
            if keep == 0 {
                return Err(self.inconsistent(format!("no room for piece {}", p.root)));
            }
            f.rem[j] -= keep;
            if keep < p.size {
                f.extra_excess.push((j, f.extras[j].len(), p.size - keep));
            }
            f.extras[j].push(Piece { size: keep, ..p });
        }
        Ok(f)
    }

    /// Tell each slot root its place, its moves and its extra pieces; this slot is
    /// placed.
    fn place_children(&mut self, slot: &Slot, f: Fitting, spread: Spread, out: &mut Outbox<Msg>) {
        let (k, me) = (self.setup.k, self.setup.me);
        let (r, m) = (slot.rank, slot.m);
        let child_ranks: Vec<u32> = kary::children(r, m, k).collect();
        let root_ids: Vec<u32> = f.roots.iter().map(|p| p.root).collect();
        let Spread {
            mut root_moves,
            awaited,
        } = spread;
        let mut extras = f.extras;
        for (i, p) in f.roots.into_iter().enumerate() {
            let place = Msg::Place {
                rank: child_ranks[i],
                m,
                token: slot.token,
                parent: Some(me),
                relocations: p.relocations,
                victims: p.victims.clone(),
                exports: p.exports,
                moves: std::mem::take(&mut root_moves[i]),
                extras: std::mem::take(&mut extras[i]),
                awaited: awaited[i],
            };
            out.push((p.root, Wire::Role(place)));
        }
        self.placement = Some(Placement {
            token: slot.token,
            rank: r,
            size: m,
            k,
            parent: slot.parent,
            children: root_ids,
        });
    }
}

/// The pieces below a slot fitted into its children's slots.
struct Fitting {
    /// The piece each slot is rooted at, cut to the slot.
    roots: Vec<Piece>,
    /// Room left in each slot.
    rem: Vec<u32>,
    /// The other pieces in each slot, cut to fit.
    extras: Vec<Vec<Piece>>,
    /// Vertices each slot root must export because its subtree overfills the slot.
    root_excess: Vec<u32>,
    /// (slot, index in its extras, vertices) each cut extra piece must export.
    extra_excess: Vec<(usize, usize, u32)>,
}

/// Where the excess goes: each slot root's moves (to PE, vertices) and the
/// vertices each slot awaits.
struct Spread {
    root_moves: Vec<Vec<(u32, u32)>>,
    awaited: Vec<u32>,
}

impl Fitting {
    /// Send every excess to the slots that still lack vertices: slot roots keep
    /// theirs as moves in their place message, extra pieces are asked to export now.
    fn spread_excess(&mut self, out: &mut Outbox<Msg>) -> Spread {
        let n = self.roots.len();
        let mut awaited = vec![0u32; n];
        let mut root_moves: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, moves) in root_moves.iter_mut().enumerate() {
            let excess = self.root_excess[i];
            if excess > 0 {
                *moves = self.take(excess, &mut awaited);
            }
        }
        for (j, at, excess) in std::mem::take(&mut self.extra_excess) {
            let moves = self.take(excess, &mut awaited);
            let p = &mut self.extras[j][at];
            out.push((
                p.root,
                Wire::Role(Msg::Export {
                    relocations: p.relocations,
                    victims: p.victims.clone(),
                    moves,
                }),
            ));
            p.exports += 1;
        }
        Spread {
            root_moves,
            awaited,
        }
    }

    /// Take `excess` vertices into the first slots with room: (slot root, vertices).
    fn take(&mut self, mut excess: u32, awaited: &mut [u32]) -> Vec<(u32, u32)> {
        let mut moves = Vec::new();
        let slots = self.rem.iter_mut().zip(awaited.iter_mut());
        for (j, (room, waits)) in slots.enumerate() {
            if excess == 0 {
                break;
            }
            let t = excess.min(*room);
            if t > 0 {
                *room -= t;
                *waits += t;
                excess -= t;
                moves.push((self.roots[j].root, t));
            }
        }
        moves
    }
}

impl Protocol for ShrinkAndBalance {
    type Msg = Msg;

    fn id(&self) -> u32 {
        self.setup.me
    }

    fn start(&mut self, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        let mut up = Vec::new();
        self.shrink.join(&mut up);
        out.extend(
            up.into_iter()
                .map(|(to, m)| (to, Wire::Role(Msg::Shrink(m)))),
        );
        self.after_upward(out);
        self.progress(out)?;
        self.peak = self.peak.max(self.state_bytes());
        Ok(())
    }

    fn handle(&mut self, from: u32, msg: Msg, out: &mut Outbox<Msg>) -> Result<(), ProtocolError> {
        match msg {
            Msg::Shrink(m) => {
                let mut up = Vec::new();
                self.shrink.handle(from, m, &mut up)?;
                out.extend(
                    up.into_iter()
                        .map(|(to, m)| (to, Wire::Role(Msg::Shrink(m)))),
                );
                self.after_upward(out);
            }
            Msg::Give(pieces) => {
                if !self.setup.member {
                    return Err(ProtocolError::Unexpected {
                        me: self.setup.me,
                        from,
                        what: "subtrees given",
                    });
                }
                self.got += pieces.iter().map(|p| p.size).sum::<u32>();
                self.given.extend(pieces);
            }
            held => {
                if !self.setup.member {
                    return Err(ProtocolError::Unexpected {
                        me: self.setup.me,
                        from,
                        what: "balancing message",
                    });
                }
                self.held.push((from, held));
            }
        }
        self.peak = self.peak.max(self.state_bytes());
        self.progress(out)?;
        self.peak = self.peak.max(self.state_bytes());
        Ok(())
    }

    fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    fn finished(&self) -> bool {
        if !self.shrink.reported() {
            return false;
        }
        if self.setup.tree_parent.is_none() && !self.started_down {
            // The parent's root places the shrunk tree's root, or finds no member.
            return matches!(self.shrink.result(), Some(None));
        }
        !self.setup.member || (self.placement.is_some() && self.held.is_empty())
    }

    fn peak_state_bytes(&self) -> usize {
        self.peak
    }
}

impl ShrinkAndBalance {
    /// The most children this PE had in the shrunk tree, before balancing.
    pub fn degree(&self) -> usize {
        self.shrink.degree()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::creation::driver::{drive, world_setups};
    use crate::section::check;

    #[test]
    fn balances_into_the_kary_tree_on_every_schedule() {
        for filler in [Filler::Child, Filler::Leaf] {
            for (n, k) in [(1u32, 2u32), (2, 2), (40, 3), (100, 2), (150, 4), (64, 16)] {
                for stride in [1u32, 2, 3, 5, 11] {
                    for seed in 0..4u64 {
                        let members: Vec<bool> = (0..n)
                            .map(|i| (i * 7 + seed as u32).is_multiple_of(stride))
                            .collect();
                        let out = drive(
                            world_setups(&members, k, 3, 5),
                            |s| ShrinkAndBalance::new(s, filler).unwrap(),
                            seed,
                        )
                        .unwrap_or_else(|e| panic!("{filler:?} n {n} k {k} /{stride}: {e}"));
                        check(&members, &out.placed, 5, k)
                            .unwrap_or_else(|e| panic!("{filler:?} n {n} k {k} /{stride}: {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_to_run_without_a_filler() {
        let setups = world_setups(&[true], 2, 0, 0);
        assert!(ShrinkAndBalance::new(setups[0].clone(), Filler::None).is_err());
    }
}
