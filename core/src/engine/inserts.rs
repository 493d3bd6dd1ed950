//! The inserts a `done_inserting` recount covers. The recount floods down a tree
//! from the inserting PE while each insert goes straight to its element's home, so
//! a recount can reach a home before an insert it covers: counted without it, the
//! array's reductions would complete without the newcomer's contribution. The
//! inserting PE therefore tells each home how many of its inserts to expect, and
//! a home's recount waits until they have arrived.

use super::{PeCore, PeRuntime};
use crate::base::hash::HashMap;
use crate::base::ids::{CollectionId, Pe};
use crate::base::tree;
use crate::msg::array::ElemAddr;
use crate::msg::kind::create::CreateMsg;
use crate::msg::kind::Kind;
use std::collections::{BTreeMap, VecDeque};

/// One PE's account of the inserts that recounts cover.
#[derive(Default)]
pub(crate) struct InsertBook {
    /// Elements this PE inserted, posted since its last `done_inserting` of their
    /// array was handled: one entry per insert, all taken by that array's next one
    /// (a program that inserts calls it, as Charm++'s `doneInserting`).
    posted: HashMap<CollectionId, Vec<ElemAddr>>,
    /// Inserts that arrived at their home here, by array and inserting PE, that no
    /// recount here has covered yet: one entry per array and inserting PE.
    arrived: HashMap<(CollectionId, Pe), u32>,
    /// Recounts of each array that arrived here and wait for inserts, in arrival
    /// order: the inserting PE and how many of its inserts come here. One entry per
    /// `done_inserting` flood not yet applied here.
    waiting: HashMap<CollectionId, VecDeque<(Pe, u32)>>,
}

impl PeCore {
    /// Note an insert this PE posts (not one it forwards): the next
    /// `done_inserting` of its array tells the element's home to expect it.
    pub(super) fn note_posted(&mut self, kind: &Kind) {
        if let Kind::Create(CreateMsg::Insert(i)) = kind {
            if i.origin == self.me && i.hops == 0 {
                let posted = self
                    .rare
                    .get_mut()
                    .inserts
                    .posted
                    .entry(i.coll)
                    .or_default();
                posted.push(i.addr.clone());
            }
        }
    }

    /// How many of this PE's inserts into `coll` since its last recount went to
    /// each home, taken: what its recount's flood tells the homes to expect.
    fn take_posted(&mut self, coll: CollectionId) -> Vec<(Pe, u32)> {
        let addrs = (self.rare.built_mut())
            .and_then(|r| r.inserts.posted.remove(&coll))
            .unwrap_or_default();
        // The array is known here now (the recount waited for it), so this is each
        // element's home even if its insert went first to the array's creator.
        let mut per_home: BTreeMap<Pe, u32> = BTreeMap::new();
        for home in addrs.iter().filter_map(|addr| self.locate(coll, addr).ok()) {
            *per_home.entry(home).or_default() += 1;
        }
        per_home.into_iter().collect()
    }

    /// Which of `expect` lie in the subtree under `child` of the tree rooted at `root`.
    pub(super) fn expected_below(
        &self,
        expect: &[(Pe, u32)],
        root: Pe,
        child: Pe,
    ) -> Vec<(Pe, u32)> {
        let (npes, k) = (self.npes, self.arity);
        let below = |pe| tree::path_up(pe, root, npes, k).any(|at| at == child);
        expect
            .iter()
            .copied()
            .filter(|&(pe, _)| below(pe))
            .collect()
    }
}

impl PeRuntime {
    /// An insert from PE `origin` arrived at its home here and was handled: run the
    /// recounts of `coll` that waited for it.
    pub(super) fn insert_arrived(&mut self, coll: CollectionId, origin: Pe) {
        *self
            .core
            .rare
            .get_mut()
            .inserts
            .arrived
            .entry((coll, origin))
            .or_default() += 1;
        self.run_recounts(coll);
    }

    /// A `done_inserting` of `coll` from `root` with `expect`, the inserts it covers
    /// per home (empty at the root, which counts its own): pass it on down the tree
    /// rooted at `root`, each child with the homes below it, and count here once
    /// this PE's inserts have arrived.
    pub(super) fn done_inserting(&mut self, coll: CollectionId, root: Pe, expect: Vec<(Pe, u32)>) {
        let me = self.core.me;
        let expect = match root == me {
            true => self.core.take_posted(coll),
            false => expect,
        };
        for ch in tree::children(me, root, self.core.npes, self.core.arity) {
            let below = self.core.expected_below(&expect, root, ch);
            self.core.send_done_inserting(ch, coll, root, below);
        }
        let here: u32 = expect.iter().filter(|e| e.0 == me).map(|e| e.1).sum();
        let book = &mut self.core.rare.get_mut().inserts;
        book.waiting
            .entry(coll)
            .or_default()
            .push_back((root, here));
        self.run_recounts(coll);
    }

    /// Recount `coll` for each waiting `done_inserting` whose inserts have all
    /// arrived, in the order they came.
    fn run_recounts(&mut self, coll: CollectionId) {
        loop {
            let book = &mut self.core.rare.get_mut().inserts;
            let Some(queue) = book.waiting.get_mut(&coll) else {
                return;
            };
            let Some(&(root, n)) = queue.front() else {
                book.waiting.remove(&coll);
                return;
            };
            let got = book.arrived.get(&(coll, root)).copied().unwrap_or(0);
            if got < n {
                return;
            }
            queue.pop_front();
            match got - n {
                0 => book.arrived.remove(&(coll, root)),
                left => book.arrived.insert((coll, root), left),
            };
            self.recount(coll);
        }
    }
}
