//! The simulator's future-event list: events ordered by virtual time, ties broken by
//! the order they were scheduled in, so the same program replays identically.

use crate::ids::Pe;
use crate::runtime::Envelope;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens to a PE at an event's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// An envelope (held in the event list's slab) reaches the PE.
    Arrive(u32),
    /// The PE is free to run its next ready message.
    Wake,
    /// The PE fails (`--sim-kill`).
    Kill,
}

impl What {
    /// A small code for the event-log digest.
    pub(crate) fn code(self) -> u64 {
        match self {
            What::Arrive(_) => 1,
            What::Wake => 2,
            What::Kill => 3,
        }
    }
}

/// A scheduled event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) time: u64,
    seq: u64,
    pub(crate) pe: Pe,
    pub(crate) what: What,
}

impl Ord for Event {
    /// Reversed, so the max-heap pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Pending events, plus the envelopes of arrivals kept out of the heap so heap
/// entries stay small.
#[derive(Default)]
pub(crate) struct EventList {
    heap: BinaryHeap<Event>,
    seq: u64,
    slab: Vec<Option<Envelope>>,
    free: Vec<u32>,
}

impl EventList {
    /// Schedule `what` for `pe` at `time`.
    pub(crate) fn push(&mut self, time: u64, pe: Pe, what: What) {
        self.seq += 1;
        self.heap.push(Event {
            time,
            seq: self.seq,
            pe,
            what,
        });
    }

    /// Schedule the arrival of `env` at `pe` at `time`.
    pub(crate) fn push_arrival(&mut self, time: u64, pe: Pe, env: Envelope) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(env);
                i
            }
            None => {
                self.slab.push(Some(env));
                (self.slab.len() - 1) as u32
            }
        };
        self.push(time, pe, What::Arrive(slot));
    }

    /// The earliest event.
    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    /// Take the envelope of an arrival event.
    pub(crate) fn take(&mut self, slot: u32) -> Option<Envelope> {
        let env = self.slab.get_mut(slot as usize)?.take();
        self.free.push(slot);
        env
    }

    /// Events scheduled and not yet popped.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_in_scheduling_order() {
        let mut l = EventList::default();
        l.push(20, 0, What::Wake);
        l.push(10, 1, What::Wake);
        l.push(10, 2, What::Kill);
        l.push(5, 3, What::Wake);
        let order: Vec<(u64, Pe)> = std::iter::from_fn(|| l.pop())
            .map(|e| (e.time, e.pe))
            .collect();
        assert_eq!(order, vec![(5, 3), (10, 1), (10, 2), (20, 0)]);
    }
}
