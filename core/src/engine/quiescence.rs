//! Quiescence detection by Mattern's four-counter method over the PE tree.
//!
//! Every counted message increments `sent` at its sender and `processed` at its
//! receiver. A wave collects the sums of both over all PEs, each PE reporting when it
//! is idle; the job is quiescent when two consecutive waves see equal sums and
//! sent == processed. Counters only grow, so equal sums mean no PE sent or processed
//! anything between the waves. Waves themselves are not counted.
//!
//! The same waves find a stalled job: the root, idle for long, probes with waves of
//! its own. Quiescence that nobody asked for means nothing will ever run again and no
//! PE saw an exit: the job would wait forever.

use super::{Origin, PeRuntime};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::callback::Callback;
use crate::msg::envelope::Envelope;
use crate::msg::kind::quiescence::{Orphans, QdMsg, QdReply, QdRequest, QdWave};
use crate::msg::reduction::RedData;

/// A quiescence reply that no wave of this PE waits for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QdError {
    /// A reply from a PE that is not a child still owing one in this wave (a
    /// duplicate once underflowed the count of children left).
    #[error("quiescence reply for wave {wave} from PE {from}, which owes this PE none")]
    UnexpectedReply { wave: u64, from: Pe },
    /// The subtree sums overflow 64 bits.
    #[error("quiescence reply for wave {wave} from PE {from} overflows the counters")]
    Overflow { wave: u64, from: Pe },
}

/// What the PE must do after a quiescence event.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Nothing,
    /// Send this subtree's sums to the parent.
    Reply {
        wave: u64,
        sent: u64,
        processed: u64,
    },
    /// The root found quiescence: fire these callbacks.
    Quiescent(Vec<Callback>),
    /// The root's probe found quiescence nobody asked for: the job is stalled.
    Stalled,
    /// The root must start another wave.
    AnotherWave,
}

#[derive(Debug)]
struct Wave {
    id: u64,
    snapshot: Option<(u64, u64)>,
    /// Children that have not replied yet.
    waiting: Vec<Pe>,
    sum: (u64, u64),
}

/// This PE's part in quiescence detection.
#[derive(Debug, Default)]
pub(crate) struct Quiescence {
    /// Callbacks waiting for quiescence (root only).
    requests: Vec<Callback>,
    wave: Option<Wave>,
    next_wave: u64,
    /// Sums of the previous completed wave (root only).
    previous: Option<(u64, u64)>,
    waves_run: u64,
    /// Set while the root probes for a stall (waves nobody requested).
    probing: bool,
}

impl Quiescence {
    /// A request reached the root; true if a wave must be started.
    pub(crate) fn request(&mut self, cb: Callback) -> bool {
        self.requests.push(cb);
        self.wave.is_none() && self.requests.len() == 1
    }

    /// The root has been idle for long: true if it is to start a probe's wave (none
    /// runs, and no request waits, whose waves would find the same).
    pub(crate) fn probe(&mut self) -> bool {
        if self.wave.is_some() || !self.requests.is_empty() || self.probing {
            return false;
        }
        self.probing = true;
        self.previous = None;
        true
    }

    /// The root starts a new wave; returns its id.
    pub(crate) fn begin_wave(&mut self) -> u64 {
        self.next_wave += 1;
        self.waves_run += 1;
        self.next_wave
    }

    /// This PE takes part in wave `id`, expecting a reply from each of `children`.
    pub(crate) fn join_wave(&mut self, id: u64, children: Vec<Pe>) {
        self.wave = Some(Wave {
            id,
            snapshot: None,
            waiting: children,
            sum: (0, 0),
        });
    }

    /// The PE is idle with these counters.
    pub(crate) fn on_idle(&mut self, counters: (u64, u64), root: bool) -> Outcome {
        match &mut self.wave {
            Some(w) if w.snapshot.is_none() => {
                w.snapshot = Some(counters);
                self.finish_if_complete(root)
            }
            _ => Outcome::Nothing,
        }
    }

    /// Child `from` reported its subtree's sums. A reply for a wave that is over is
    /// ignored (waves are not counted); one from a PE that owes none is an error.
    pub(crate) fn child_reply(
        &mut self,
        id: u64,
        from: Pe,
        sent: u64,
        processed: u64,
        root: bool,
    ) -> Result<Outcome, QdError> {
        let Some(w) = self.wave.as_mut().filter(|w| w.id == id) else {
            return Ok(Outcome::Nothing);
        };
        let Some(at) = w.waiting.iter().position(|&c| c == from) else {
            return Err(QdError::UnexpectedReply { wave: id, from });
        };
        let (Some(s), Some(p)) = (w.sum.0.checked_add(sent), w.sum.1.checked_add(processed)) else {
            return Err(QdError::Overflow { wave: id, from });
        };
        w.waiting.swap_remove(at);
        w.sum = (s, p);
        Ok(self.finish_if_complete(root))
    }

