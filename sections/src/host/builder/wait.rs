//! Starts of creations from a parent section this PE has not stored yet: held until
//! its own part of the parent's creation finishes, then run.

use super::creations::HeldStart;
use super::*;

impl Builder {
    /// Hold the start of creation `token` from tree neighbour `from` until section
    /// `id` is stored here.
    pub(super) fn hold(
        &mut self,
        token: u64,
        from: Pe,
        id: SectionId,
        req: Request,
    ) -> Result<(), HostError> {
        // A neighbour in the parent's tree sent it, so this PE is a member and its
        // copy is on the way, unless this PE names the parent and never has: then
        // no copy can ever come.
        // A parent freed here can never come back: a member split or created from it
        // after this PE freed it.
        if self.frees.freed.contains(&id) {
            return Err(HostError::Freed { pe: self.me, id });
        }
        if id.creator == self.me && id.counter >= self.counter {
            return Err(HostError::UnknownParent { pe: self.me, id });
        }
        let held = HeldStart { token, from, req };
        self.creations.waiting.entry(id).or_default().push(held);
        Ok(())
    }

    /// Run the starts that waited for section `id`, now stored here.
    pub(super) fn resume(&mut self, ctx: &mut Ctx, id: SectionId) -> Result<(), HostError> {
        for held in self.creations.waiting.remove(&id).unwrap_or_default() {
            self.on_start(ctx, held.token, Some(held.from), held.req, Vec::new())?;
        }
        Ok(())
    }
}
