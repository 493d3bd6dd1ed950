//! A PE's ready queue: expedited messages first, then by priority, FIFO within one.

use std::collections::{BTreeMap, VecDeque};

/// Ready messages of one PE.
pub(crate) struct ReadyQueue<T> {
    /// Priority-0 messages, the common case, without a map lookup.
    normal: VecDeque<T>,
    /// Expedited and prioritized messages, boxed on first use and freed when the
    /// queue empties: most of the sim layer's 10^6 PEs never see one, and each then
    /// keeps a null pointer instead of both queues.
    rare: Option<Box<Rare<T>>>,
    len: usize,
}

/// The queues of a PE's less common messages.
struct Rare<T> {
    expedited: VecDeque<T>,
    /// Non-zero priorities; smaller keys run first.
    prioritized: BTreeMap<i32, VecDeque<T>>,
}

impl<T> Rare<T> {
    /// True if no expedited or prioritized message waits (an emptied priority's
    /// queue is removed from the map).
    fn is_empty(&self) -> bool {
        self.expedited.is_empty() && self.prioritized.is_empty()
    }
}

impl<T> Default for ReadyQueue<T> {
    fn default() -> Self {
        ReadyQueue {
            normal: VecDeque::new(),
            rare: None,
            len: 0,
        }
    }
}

/// Most spare buffers kept: enough for the PEs that run close together in time.
const MAX_SPARES: usize = 1024;
/// Largest buffer kept as a spare; a PE that queued more frees its buffer.
const MAX_SPARE_CAPACITY: usize = 16;

/// Empty ready-queue buffers of PEs that went idle, for PEs that get a message next.
/// The sim layer runs 10^5 and more PEs that are idle most of the time; without
/// these, each message to an idle PE allocates a buffer and frees it once run.
/// Bounded by `MAX_SPARES` buffers of at most `MAX_SPARE_CAPACITY` entries.
pub(crate) struct SpareBuffers<T> {
    bufs: Vec<VecDeque<T>>,
}

impl<T> Default for SpareBuffers<T> {
    fn default() -> Self {
        SpareBuffers { bufs: Vec::new() }
    }
}

impl<T> SpareBuffers<T> {
    /// Keep an emptied buffer if it has room and is small; free it otherwise.
    fn keep(&mut self, buf: VecDeque<T>) {
        debug_assert!(buf.is_empty());
        let cap = buf.capacity();
        if cap == 0 {
            return;
        }
        if cap <= MAX_SPARE_CAPACITY && self.bufs.len() < MAX_SPARES {
            self.bufs.push(buf);
        }
    }
}

impl<T> ReadyQueue<T> {
    /// Queue a message. Inline, so an envelope is moved once, straight into its
    /// slot: as a call it was copied into the argument and again into the queue.
    #[inline]
    pub(crate) fn push(&mut self, item: T, prio: i32, expedited: bool) {
        if !expedited && prio == 0 {
            self.len += 1;
            return self.normal.push_back(item);
        }
        self.push_rare(item, prio, expedited);
    }

    /// Queue an expedited or prioritized message.
    #[inline(never)]
    fn push_rare(&mut self, item: T, prio: i32, expedited: bool) {
        self.len += 1;
        let rare = self.rare_mut();
        if expedited {
            rare.expedited.push_back(item);
        } else {
            rare.prioritized.entry(prio).or_default().push_back(item);
        }
    }

    /// The queues of expedited and prioritized messages, built on first use.
    fn rare_mut(&mut self) -> &mut Rare<T> {
        self.rare.get_or_insert_with(|| {
            Box::new(Rare {
                expedited: VecDeque::new(),
                prioritized: BTreeMap::new(),
            })
        })
    }

    /// The newest message of priority `prio` (not expedited), to append a run to.
    #[inline]
    pub(crate) fn tail_mut(&mut self, prio: i32) -> Option<&mut T> {
        if prio == 0 {
            self.normal.back_mut()
        } else {
            self.rare.as_mut()?.prioritized.get_mut(&prio)?.back_mut()
        }
    }

