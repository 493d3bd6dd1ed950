//! Matching sections the builder made to the tasks waiting for them. A built section
//! names its creator (the task's first PE, which asked for it) and its size, so it
//! names the task's PE range. Two tasks with the same PE range are nested, and the
//! outer one's collectives needed its section on every member before the inner one
//! could exist, so sections of one range arrive in the order their tasks start:
//! first come, first matched.

use super::task::TaskKey;
use chorus_sections::section::Section;
use std::collections::{HashMap, VecDeque};

/// A PE range: (first PE, number of PEs).
pub type Slot = (u32, u32);

/// Tasks waiting for sections and sections waiting for tasks, per PE range.
#[derive(Debug, Default)]
pub struct BuiltSections {
    awaiting: HashMap<Slot, VecDeque<TaskKey>>,
    arrived: HashMap<Slot, VecDeque<Section>>,
}

impl BuiltSections {
    /// Task `key` over `slot` wants its section: here it is if it came already.
    pub fn want(&mut self, slot: Slot, key: TaskKey) -> Option<Section> {
        let ready = self.arrived.get_mut(&slot).and_then(VecDeque::pop_front);
        if ready.is_none() {
            self.awaiting.entry(slot).or_default().push_back(key);
        }
        ready
    }

    /// A section arrived: the task it belongs to, if that task is waiting.
    pub fn arrive(&mut self, section: Section) -> Option<(TaskKey, Section)> {
        let slot = (section.id.creator, section.size);
        match self.awaiting.get_mut(&slot).and_then(VecDeque::pop_front) {
            Some(key) => Some((key, section)),
            None => {
                self.arrived.entry(slot).or_default().push_back(section);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_sections::section::SectionId;

    fn section(creator: u32, counter: u32, size: u32) -> Section {
        Section {
            id: SectionId::created(creator, counter, size),
            rank: 0,
            size,
            k: 2,
            parent: None,
            children: vec![],
        }
    }

    #[test]
    fn sections_meet_their_tasks_in_order_either_way_round() {
        let mut b = BuiltSections::default();
        let outer = TaskKey {
            a: 0,
            b: 90,
            depth: 0,
        };
        let inner = TaskKey {
            a: 0,
            b: 80,
            depth: 1,
        };
        let other = TaskKey {
            a: 90,
            b: 200,
            depth: 1,
        };
        assert_eq!(b.want((0, 9), outer), None);
        assert_eq!(b.arrive(section(3, 0, 4)), None);
        let got = b.arrive(section(0, 0, 9)).unwrap();
        assert_eq!((got.0, got.1.id.counter), (outer, 0));
        assert_eq!(b.arrive(section(0, 1, 9)), None);
        assert_eq!(b.want((0, 9), inner).map(|s| s.id.counter), Some(1));
        assert_eq!(b.want((3, 4), other).map(|s| s.id.creator), Some(3));
    }
}
