//! The location layer of chare arrays: where an element that has migrated is.
//!
//! An element is born on its home PE (the array map's choice), and anyone can find
//! the home from the map alone. Once it moves, routing needs news, which this table
//! holds per PE (Charm++'s location manager):
//! - the home PE always learns where its elements went (the new PE tells it), so a
//!   message sent by the map still arrives, one hop later;
//! - a PE an element left keeps a forwarding pointer to where it went;
//! - a PE that forwarded a message tells the sender where to, so the sender's next
//!   messages go straight there (a location cache).
//!
//! Every piece of news is "reached PE p on its k-th move", and k only grows, so stale
//! news never overwrites fresh news, and a message following news of move k that
//! finds the element gone either follows newer news (k grows along every chain, so
//! forwarding ends) or waits here for the element, which is then on its way: the
//! news was sent after the element was sent here, on any layer's ordering.

use crate::base::hash::HashMap;
use crate::base::ids::{CollectionId, IndexKey, Pe};
use crate::base::lazy::Lazy;
use crate::msg::envelope::Envelope;

/// Where an element was last heard of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    /// The PE it reached.
    pub(crate) pe: Pe,
    /// How many moves it had made when it reached `pe`.
    pub(crate) moves: u32,
    /// Its index's order key, which names it in errors (the table is keyed by index).
    pub(crate) order: u64,
    /// True if this PE is the element's home (it stands in for the element in
    /// reductions and broadcasts while the element is away).
    pub(crate) homed_here: bool,
}

/// What to do with a message for an element that is not on this PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Send it on to `pe`, which the element reached on move `moves`.
    Forward { pe: Pe, moves: u32 },
    /// This PE knows nothing newer than the message: the map decides (home or unknown
    /// index) when the message followed no news, else the element is on its way here.
    NoNews,
}

/// One PE's knowledge of migrated elements, and the messages that wait for one.
/// Built on first use: most PEs never see a migration, and a simulated PE stays
/// small.
#[derive(Default)]
pub(crate) struct Locations(Lazy<Table>);

/// What `Locations` knows once anything has moved.
#[derive(Default)]
struct Table {
    by_coll: HashMap<CollectionId, HashMap<IndexKey, Loc>>,
    /// Messages that arrived ahead of an element on its way to this PE.
    waiting: HashMap<(CollectionId, IndexKey), Vec<Envelope>>,
    /// The last news sent to a sender (to, array, element, move): a stream of
    /// messages forwarded from one sender needs telling once.
    last_told: Option<(Pe, CollectionId, IndexKey, u32)>,
}

impl Locations {
    /// The table, built if this is the first news.
    fn table(&mut self) -> &mut Table {
        self.0.get_mut()
    }

