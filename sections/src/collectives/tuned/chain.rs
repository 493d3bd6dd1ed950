//! A mock-up's state machine: phases run one after the other inside one collective
//! (one sequence number), each an existing collective's machine; the next phase starts
//! from the previous one's result, and a last local step makes the member's result.
//!
//! A message carries its phase in tag bits 24..32 (every collective's own tags stay
//! below 2^24); a message of the next phase that arrives before this member finished
//! the current one waits for it.

use crate::collectives::error::CollectiveError;
use crate::collectives::machine::{Machine, Out, Received, Step, Stepped};
use crate::collectives::topology::Topology;
use chorus_core::RedData;

const PHASE_SHIFT: u32 = 24;
const INNER_MASK: u32 = (1 << PHASE_SHIFT) - 1;

type Then = Box<dyn FnOnce(Option<RedData>) -> Box<dyn Machine> + Send>;
type Finish = Box<dyn FnOnce(Option<RedData>) -> Result<Option<RedData>, CollectiveError> + Send>;

/// One member's run of a chained mock-up.
pub(crate) struct Chain {
    phase: u32,
    current: Box<dyn Machine>,
    then: Vec<Then>,
    finish: Option<Finish>,
    early: Vec<(u32, Received)>,
}

impl Chain {
    /// A chain whose first phase is `first`.
    pub(crate) fn new(first: Box<dyn Machine>) -> Self {
        Chain {
            phase: 0,
            current: first,
            then: Vec::new(),
            finish: None,
            early: Vec::new(),
        }
    }

    /// Add a phase built from the previous phase's result.
    pub(crate) fn then(
        mut self,
        next: impl FnOnce(Option<RedData>) -> Box<dyn Machine> + Send + 'static,
    ) -> Self {
        self.then.push(Box::new(next));
        self
    }

    /// The member's result from the last phase's (default: unchanged); an error ends
    /// the collective at this member, as a phase's would.
    pub(crate) fn finish(
        mut self,
        f: impl FnOnce(Option<RedData>) -> Result<Option<RedData>, CollectiveError> + Send + 'static,
    ) -> Self {
        self.finish = Some(Box::new(f));
        self
    }

    /// Move the current phase's sends to `out`, tagged with the phase.
    fn relay(&self, inner: Out, out: &mut Out) {
        for (pe, tag, piece) in inner.sends {
            debug_assert!(
                tag <= INNER_MASK,
                "a collective's tag {tag} uses phase bits"
            );
            out.send(pe, (self.phase << PHASE_SHIFT) | tag, piece);
        }
    }

    /// After a step of the current phase: start the next phases as far as they go.
    fn advance(&mut self, me: &dyn Topology, mut step: Step, out: &mut Out) -> Stepped {
        loop {
            let Step::Done(v) = step else {
                return Ok(Step::Pending);
            };
            if self.then.is_empty() {
                return Ok(Step::Done(match self.finish.take() {
                    Some(f) => f(v)?,
                    None => v,
                }));
            }
            let next = self.then.remove(0);
            self.phase += 1;
            self.current = next(v);
            let mut inner = Out::default();
            let started = self.current.start(me, &mut inner);
            self.relay(inner, out);
            step = started?;
            let (mine, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
                .into_iter()
                .partition(|m| m.0 == self.phase);
            self.early = later;
            for (_, got) in mine {
                if step != Step::Pending {
                    return Err(CollectiveError::Protocol(format!(
                        "a message for phase {} of a mock-up after that phase ended",
                        self.phase
                    )));
                }
                let mut inner = Out::default();
                let got = self.current.receive(me, got, &mut inner);
                self.relay(inner, out);
                step = got?;
            }
        }
    }
}

impl Machine for Chain {
    fn start(&mut self, me: &dyn Topology, out: &mut Out) -> Stepped {
        let mut inner = Out::default();
        let step = self.current.start(me, &mut inner);
        self.relay(inner, out);
        self.advance(me, step?, out)
    }

    fn receive(&mut self, me: &dyn Topology, got: Received, out: &mut Out) -> Stepped {
        let (phase, tag) = (got.tag >> PHASE_SHIFT, got.tag & INNER_MASK);
        let inner_got = Received { tag, ..got };
        if phase > self.phase {
            self.early.push((phase, inner_got));
            return Ok(Step::Pending);
        }
        let mut inner = Out::default();
        let step = self.current.receive(me, inner_got, &mut inner);
        self.relay(inner, out);
        self.advance(me, step?, out)
    }
}
