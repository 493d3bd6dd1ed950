//! Credit-based flow control. A PE with too many of its messages unhandled at one
//! other PE holds back its messages to itself (the continuations a producer loop
//! sends itself in a message-driven program) until that PE has handled enough of
//! them. Messages from other PEs are never held, so the credits that release a PE
//! always come: the receiver handles what arrives whatever it holds back itself.
//! The memory a flood takes is then bounded by the window of each sender, not by
//! the length of the flood.

use super::{Origin, PeRuntime};
use crate::base::hash::HashMap;
use crate::base::ids::Pe;
use crate::msg::envelope::{Envelope, Kind};
use crate::msg::kind::flow::{Credit, FlowMsg};
use std::collections::VecDeque;

/// Counted user messages a PE may have unhandled at one other PE before it holds
/// back its messages to itself.
pub(crate) const WINDOW: u64 = 8192;
/// Counted user messages a PE handles from one sender before it returns their
/// credit in one message. Below `WINDOW`, so the credit a receiver still owes when
/// it runs out of work never keeps a sender held.
pub(crate) const CREDIT_BATCH: u64 = 1024;

/// Whether `env` counts against its sender's window (both ends use this rule).
pub(crate) fn windowed(env: &Envelope) -> bool {
    env.counted && matches!(env.kind, Kind::User { .. })
}

/// One PE's windows, credits owed and held messages.
#[derive(Default)]
pub(crate) struct Flow {
    /// Windowed messages sent to each PE and not yet credited back, for PEs with
    /// some: at most one entry per PE of the job.
    unhandled: HashMap<Pe, u64>,
    /// PEs in `unhandled` at `WINDOW` or above (once `recent` is folded in).
    over: usize,
    /// Messages sent to one PE since the last fold into `unhandled`: a stream of
    /// sends to one PE costs an addition each, not a map update.
    recent: Option<(Pe, u64)>,
    /// Windowed messages handled from each PE and not yet credited: at most one
    /// entry per PE of the job.
    owed: HashMap<Pe, u64>,
    /// Messages to itself held while some window is full, in the order sent: what
    /// the handlers of other PEs' messages send this PE meanwhile (its own messages
    /// do not run).
    held: VecDeque<Envelope>,
}

impl Flow {
    /// Windowed messages of `weight` left for PE `to`.
    #[inline]
    pub(crate) fn sent(&mut self, to: Pe, weight: u64) {
        match &mut self.recent {
            Some((pe, n)) if *pe == to => *n += weight,
            _ => {
                self.fold();
                self.recent = Some((to, weight));
            }
        }
    }

    /// Count the recent sends in their PE's window.
    #[inline(never)]
    fn fold(&mut self) {
        let Some((to, weight)) = self.recent.take() else {
            return;
        };
        let n = self.unhandled.entry(to).or_insert(0);
        let was = *n;
        *n += weight;
        if was < WINDOW && *n >= WINDOW {
            self.over += 1;
        }
    }

    /// True while a window is full: messages to itself are held.
    #[inline]
    pub(crate) fn holding(&mut self) -> bool {
        // A stream of messages to itself meets no recent sends: no call at all.
        if self.recent.is_some() {
            self.fold();
        }
        self.over > 0
    }

    /// Hold a message to itself until every window has room.
    pub(crate) fn hold(&mut self, env: Envelope) {
        self.held.push_back(env);
    }

    /// PE `from` handled `n` of this PE's windowed messages; the held messages if
    /// that gave every window room.
    pub(crate) fn credited(&mut self, from: Pe, n: u64) -> Option<VecDeque<Envelope>> {
        self.fold();
        let left = match self.unhandled.get_mut(&from) {
            Some(m) => {
                let was = *m;
                // A forwarded message (a migrated element's) may be credited twice.
                *m = m.saturating_sub(n);
                if was >= WINDOW && *m < WINDOW {
                    self.over -= 1;
                }
                *m
            }
            None => return None,
        };
        if left == 0 {
            self.unhandled.remove(&from);
        }
        (self.over == 0 && !self.held.is_empty()).then(|| std::mem::take(&mut self.held))
    }

    /// A windowed message of `weight` from PE `from` was handled here; the credit
    /// to return to it now, if a batch is full.
    pub(crate) fn handled(&mut self, from: Pe, weight: u64) -> Option<u64> {
        let n = self.owed.entry(from).or_insert(0);
        *n += weight;
        if *n < CREDIT_BATCH {
            return None;
        }
        self.owed.remove(&from)
    }

    /// Drop the held messages (the PE failed); the messages they held.
    pub(crate) fn discard(&mut self) -> u64 {
        self.held.drain(..).map(|e| e.weight()).sum()
    }
}

/// The handlers of flow control (`msg/kind/flow.rs`).
impl PeRuntime {
    /// Owe the sender of `env`, a counted message about to run, its credit; send it
    /// once a batch is owed.
    pub(super) fn credit_handled(&mut self, env: &Envelope) {
        if env.src != self.core.me && windowed(env) {
            if let Some(n) = self.core.flow.get_mut().handled(env.src, env.weight()) {
                self.core.uncounted(env.src, Credit { n });
            }
        }
    }

    /// Run a flow-control message.
    pub(super) fn on_flow(&mut self, m: FlowMsg, from: Origin) {
        match m {
            FlowMsg::Credit(Credit { n }) => {
                self.release_held(from.src, n);
            }
        }
    }

    /// `n` windowed messages sent to `to` are handled (or lost): queue the messages
    /// that releases. True if it released any.
    pub(super) fn release_held(&mut self, to: Pe, n: u64) -> bool {
        let Some(held) = self.core.flow.built_mut().and_then(|f| f.credited(to, n)) else {
            return false;
        };
        for env in held {
            let (prio, exp) = (env.prio, env.expedited);
            self.core.queue.push(env, prio, exp);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::ChareId;
    use crate::msg::envelope::Dest;
    use crate::msg::payload::Payload;

    fn to_self(seq: u32) -> Envelope {
        Envelope {
            src: 0,
            seq,
            prio: 0,
            expedited: false,
            counted: true,
            kind: Kind::User {
                dest: Dest::Chare(ChareId {
                    pe: 0,
                    creator: 0,
                    seq: 0,
                }),
                payload: Payload::new(()),
                hops: 0,
            },
        }
    }

    #[test]
    fn a_full_window_holds_until_credit_gives_it_room() {
        let mut f = Flow::default();
        f.sent(1, WINDOW - 1);
        assert!(!f.holding());
        f.sent(1, 1);
        f.sent(2, WINDOW);
        assert!(f.holding());
        f.hold(to_self(1));
        f.hold(to_self(2));
        assert!(
            f.credited(1, CREDIT_BATCH).is_none(),
            "PE 2's window is still full"
        );
        let back = f.credited(2, 1).expect("every window has room");
        assert_eq!(back.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert!(!f.holding());
        assert!(f.credited(3, 5).is_none(), "credit from a PE owed nothing");
    }

    #[test]
    fn credit_is_returned_per_batch() {
        let mut f = Flow::default();
        let returned: u64 = (0..3 * CREDIT_BATCH + 7)
            .filter_map(|_| f.handled(4, 1))
            .sum();
        assert_eq!(returned, 3 * CREDIT_BATCH);
        assert_eq!(f.owed[&4], 7);
    }
}
