//! The simulator's future-event list: events ordered by virtual time, ties broken by
//! the order they were scheduled in, so the same program replays identically.

use crate::base::ids::Pe;
use crate::msg::envelope::Envelope;
use std::collections::VecDeque;

/// What happens to a PE at an event's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// An envelope (held in the event list's slab) reaches the PE.
    Arrive(u32),
    /// The PE is free to run its next ready message.
    Wake,
    /// The PE fails (`--sim-kill`).
    Kill,
    /// The job rolls back to its in-memory checkpoint after failures.
    Recover,
}

impl What {
    /// A small code for the event-log digest.
    pub(crate) fn code(self) -> u64 {
        match self {
            What::Arrive(_) => 1,
            What::Wake => 2,
            What::Kill => 3,
            What::Recover => 4,
        }
    }
}

/// `What` packed in 32 bits: an arrival's slab slot, or one of these markers.
const WAKE: u32 = u32::MAX;
const KILL: u32 = u32::MAX - 1;
const RECOVER: u32 = u32::MAX - 2;

/// Envelope slots the slab keeps room for once no envelope is in flight.
const KEPT_SLOTS: usize = 1 << 12;

/// A scheduled event, 16 bytes so the buckets stay compact. It needs no sequence
/// number: every bucket holds its events in scheduling order (see `EventList`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) time: u64,
    pub(crate) pe: Pe,
    what: u32,
}

impl Event {
    pub(crate) fn what(&self) -> What {
        match self.what {
            WAKE => What::Wake,
            KILL => What::Kill,
            RECOVER => What::Recover,
            slot => What::Arrive(slot),
        }
    }
}

/// Pending events, plus the envelopes of arrivals kept out of the queue so its
/// entries stay small.
///
/// A radix heap on the time: the simulator never schedules into the past, so an
/// event sits in the bucket numbered by the highest bit in which its time differs
/// from the last popped time, and popping only ever moves events to lower buckets
/// (O(1) amortised per event instead of a binary heap's O(log n) cache misses).
/// Bucket 0 holds the events of the current time, so events pop by (time,
/// scheduling order), because every bucket lists its events in scheduling order:
/// a push appends the newest event, and a pop that empties the lowest non-empty
/// bucket moves its events, in their order, into lower buckets that are all empty.
///
/// The event list grows with the events in flight, which the program bounds (each
/// is a message sent or a PE's one pending wake-up); the slab's free slots are
/// reused, so it holds at most as many envelopes as were ever in flight at once.
pub(crate) struct EventList {
    now: u64,
    current: VecDeque<Event>,
    buckets: Vec<Vec<Event>>,
    /// Bit `b - 1` set when bucket `b` (1..=64) holds events.
    occupied: u64,
    len: usize,
    slab: Vec<Option<Envelope>>,
    free: Vec<u32>,
}