    fn finish_if_complete(&mut self, root: bool) -> Outcome {
        let Some(w) = &self.wave else {
            return Outcome::Nothing;
        };
        let Some(snap) = w.snapshot else {
            return Outcome::Nothing;
        };
        if !w.waiting.is_empty() {
            return Outcome::Nothing;
        }
        let total = (
            snap.0.saturating_add(w.sum.0),
            snap.1.saturating_add(w.sum.1),
        );
        let id = w.id;
        self.wave = None;
        if !root {
            return Outcome::Reply {
                wave: id,
                sent: total.0,
                processed: total.1,
            };
        }
        if total.0 == total.1 && self.previous == Some(total) {
            self.previous = None;
            let probed = std::mem::take(&mut self.probing);
            if probed && self.requests.is_empty() {
                return Outcome::Stalled;
            }
            Outcome::Quiescent(std::mem::take(&mut self.requests))
        } else if self.probing && self.requests.is_empty() && self.previous.is_some() {
            // Something ran or travelled between the probe's waves: not stalled. The
            // next long idle spell probes again.
            self.previous = None;
            self.probing = false;
            Outcome::Nothing
        } else {
            self.previous = Some(total);
            Outcome::AnotherWave
        }
    }

    /// Waves this PE started (root only), for statistics.
    pub(crate) fn waves_run(&self) -> u64 {
        self.waves_run
    }
}

/// The handlers of quiescence detection's messages (`msg/kind/quiescence.rs`).
impl PeRuntime {
    /// Count a message about to run as processed, and owe its sender credit.
    pub(super) fn count_processed(&mut self, env: &Envelope) {
        if env.counted {
            self.core.ledger.processed(env.weight());
            self.credit_handled(env);
        }
    }

    /// Run a quiescence message.
    pub(super) fn on_quiescence(&mut self, m: QdMsg, from: Origin) {
        match m {
            QdMsg::QdRequest(QdRequest { callback }) => {
                if self.core.qd.get_mut().request(callback) {
                    self.start_wave();
                }
            }
            QdMsg::QdWave(QdWave { wave }) => self.pass_wave(wave),
            QdMsg::QdReply(r) => self.on_reply(r, from.src),
            QdMsg::Orphans(Orphans { root }) => self.report_orphans(root),
        }
    }

    /// The root starts a wave down the PE tree.
    pub(super) fn start_wave(&mut self) {
        let wave = self.core.qd.get_mut().begin_wave();
        self.pass_wave(wave);
    }

    /// Take part in wave `wave`: pass it to this PE's children and wait for them.
    fn pass_wave(&mut self, wave: u64) {
        let children: Vec<Pe> = self.core.tree_children().collect();
        for &c in &children {
            self.core.uncounted(c, QdWave { wave });
        }
        self.core.qd.get_mut().join_wave(wave, children);
    }

    /// A child's sums for a wave.
    fn on_reply(&mut self, r: QdReply, src: Pe) {
        let parent = self.core.tree_parent();
        let out =
            self.core
                .qd
                .get_mut()
                .child_reply(r.wave, src, r.sent, r.processed, parent.is_none());
        match out {
            Ok(out) => self.qd_outcome(out, parent),
            Err(e) => {
                let pe = self.core.me;
                let what = e.to_string();
                self.core.fail(RuntimeError::BadInput { pe, what });
            }
        }
    }

