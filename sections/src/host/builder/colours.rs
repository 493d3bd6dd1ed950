//! Splits by any `u64` colour ([`Split::any`]). Each PE gives only its own colour;
//! before the split runs, the PEs of its parent find the distinct colours named: a
//! sorted, deduplicated list merged up the parent's tree (k-ary over the world's
//! PEs, or the parent section's own tree) and sent back down. Each PE then numbers
//! its colour by its place in that list (a binary search) and runs the split by
//! colours 0..n-1, so the sections come in ascending colour order on every run. No
//! table is indexed by colour: a PE holds at most the list, whose length is bounded
//! by `MAX_COLOURS` (a list one longer says there were too many).
//!
//! Splits of one parent run in the order each PE called them, so a call made while
//! a search of the same parent is under way waits behind it.

use super::split::{AnyColour, Call};
use super::*;
use crate::host::spec::MAX_COLOURS;

impl AnyColour {
    /// True (and `call` queued) if a search of the call's parent is under way here.
    pub(super) fn waiting(&mut self, call: &Call) -> bool {
        match self.queued.get_mut(&call.split.parent) {
            Some(q) => {
                q.push_back(call.clone());
                true
            }
            None => false,
        }
    }

    /// Whether a call of a split of `parent` waits here.
    pub(super) fn calling(&self, parent: Parent) -> bool {
        self.queued.contains_key(&parent)
    }

    /// Forget the splits of `parent`, freed here.
    pub(super) fn forget(&mut self, parent: Parent) {
        self.queued.remove(&parent);
        self.called.remove(&parent);
        self.searches.retain(|(p, _), _| *p != parent);
    }
}

/// Merge two sorted lists of distinct colours, keeping at most `MAX_COLOURS + 1`.
pub fn merge_colours(a: &[u64], b: &[u64]) -> Vec<u64> {
    let cap = MAX_COLOURS as usize + 1;
    let mut out = Vec::with_capacity((a.len() + b.len()).min(cap));
    let (mut i, mut j) = (0, 0);
    while out.len() < cap && (i < a.len() || j < b.len()) {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                j += usize::from(x == y);
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => break,
        };
        out.push(next);
    }
    out
}

impl Builder {
    /// Start finding the colours of a split by any colour this PE called.
    pub(super) fn find_colours(&mut self, ctx: &mut Ctx, call: Call) -> Result<(), HostError> {
        let parent = call.split.parent;
        let queue = VecDeque::from([call.clone()]);
        self.splits.any.queued.insert(parent, queue);
        self.search(ctx, &call)
    }

    /// Add this PE's colour to the search for `call`, first in its parent's queue.
    fn search(&mut self, ctx: &mut Ctx, call: &Call) -> Result<(), HostError> {
        let parent = call.split.parent;
        let counter = self.splits.any.called.entry(parent).or_insert(0);
        let seq = *counter;
        *counter += 1;
        let own: Vec<u64> = call.split.colour.into_iter().collect();
        let search = self.splits.any.searches.entry((parent, seq)).or_default();
        search.colours = merge_colours(&search.colours, &own);
        search.k = Some(call.split.k);
        self.colours_step(ctx, parent, seq)
    }

    /// A child's subtree's colours.
    pub(super) fn on_colours_up(
        &mut self,
        ctx: &mut Ctx,
        parent: Parent,
        seq: u64,
        colours: Vec<u64>,
    ) -> Result<(), HostError> {
        let search = self.splits.any.searches.entry((parent, seq)).or_default();
        search.colours = merge_colours(&search.colours, &colours);
        search.reports += 1;
        self.colours_step(ctx, parent, seq)
    }

    /// Every colour of the split, from the tree parent.
    pub(super) fn on_colours_down(
        &mut self,
        ctx: &mut Ctx,
        parent: Parent,
        seq: u64,
        colours: Vec<u64>,
    ) -> Result<(), HostError> {
        let k = self.splits.any.queued.get(&parent).and_then(|q| q.front());
        let Some(k) = k.map(|c| c.split.k) else {
            return Err(HostError::BadColours(format!(
                "PE {}: the colours of split {seq} of {parent:?} came before its call",
                self.me
            )));
        };
        self.found(ctx, parent, seq, colours, k)
    }

