//! A PE's own call in a split by colour and key: numbered per parent, matched with
//! the start the parent's root sends, and started by the root.

use super::*;

impl Builder {
    /// This PE's part in a split: run the split's start if it came already, and
    /// start the split if this PE is the parent's root.
    pub(super) fn on_split(
        &mut self,
        ctx: &mut Ctx,
        split: Split,
        on_member: Callback,
    ) -> Result<(), HostError> {
        split.validate()?;
        let parent = split.parent;
        // The world's root is PE 0; a section's is its member of rank 0.
        let (root, parent_pes) = match parent {
            Parent::World => (self.me == 0, self.npes),
            Parent::Section(id) => {
                let s = self.view(id)?;
                (s.rank == 0, s.size)
            }
        };
        let counter = self.splits_called.entry(parent).or_insert(0);
        let seq = *counter;
        *counter += 1;
        let req = split.request(seq, parent_pes);
        match self.held_splits.remove(&(parent, seq)) {
            Some(held) => {
                let (token, held) = *held;
                self.join(ctx, token, held, Some((split, on_member)), &[])?
            }
            None => {
                self.calls
                    .insert((parent, seq), Box::new((split, on_member)));
            }
        }
        if root {
            self.on_create(ctx, req)?;
        }
        Ok(())
    }
}
