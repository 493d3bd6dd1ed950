//! Creations a PE failure ends: every creation in flight on a PE when it hears of a
//! failure ends there with [`HostError::PeFailed`], and the parent's root reports
//! the failure to the creation's report callback, so the caller can ask again.

use super::*;

/// How many ended creations a PE remembers, to drop their late messages.
const ABORTED_MEMORY: usize = 1024;

/// The last [`ABORTED_MEMORY`] creations ended by a failure on one PE, oldest first.
///
/// A late message of a creation forgotten here is kept as an early message, which
/// only more than this many failed creations in flight at once can cause.
#[derive(Debug, Default)]
pub(super) struct Aborted {
    order: VecDeque<u64>,
    set: BTreeSet<u64>,
}

impl Aborted {
    /// Whether creation `token` ended here by a failure.
    pub(super) fn contains(&self, token: u64) -> bool {
        self.set.contains(&token)
    }

    fn insert(&mut self, token: u64) {
        if self.set.insert(token) {
            self.order.push_back(token);
        }
        while self.order.len() > ABORTED_MEMORY {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

impl Builder {
    /// A PE this one knows failed that a start from the world does not leave out.
    pub(super) fn unknown_failure(&self, req: &Request, dead: &[Pe]) -> Option<Pe> {
        match req.parent {
            Parent::World => self.failed.iter().copied().find(|p| !dead.contains(p)),
            // A member knows only its neighbours of a section: the creations in flight
            // at a failure end (`abort_runs`), later ones run.
            Parent::Section(_) => None,
        }
    }

    /// End creation `token`, which started here after PE `failed` failed.
    pub(super) fn abort_start(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        req: &Request,
        dead: &[Pe],
        failed: Pe,
    ) -> Result<(), HostError> {
        let root = self.parent_tree(req, dead)?.up.is_none();
        self.creations.early.remove(&token);
        let ended = Ended {
            token,
            tag: req.tag,
            algorithm: Some(req.algorithm),
            root,
            on_report: req.on_report.clone(),
        };
        self.end(ctx, ended, failed);
        Ok(())
    }

    /// PE `failed` failed: end every creation in flight here (not merges or
    /// rebuilds, which route around the dead PE).
    pub(super) fn abort_runs(&mut self, ctx: &mut Ctx, failed: Pe) {
        let mut tokens: Vec<u64> = (self.creations.runs.iter())
            .filter(|(_, r)| r.algorithm.is_some())
            .map(|(t, _)| *t)
            .collect();
        tokens.sort_unstable();
        for token in tokens {
            let Some(run) = self.creations.runs.remove(&token) else {
                continue;
            };
            self.creations.early.remove(&token);
            for part in 0..run.parts.len() as u32 {
                self.creations.orphans.remove(&(token, part));
            }
            let ended = Ended {
                token,
                tag: run.meta.tag,
                algorithm: run.algorithm,
                root: run.up.is_none(),
                on_report: run.meta.on_report,
            };
            self.end(ctx, ended, failed);
        }
    }

    /// Remember the ended creation, tell this PE's policy, and at the parent's root
    /// report the failure.
    fn end(&mut self, ctx: &mut Ctx, ended: Ended, failed: Pe) {
        self.creations.aborted.insert(ended.token);
        if ended.root {
            let report = CreationReport {
                tag: ended.tag,
                id: SectionId::from_token(ended.token, 0),
                sections: Vec::new(),
                algorithm: ended.algorithm,
                parent_pes: 0,
                members: 0,
                messages: 0,
                bytes: 0,
                time_us: 0.0,
                join_spread_us: 0.0,
                max_pe_state_bytes: 0,
                phases: Vec::new(),
                failed: Some(failed),
            };
            ctx.send_to_callback(&ended.on_report, Encoded(report));
        }
        let e = HostError::PeFailed {
            pe: self.me,
            token: ended.token,
            tag: ended.tag,
            failed,
        };
        ctx.fail("section builder", e);
    }
}

/// What ending a creation needs of it.
struct Ended {
    token: u64,
    tag: u64,
    algorithm: Option<Algorithm>,
    root: bool,
    on_report: Callback,
}