    /// Send this PE's part up once it called and every child reported; at the root,
    /// the search is over.
    fn colours_step(&mut self, ctx: &mut Ctx, parent: Parent, seq: u64) -> Result<(), HostError> {
        let Some(search) = self.splits.any.searches.get(&(parent, seq)) else {
            return Ok(());
        };
        let Some(k) = search.k else { return Ok(()) };
        let (up, down) = self.colour_tree(parent, k)?;
        if search.reports < down.len() {
            return Ok(());
        }
        let Some(search) = self.splits.any.searches.remove(&(parent, seq)) else {
            return Ok(());
        };
        match up {
            Some(up) => {
                let colours = search.colours;
                let msg = SplitMsg::ColoursUp {
                    parent,
                    seq,
                    colours,
                };
                self.send(ctx, up, msg);
                Ok(())
            }
            None => self.found(ctx, parent, seq, search.colours, k),
        }
    }

    /// The tree the search runs over: this PE's parent and children in it.
    fn colour_tree(&self, parent: Parent, k: u32) -> Result<(Option<Pe>, Vec<Pe>), HostError> {
        Ok(match parent {
            Parent::World => (
                kary::parent(self.me, k),
                kary::children(self.me, self.npes, k).collect(),
            ),
            Parent::Section(id) => {
                let s = self.view(id)?;
                (s.parent, s.children)
            }
        })
    }

    /// The split's colours are known here: pass them down, number this PE's colour,
    /// and run the split and the calls that waited behind it.
    fn found(
        &mut self,
        ctx: &mut Ctx,
        parent: Parent,
        seq: u64,
        colours: Vec<u64>,
        k: u32,
    ) -> Result<(), HostError> {
        let (_, down) = self.colour_tree(parent, k)?;
        for child in down {
            let colours = colours.clone();
            let msg = SplitMsg::ColoursDown {
                parent,
                seq,
                colours,
            };
            self.send(ctx, child, msg);
        }
        let mut queue = self.splits.any.queued.remove(&parent).unwrap_or_default();
        let Some(Call {
            split,
            on_member,
            then,
        }) = queue.pop_front()
        else {
            return Ok(());
        };
        if colours.len() > MAX_COLOURS as usize {
            return Err(HostError::BadColours(format!(
                "more than {MAX_COLOURS} distinct colours in a split by any colour"
            )));
        }
        let colour = split
            .colour
            .and_then(|c| colours.binary_search(&c).ok())
            .map(|i| i as u64);
        let split = Split {
            any: false,
            colours: colours.len().max(1) as u32,
            colour,
            ..split
        };
        let call = Call {
            split,
            on_member,
            then,
        };
        self.run_split(ctx, call)?;
        while let Some(call) = queue.pop_front() {
            if call.split.any {
                let mut rest = VecDeque::from([call.clone()]);
                rest.extend(queue);
                self.splits.any.queued.insert(parent, rest);
                return self.search(ctx, &call);
            }
            self.run_split(ctx, call)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merging_is_the_sorted_distinct_union(a in proptest::collection::vec(any::<u64>(), 0..40), b in proptest::collection::vec(0u64..50, 0..40)) {
            let sorted = |v: &[u64]| { let mut v = v.to_vec(); v.sort_unstable(); v.dedup(); v };
            let (sa, sb) = (sorted(&a), sorted(&b));
            let mut want = sorted(&[a.clone(), b.clone()].concat());
            want.truncate(MAX_COLOURS as usize + 1);
            prop_assert_eq!(merge_colours(&sa, &sb), want);
        }
    }

    #[test]
    fn the_merge_keeps_one_more_than_the_most_colours() {
        let a: Vec<u64> = (0..u64::from(MAX_COLOURS)).map(|c| c * 2).collect();
        let b: Vec<u64> = (0..u64::from(MAX_COLOURS)).map(|c| c * 2 + 1).collect();
        let m = merge_colours(&a, &b);
        assert_eq!(m.len(), MAX_COLOURS as usize + 1);
        assert_eq!(&m[..4], &[0, 1, 2, 3]);
    }
}
