//! Envelopes whose announced parts are still on their way: a long envelope's body
//! (after its notice) and a segmented envelope's segments. A rank takes each part
//! when it has come, never waiting for it, and holds the later envelopes of that
//! source meanwhile (MPI keeps each source's tags in order, and an envelope must not
//! overtake the one before it), so a slow or paused sender delays only its own
//! messages and no timeout is needed.

use super::{Link, Whole, LONG_TAG, SEGMENT_TAG};
use crate::wire::{self, SegmentPlan};
use mpi::point_to_point::Message;
use mpi::traits::*;
use std::collections::VecDeque;
use std::sync::Arc;

/// What an envelope from one source still needs.
pub(super) enum Stage {
    /// The body of a long envelope, announced by a notice of `len` bytes.
    Long { len: u64 },
    /// The segments of `main`, in order; `probed` are those matched so far.
    Segments {
        main: Arc<Vec<u8>>,
        plan: SegmentPlan,
        probed: Vec<(Message, usize)>,
        fault: Option<String>,
    },
}

/// A source whose envelope is incomplete, and its envelopes that came after.
pub(super) struct Waiting {
    stage: Stage,
    /// Later envelopes of the source, as they arrived. What a source sends after an
    /// announcement and before MPI delivers the announced part's header is bounded:
    /// the header leaves with the sender's next progress, and a paused or stopped
    /// sender sends nothing more.
    held: VecDeque<Arc<Vec<u8>>>,
}

impl Link {
    /// Take `first`, an envelope's first message from `source`: the whole envelope,
    /// or None if a part it announces has not come yet (it then waits, in order).
    pub(super) fn arrived(&mut self, source: i32, first: Arc<Vec<u8>>) -> Option<Whole> {
        if let Some(w) = self.waiting.get_mut(&source) {
            w.held.push_back(first);
            return None;
        }
        match self.begin(source, &first) {
            Ok(done) => Some(done),
            Err(stage) => {
                let held = VecDeque::new();
                self.waiting.insert(source, Waiting { stage, held });
                None
            }
        }
    }

    /// Move every envelope whose parts have all come to the inbox (sources in rank
    /// order); true if any did.
    pub(super) fn complete_waiting(&mut self) -> bool {
        if self.waiting.is_empty() {
            return false;
        }
        let mut any = false;
        let sources: Vec<i32> = self.waiting.keys().copied().collect();
        for source in sources {
            let Some(Waiting { stage, mut held }) = self.waiting.remove(&source) else {
                continue;
            };
            match self.advance(source, stage) {
                Err(stage) => {
                    self.waiting.insert(source, Waiting { stage, held });
                }
                Ok(done) => {
                    any = true;
                    self.inbox.push_back((done, source));
                    if let Some(stage) = self.drain_held(source, &mut held) {
                        self.waiting.insert(source, Waiting { stage, held });
                    }
                }
            }
        }
        any
    }

    /// Take `held` envelopes of `source` in order into the inbox until one must wait;
    /// that one's stage (the rest stay held).
    fn drain_held(&mut self, source: i32, held: &mut VecDeque<Arc<Vec<u8>>>) -> Option<Stage> {
        while let Some(next) = held.pop_front() {
            match self.begin(source, &next) {
                Ok(done) => self.inbox.push_back((done, source)),
                Err(stage) => return Some(stage),
            }
        }
        None
    }

    /// The envelope `first` starts, if nothing it announces is missing.
    fn begin(&mut self, source: i32, first: &Arc<Vec<u8>>) -> Result<Whole, Stage> {
        match wire::noticed_len(first) {
            Some(len) => self.advance(source, Stage::Long { len }),
            None => self.segments_of(source, Arc::clone(first)),
        }
    }

    /// `main` whole, or the stage that waits for its segments.
    fn segments_of(&mut self, source: i32, main: Arc<Vec<u8>>) -> Result<Whole, Stage> {
        // A malformed table is left for `decode` to report (it refuses a segmented
        // envelope that was not reassembled).
        match wire::segment_plan(&main) {
            Ok(Some(plan)) => self.advance(
                source,
                Stage::Segments {
                    main,
                    plan,
                    probed: Vec::new(),
                    fault: None,
                },
            ),
            _ => Ok(Whole::all(main)),
        }
    }

    /// Take what has come of the parts `stage` waits for.
    fn advance(&mut self, source: i32, stage: Stage) -> Result<Whole, Stage> {
        let from = self.comm.process_at_rank(source);
        match stage {
            Stage::Long { len } => {
                let Some((msg, status)) = from.immediate_matched_probe_with_tag(LONG_TAG) else {
                    return Err(Stage::Long { len });
                };
                // Probed before its buffer is allocated, so the buffer holds only the
                // bytes really sent; the body says its own length, so a notice of
                // another length is only logged (`decode` checks the envelope).
                let arrived = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
                if arrived as u64 != len {
                    tracing::warn!(
                        rank = source,
                        "a long envelope of {arrived} bytes came where its notice said {len}"
                    );
                }
                let body = self.filled(arrived, |buf| {
                    msg.matched_receive_into(buf);
                });
                self.segments_of(source, body)
            }
            Stage::Segments {
                main,
                plan,
                mut probed,
                mut fault,
            } => {
                // Every segment is probed before the envelope's buffer is allocated,
                // so a corrupt table (a peer's bug) costs only the bytes really sent.
                let done = probed.len() + usize::from(fault.is_some());
                for (i, &(_, len)) in plan.gaps.iter().enumerate().skip(done) {
                    let Some((msg, status)) = from.immediate_matched_probe_with_tag(SEGMENT_TAG)
                    else {
                        return Err(Stage::Segments {
                            main,
                            plan,
                            probed,
                            fault,
                        });
                    };
                    let arrived = status.count(u8::equivalent_datatype()) as usize;
                    if fault.is_none() && arrived == len {
                        probed.push((msg, len));
                        continue;
                    }
                    // Every announced segment is taken off the network, refused or
                    // not, so the sender's later segments stay in step with their
                    // envelopes.
                    let _ = (msg, status).matched_receive_vec::<u8>();
                    fault.get_or_insert(format!(
                        "segment {i} is {arrived} bytes where its table says {len}"
                    ));
                }
                Ok(self.assemble(source, &main, &plan, probed, fault))
            }
        }
    }

    /// The whole envelope of segmented `main` from its matched segments, or `main`
    /// itself (which `decode` refuses) if a segment was not what the table says.
    fn assemble(
        &mut self,
        source: i32,
        main: &Arc<Vec<u8>>,
        plan: &SegmentPlan,
        probed: Vec<(Message, usize)>,
        fault: Option<String>,
    ) -> Whole {
        if let Some(fault) = fault {
            tracing::warn!(rank = source, "refusing a segmented envelope: {fault}");
            // Segments already matched must still be received; each holds what the
            // sender really sent, so the scratch space is bounded by that.
            for (msg, len) in probed {
                let mut scratch = vec![0u8; len];
                msg.matched_receive_into(&mut scratch[..]);
            }
            return Whole::all(Arc::clone(main));
        }
        let mut probed = probed.into_iter();
        self.reassembled(main, plan, |into| {
            if let Some((msg, _)) = probed.next() {
                msg.matched_receive_into(into);
            }
        })
    }
}