    /// Do what a step of detection says: reply up, fire callbacks, wave again.
    pub(super) fn qd_outcome(&mut self, out: Outcome, parent: Option<Pe>) {
        match out {
            Outcome::Nothing => {}
            Outcome::Reply {
                wave,
                sent,
                processed,
            } => {
                if let Some(p) = parent {
                    let reply = QdReply {
                        wave,
                        sent,
                        processed,
                    };
                    self.core.uncounted(p, reply);
                }
            }
            Outcome::Quiescent(callbacks) => {
                self.report_orphans(self.core.me);
                if callbacks.iter().any(|cb| matches!(cb, Callback::Exit)) {
                    // What is unfinished now can never finish: the end of the run
                    // reports it (`RunReport::unfinished_collectives`).
                    self.core.report.get_mut().exit_at_quiescence = true;
                }
                for cb in self.checkpoint_at_quiescence(callbacks) {
                    self.core.fire(&cb, RedData::List(Vec::new()));
                }
            }
            Outcome::AnotherWave => self.start_wave(),
            Outcome::Stalled => self.core.abort(RuntimeError::Stalled(
                "every PE waits for a message and none is on its way, and no PE saw an exit; \
                 end the program with ctx.exit(), ctx.exit_on_quiescence() or Callback::Exit"
                    .into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One wave of a root with no children that is idle with `counters`.
    fn lone_root_wave(q: &mut Quiescence, counters: (u64, u64)) -> Outcome {
        let w = q.begin_wave();
        q.join_wave(w, vec![]);
        q.on_idle(counters, true)
    }

    #[test]
    fn needs_two_equal_waves() {
        let mut q = Quiescence::default();
        assert!(q.request(Callback::Exit));
        assert_eq!(lone_root_wave(&mut q, (5, 5)), Outcome::AnotherWave);
        assert_eq!(
            lone_root_wave(&mut q, (5, 5)),
            Outcome::Quiescent(vec![Callback::Exit])
        );
    }

    #[test]
    fn activity_between_waves_defers_detection() {
        let mut q = Quiescence::default();
        q.request(Callback::Exit);
        let w = q.begin_wave();
        q.join_wave(w, vec![7]);
        assert_eq!(q.on_idle((3, 3), true), Outcome::Nothing);
        assert_eq!(
            q.child_reply(w, 7, 2, 2, true).expect("a child's reply"),
            Outcome::AnotherWave
        );
        let w = q.begin_wave();
        q.join_wave(w, vec![7]);
        q.on_idle((4, 4), true);
        assert_eq!(
            q.child_reply(w, 7, 2, 2, true).expect("a child's reply"),
            Outcome::AnotherWave
        );
        let w = q.begin_wave();
        q.join_wave(w, vec![7]);
        q.on_idle((4, 4), true);
        assert_eq!(
            q.child_reply(w, 7, 2, 2, true).expect("a child's reply"),
            Outcome::Quiescent(vec![Callback::Exit])
        );
    }

    #[test]
    fn a_probe_finds_a_stall_only_in_quiescence_nobody_asked_for() {
        let mut q = Quiescence::default();
        assert!(q.probe());
        assert!(!q.probe(), "one probe at a time");
        assert_eq!(lone_root_wave(&mut q, (5, 5)), Outcome::AnotherWave);
        assert_eq!(lone_root_wave(&mut q, (5, 5)), Outcome::Stalled);

        assert!(q.probe());
        assert_eq!(lone_root_wave(&mut q, (6, 6)), Outcome::AnotherWave);
        assert_eq!(
            lone_root_wave(&mut q, (7, 7)),
            Outcome::Nothing,
            "activity ends it"
        );

        assert!(q.probe());
        let w = q.begin_wave();
        q.join_wave(w, vec![]);
        assert!(!q.request(Callback::Exit), "the probe's waves serve it");
        assert_eq!(q.on_idle((7, 7), true), Outcome::AnotherWave);
        assert_eq!(
            lone_root_wave(&mut q, (7, 7)),
            Outcome::Quiescent(vec![Callback::Exit])
        );
    }

    #[test]
    fn unequal_counts_are_never_quiescent() {
        let mut q = Quiescence::default();
        q.request(Callback::Exit);
        for _ in 0..3 {
            assert_eq!(lone_root_wave(&mut q, (6, 5)), Outcome::AnotherWave);
        }
    }

    #[test]
    fn a_duplicate_or_stray_reply_is_an_error_not_an_underflow() {
        let mut q = Quiescence::default();
        q.request(Callback::Exit);
        let w = q.begin_wave();
        q.join_wave(w, vec![7]);
        assert_eq!(q.child_reply(w, 7, 1, 1, true), Ok(Outcome::Nothing));
        assert_eq!(
            q.child_reply(w, 7, 1, 1, true),
            Err(QdError::UnexpectedReply { wave: w, from: 7 })
        );
        assert_eq!(
            q.child_reply(w, 9, 1, 1, true),
            Err(QdError::UnexpectedReply { wave: w, from: 9 })
        );
        let w = q.begin_wave();
        q.join_wave(w, vec![7, 8]);
        q.child_reply(w, 7, u64::MAX, 0, true).expect("first reply");
        assert_eq!(
            q.child_reply(w, 8, 1, 0, true),
            Err(QdError::Overflow { wave: w, from: 8 })
        );
    }
}