    /// True while no element of any array has moved as far as this PE knows: the
    /// common case, in which sending needs no lookup.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.get().is_none_or(|t| t.by_coll.is_empty())
    }

    /// The latest news of an element.
    pub(crate) fn get(&self, coll: CollectionId, key: &IndexKey) -> Option<Loc> {
        self.0.get()?.by_coll.get(&coll)?.get(key).copied()
    }

    /// Record that an element reached `pe` on move `moves`; older news is ignored.
    pub(crate) fn learn(&mut self, coll: CollectionId, key: &IndexKey, loc: Loc) {
        let table = self.table().by_coll.entry(coll).or_default();
        match table.get_mut(key) {
            Some(old) if old.moves >= loc.moves => {}
            Some(old) => *old = loc,
            None => {
                table.insert(key.clone(), loc);
            }
        }
    }

    /// Where a message that followed news of move `moves` goes when the element is
    /// not on this PE (`me`).
    pub(crate) fn route(&self, coll: CollectionId, key: &IndexKey, moves: u32, me: Pe) -> Route {
        match self.get(coll, key) {
            Some(l) if l.moves > moves && l.pe != me => Route::Forward {
                pe: l.pe,
                moves: l.moves,
            },
            _ => Route::NoNews,
        }
    }

    /// Elements homed here that are elsewhere now, with where they were last heard of.
    pub(crate) fn away_from_home(&self, coll: CollectionId, me: Pe) -> Vec<(IndexKey, Loc)> {
        let table = self.0.get().and_then(|t| t.by_coll.get(&coll));
        table.map_or_else(Vec::new, |t| {
            t.iter()
                .filter(|(_, l)| l.homed_here && l.pe != me)
                .map(|(k, l)| (k.clone(), *l))
                .collect()
        })
    }

    /// Number of elements homed here that are elsewhere now.
    pub(crate) fn away_count(&self, coll: CollectionId, me: Pe) -> u64 {
        let table = self.0.get().and_then(|t| t.by_coll.get(&coll));
        table.map_or(0, |t| {
            t.values().filter(|l| l.homed_here && l.pe != me).count() as u64
        })
    }

    /// True unless PE `to` was just told that the element reached its move `moves`
    /// (news is only a shortcut, so leaving out a repeat loses nothing).
    pub(crate) fn should_tell(
        &mut self,
        to: Pe,
        coll: CollectionId,
        key: &IndexKey,
        moves: u32,
    ) -> bool {
        let table = self.table();
        if let Some((t, c, k, m)) = &table.last_told {
            if (*t, *c, *m) == (to, coll, moves) && k == key {
                return false;
            }
        }
        table.last_told = Some((to, coll, key.clone(), moves));
        true
    }

    /// Keep a message until the element it is for arrives here.
    pub(crate) fn wait(&mut self, coll: CollectionId, key: IndexKey, env: Envelope) {
        self.table()
            .waiting
            .entry((coll, key))
            .or_default()
            .push(env);
    }

    /// The messages that waited for an element that has just arrived.
    pub(crate) fn arrived(&mut self, coll: CollectionId, key: &IndexKey) -> Option<Vec<Envelope>> {
        let table = self.0.built_mut()?;
        if table.waiting.is_empty() {
            return None;
        }
        table.waiting.remove(&(coll, key.clone()))
    }

    /// Every message still waiting, with the element it waits for (at quiescence, when
    /// no element is on its way any more, they can never be delivered).
    pub(crate) fn drain_waiting(&mut self) -> Vec<(CollectionId, IndexKey, Vec<Envelope>)> {
        let Some(table) = self.0.built_mut() else {
            return Vec::new();
        };
        table
            .waiting
            .drain()
            .map(|((c, k), envs)| (c, k, envs))
            .collect()
    }

    /// Messages waiting for elements on their way here.
    pub(crate) fn waiting_count(&self) -> usize {
        self.0
            .get()
            .map_or(0, |t| t.waiting.values().map(Vec::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: CollectionId = CollectionId { creator: 0, seq: 0 };

    fn key(k: u8) -> IndexKey {
        IndexKey::from(vec![k])
    }

    fn at(pe: Pe, moves: u32) -> Loc {
        Loc {
            pe,
            moves,
            order: 0,
            homed_here: false,
        }
    }

    #[test]
    fn older_news_never_overwrites_newer() {
        let mut l = Locations::default();
        assert!(l.is_empty());
        l.learn(C, &key(1), at(3, 2));
        l.learn(C, &key(1), at(5, 1));
        assert_eq!(l.get(C, &key(1)), Some(at(3, 2)));
        l.learn(C, &key(1), at(6, 3));
        assert_eq!(l.get(C, &key(1)), Some(at(6, 3)));
    }

    #[test]
    fn messages_follow_newer_news_and_otherwise_wait_or_ask_the_map() {
        let mut l = Locations::default();
        // Nothing known: the map decides.
        assert_eq!(l.route(C, &key(1), 0, 0), Route::NoNews);
        l.learn(C, &key(1), at(2, 1));
        // A message sent by the map follows the pointer.
        assert_eq!(
            l.route(C, &key(1), 0, 0),
            Route::Forward { pe: 2, moves: 1 }
        );
        // A message that followed news as new as this PE's waits here.
        assert_eq!(l.route(C, &key(1), 1, 0), Route::NoNews);
        // News pointing at this PE itself never forwards to itself.
        l.learn(C, &key(1), at(0, 2));
        assert_eq!(l.route(C, &key(1), 1, 0), Route::NoNews);
    }

    #[test]
    fn a_sender_is_told_each_piece_of_news_once_in_a_row() {
        let mut l = Locations::default();
        assert!(l.should_tell(3, C, &key(1), 2));
        assert!(!l.should_tell(3, C, &key(1), 2));
        assert!(l.should_tell(3, C, &key(1), 3));
        assert!(l.should_tell(4, C, &key(1), 3));
        assert!(l.should_tell(4, C, &key(2), 3));
    }

    #[test]
    fn home_counts_its_elements_away() {
        let mut l = Locations::default();
        let home = |pe, moves| Loc {
            pe,
            moves,
            order: 0,
            homed_here: true,
        };
        l.learn(C, &key(1), home(2, 1));
        l.learn(C, &key(2), home(0, 2));
        l.learn(C, &key(3), at(1, 1));
        assert_eq!(l.away_count(C, 0), 1);
        assert_eq!(l.away_from_home(C, 0), vec![(key(1), home(2, 1))]);
    }
}