impl Default for EventList {
    fn default() -> Self {
        EventList {
            now: 0,
            current: VecDeque::new(),
            buckets: (0..=64).map(|_| Vec::new()).collect(),
            occupied: 0,
            len: 0,
            slab: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl EventList {
    /// Bucket of an event at `time`, relative to the current time.
    fn bucket(&self, time: u64) -> usize {
        64 - (time ^ self.now).leading_zeros() as usize
    }

    /// Schedule `what` for `pe` at `time`; a time in the past counts as now.
    pub(crate) fn push(&mut self, time: u64, pe: Pe, what: What) {
        let what = match what {
            What::Arrive(slot) => slot,
            What::Wake => WAKE,
            What::Kill => KILL,
            What::Recover => RECOVER,
        };
        self.len += 1;
        let ev = Event {
            time: time.max(self.now),
            pe,
            what,
        };
        self.file(ev);
    }

    /// Put an event at the end of its bucket.
    fn file(&mut self, ev: Event) {
        match self.bucket(ev.time) {
            0 => self.current.push_back(ev),
            b => {
                self.buckets[b].push(ev);
                self.occupied |= 1 << (b - 1);
            }
        }
    }

    /// The earliest event.
    pub(crate) fn pop(&mut self) -> Option<Event> {
        if self.current.is_empty() {
            if self.occupied == 0 {
                return None;
            }
            let b = self.occupied.trailing_zeros() as usize + 1;
            self.occupied &= !(1 << (b - 1));
            let mut moving = std::mem::take(&mut self.buckets[b]);
            self.now = moving.iter().map(|e| e.time).min()?;
            // Every event lands in a lower bucket, in order: they share the bits
            // above bit b - 1 with the new time, which has that bit set as they do.
            for ev in moving.drain(..) {
                self.file(ev);
            }
            // Keep the emptied bucket's capacity for later events.
            self.buckets[b] = moving;
        }
        let ev = self.current.pop_front()?;
        self.len -= 1;
        Some(ev)
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

    /// Take the envelope of an arrival event.
    pub(crate) fn take(&mut self, slot: u32) -> Option<Envelope> {
        let env = self.slab.get_mut(slot as usize)?.take();
        self.free.push(slot);
        if self.free.len() == self.slab.len() {
            self.release_slab();
        }
        env
    }

    /// With no envelope in flight, give back the slab's room past `KEPT_SLOTS`: a
    /// broadcast to a million PEs has most of them in flight at once, 136 bytes each,
    /// and a job that then runs on few messages need not keep that room.
    fn release_slab(&mut self) {
        self.slab.clear();
        self.free.clear();
        self.slab.shrink_to(KEPT_SLOTS);
        self.free.shrink_to(KEPT_SLOTS);
    }

    /// Drop every event but the failures still to come (the job rolls back), and
    /// return the envelopes of the arrivals dropped, in slab order.
    pub(crate) fn keep_only_kills(&mut self) -> Vec<Envelope> {
        self.current.retain(|e| e.what == KILL);
        for b in 1..self.buckets.len() {
            self.buckets[b].retain(|e| e.what == KILL);
            if self.buckets[b].is_empty() {
                self.occupied &= !(1 << (b - 1));
            }
        }
        self.len = self.current.len() + self.buckets.iter().map(Vec::len).sum::<usize>();
        self.free.clear();
        // No arrival event is left: every envelope still held was in flight.
        self.slab.drain(..).flatten().collect()
    }

    /// Events scheduled and not yet popped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any interleaving of pushes (never into the past) and pops comes out in
        /// (time, scheduling order), as a sorted reference says.
        #[test]
        fn pops_in_time_then_scheduling_order(
            ops in proptest::collection::vec((any::<bool>(), 0u64..4, 0u32..1 << 20), 1..400)
        ) {
            let mut l = EventList::default();
            let mut reference = std::collections::BTreeSet::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (pop, scale, delta) in ops {
                if pop {
                    let got = l.pop().map(|e| (e.time, e.pe));
                    let want = reference.pop_first().map(|(t, _, pe)| (t, pe));
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    // Deltas of very different sizes exercise every bucket.
                    let t = now + (u64::from(delta) << (scale * 12));
                    seq += 1;
                    let pe = seq as Pe;
                    l.push(t, pe, What::Wake);
                    reference.insert((t, seq, pe));
                }
                prop_assert_eq!(l.len(), reference.len());
            }
            while let Some((t, _, pe)) = reference.pop_first() {
                let e = l.pop().expect("as many events as the reference");
                prop_assert_eq!((e.time, e.pe), (t, pe));
            }
            prop_assert!(l.pop().is_none());
        }
    }

    fn a_message() -> Envelope {
        use crate::base::ids::ChareId;
        use crate::msg::envelope::{Dest, Kind};
        Envelope {
            src: 0,
            seq: 0,
            prio: 0,
            expedited: false,
            counted: true,
            kind: Kind::User {
                dest: Dest::Chare(ChareId {
                    pe: 3,
                    creator: 0,
                    seq: 0,
                }),
                payload: crate::msg::payload::Payload::new(()),
                hops: 0,
            },
        }
    }

    #[test]
    fn the_slab_gives_back_its_room_once_nothing_is_in_flight() {
        let mut l = EventList::default();
        let n = 3 * KEPT_SLOTS as u64;
        for t in 0..n {
            l.push_arrival(t, 3, a_message());
        }
        assert!(l.slab.capacity() >= n as usize);
        let mut taken = 0;
        while let Some(ev) = l.pop() {
            if let What::Arrive(slot) = ev.what() {
                taken += u64::from(l.take(slot).is_some());
            }
        }
        assert_eq!(taken, n, "every envelope taken once");
        assert!(l.slab.capacity() <= KEPT_SLOTS, "{}", l.slab.capacity());
        // Slots handed out after the release hold their own envelopes.
        l.push_arrival(n, 4, a_message());
        let ev = l.pop().expect("the new arrival");
        let What::Arrive(slot) = ev.what() else {
            panic!("an arrival");
        };
        assert!(l.take(slot).is_some());
    }

    #[test]
    fn a_rollback_keeps_the_failures_to_come_in_order() {
        let mut l = EventList::default();
        l.push(5, 1, What::Wake);
        l.push(7, 2, What::Kill);
        l.push_arrival(9, 3, a_message());
        l.push(1 << 40, 4, What::Kill);
        l.push(6, 5, What::Recover);
        let first = l.pop().expect("an event");
        assert_eq!((first.time, first.pe), (5, 1));
        let dropped = l.keep_only_kills();
        assert_eq!(dropped.len(), 1, "the one arrival in flight");
        assert_eq!(l.len(), 2);
        let rest: Vec<(u64, Pe, What)> = std::iter::from_fn(|| l.pop())
            .map(|e| (e.time, e.pe, e.what()))
            .collect();
        assert_eq!(rest, vec![(7, 2, What::Kill), (1 << 40, 4, What::Kill)]);
    }

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

    #[test]
    fn events_for_the_current_time_follow_those_scheduled_before() {
        let mut l = EventList::default();
        l.push(10, 1, What::Wake);
        l.push(10, 2, What::Wake);
        l.push(30, 9, What::Wake);
        let first = l.pop().expect("an event");
        assert_eq!((first.time, first.pe), (10, 1));
        // Scheduled at time 10 while time is 10: after PE 2's earlier event, before 30.
        l.push(10, 3, What::Kill);
        l.push(20, 4, What::Wake);
        let rest: Vec<(u64, Pe, What)> = std::iter::from_fn(|| l.pop())
            .map(|e| (e.time, e.pe, e.what()))
            .collect();
        assert_eq!(
            rest,
            vec![
                (10, 2, What::Wake),
                (10, 3, What::Kill),
                (20, 4, What::Wake),
                (30, 9, What::Wake)
            ]
        );
    }
}
