//! The handlers of the end of a job and of a PE (`msg/kind/exit.rs`): an exit
//! passed down the PE trees, a failed PE's notice fired at its subscriber.

use super::{Origin, PeRuntime};
use crate::base::ids::Pe;
use crate::base::tree;
use crate::msg::kind::exit::{Exit, ExitMsg, PeFailed};
use crate::msg::reduction::RedData;

impl PeRuntime {
    /// Run an exit or failure message.
    pub(super) fn on_exit(&mut self, m: ExitMsg, _from: Origin) {
        match m {
            ExitMsg::Exit(exit) => self.exit_here(exit),
            ExitMsg::PeFailed(PeFailed { pe, callback }) => {
                self.core.fire(&callback, RedData::U64(vec![u64::from(pe)]));
            }
        }
    }

    /// Stop at the first exit seen, passing it on.
    fn exit_here(&mut self, exit: Exit) {
        let (me, n, k) = (self.core.me, self.core.npes, self.core.arity);
        let root = exit.root;
        // A PE stops at the first exit it sees, so it passes on only that one.
        // When PEs exit at once from several roots, a PE's parent in one tree
        // may have stopped on another's exit: every PE also passes its exit
        // down PE 0's tree, which PE 0 always starts, so each PE hears of one.
        let mut kids: Vec<Pe> = tree::children(me, root, n, k).collect();
        if root != 0 {
            kids.extend(tree::children(me, 0, n, k).filter(|c| *c != root));
            kids.sort_unstable();
            kids.dedup();
        }
        for c in kids {
            self.core.uncounted(c, exit.clone());
        }
        if let Some(e) = exit.error {
            let report = self.core.report.get_mut();
            if !report.errors.contains(&e) {
                report.record_error(e);
            }
            report.aborted = true;
        }
        self.core.exiting = true;
    }
}