    /// Put a message back at the head of its priority (or of the expedited ones), to
    /// run before its peers.
    pub(crate) fn push_front(&mut self, item: T, prio: i32, expedited: bool) {
        self.len += 1;
        if expedited {
            self.rare_mut().expedited.push_front(item);
        } else if prio == 0 {
            self.normal.push_front(item);
        } else {
            let q = self.rare_mut().prioritized.entry(prio).or_default();
            q.push_front(item);
        }
    }

    /// Free the queues' memory when nothing is queued (the sim layer's idle PEs),
    /// keeping the normal queue's buffer in `spares` for the next PE a message reaches.
    pub(crate) fn release_if_empty(&mut self, spares: &mut SpareBuffers<T>) {
        if self.len == 0 {
            spares.keep(std::mem::take(&mut self.normal));
            self.rare = None;
        }
    }

    /// Queue a message, in a spare buffer if it joins the normal queue and that has none.
    pub(crate) fn push_reusing(
        &mut self,
        item: T,
        prio: i32,
        expedited: bool,
        spares: &mut SpareBuffers<T>,
    ) {
        if !expedited && prio == 0 && self.normal.capacity() == 0 {
            if let Some(buf) = spares.bufs.pop() {
                self.normal = buf;
            }
        }
        self.push(item, prio, expedited);
    }

    /// True if an expedited message is waiting.
    pub(crate) fn has_expedited(&self) -> bool {
        self.rare.as_ref().is_some_and(|r| !r.expedited.is_empty())
    }

    /// Take the next message to run.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        // The rare queues stay boxed once used (freed only when the whole queue
        // empties on the sim layer), so look at whether they hold anything.
        if self.rare.as_deref().is_none_or(Rare::is_empty) {
            let item = self.normal.pop_front();
            self.len -= usize::from(item.is_some());
            return item;
        }
        self.pop_rare()
    }

    /// Take the next message when expedited or prioritized ones may be waiting.
    #[inline(never)]
    fn pop_rare(&mut self) -> Option<T> {
        let rare = self.rare.as_deref_mut()?;
        if let Some(x) = rare.expedited.pop_front() {
            self.len -= 1;
            return Some(x);
        }
        let urgent_first = match rare.prioritized.first_key_value() {
            Some((&p, _)) => p < 0 || self.normal.is_empty(),
            None => false,
        };
        let item = if urgent_first {
            let mut entry = rare.prioritized.first_entry()?;
            let item = entry.get_mut().pop_front();
            if entry.get().is_empty() {
                entry.remove();
            }
            item
        } else {
            self.normal.pop_front()
        };
        self.len -= usize::from(item.is_some());
        item
    }

    /// Number of queued messages.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expedited_then_priority_then_fifo() {
        let mut q = ReadyQueue::default();
        q.push("n1", 0, false);
        q.push("late", 5, false);
        q.push("urgent", -3, false);
        q.push("n2", 0, false);
        q.push("exp", 0, true);
        q.push("urgent2", -3, false);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec!["exp", "urgent", "urgent2", "n1", "n2", "late"]);
        assert!(q.is_empty());
    }

    #[test]
    fn the_rare_queues_are_freed_when_the_queue_empties() {
        let mut spares = SpareBuffers::default();
        let mut q = ReadyQueue::default();
        q.push("late", 5, false);
        q.push_front("first", 5, false);
        q.push_front("exp0", 0, true);
        q.push("exp", 0, true);
        assert!(q.has_expedited() && q.rare.is_some());
        assert_eq!(q.tail_mut(5), Some(&mut "late"));
        q.release_if_empty(&mut spares);
        assert!(q.rare.is_some(), "kept while messages wait");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec!["exp0", "exp", "first", "late"]);
        q.release_if_empty(&mut spares);
        assert!(q.rare.is_none() && !q.has_expedited() && q.is_empty());
    }
}
