//! The sorter group chare: one member per PE holds that PE's keys and runs the LSD
//! radix rounds (Zagha–Blelloch): count buckets, start the histogram allgather over a
//! range section of all PEs, move keys locally into bucket order in chunks (while the
//! allgather progresses, unless blocking), then send every run of keys to the PE that
//! owns its global position and wait for this PE's own block to fill.

use super::bucket::{counts, Scatter};
use super::key::{fingerprint, input, rounds, Key};
use super::params::RadixParams;
use super::routing::{plan, Layout};
use super::row::PeRow;
use chorus_core::{Callback, Chare, Ctx, Entry, GroupProxy, Pe, Reducer};
use chorus_sections::collectives::{Collectives, RangeMember};
use chorus_sections::range::RangeSection;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::time::Duration;

/// Branching factor of the world section's tree (unused by the roster allgathers).
const K_TREE: u32 = 4;

/// What every sorter starts from.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct SorterInit<K> {
    /// The sort's parameters.
    pub params: RadixParams,
    /// The job's section collectives.
    pub collectives: Collectives,
    /// The sorters' allgather result entry.
    pub histograms: Entry<Sorter<K>, Vec<u64>>,
    /// Where members say their input is ready (a sum of zeros).
    pub ready: Callback,
    /// Where members report their [`PeRow`]s (a concatenation).
    pub done: Callback,
    /// Key type marker.
    pub key: PhantomData<K>,
}

impl<K> Clone for SorterInit<K> {
    fn clone(&self) -> Self {
        SorterInit {
            params: self.params,
            collectives: self.collectives,
            histograms: self.histograms,
            ready: self.ready.clone(),
            done: self.done.clone(),
            key: PhantomData,
        }
    }
}

/// Messages of a sorter.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound = "K: Key")]
pub enum SorterMsg<K> {
    /// Start sorting (from the driver, once every input is ready).
    Go,
    /// Move the next chunk of keys locally.
    Chunk,
    /// Every PE's histogram of this round's digit, PE-major.
    Histograms(Vec<u64>),
    /// Keys of round `round` for this PE, as (global position, keys) runs.
    Keys {
        round: u32,
        runs: Vec<(u64, Vec<K>)>,
    },
}

fn ns(s: f64) -> u64 {
    (s * 1e9).round().max(0.0) as u64
}

/// The round in progress on this PE.
struct Round<K> {
    index: u32,
    /// When the allgather was started.
    started: f64,
    /// When the local movement began (blocking: once the histograms arrived).
    comp_started: f64,
    scatter: Scatter<K>,
    comp_done: Option<f64>,
    comm_done: Option<f64>,
    histograms: Option<Vec<u64>>,
    sent: bool,
}

/// One PE's sorter.
pub struct Sorter<K> {
    init: SorterInit<K>,
    me: Pe,
    npes: u32,
    keys: Vec<K>,
    /// Next round's keys, filled by position as they arrive.
    next: Vec<K>,
    received: usize,
    layout: Option<Layout>,
    /// Runs that came before this PE could place them: (round, position, keys).
    early: Vec<(u32, u64, Vec<K>)>,
    round: Option<Round<K>>,
    rounds: u32,
    fingerprint_in: u64,
    comm_s: f64,
    comp_s: f64,
    overlapped_s: f64,
}

impl<K: Key> Chare for Sorter<K> {
    type Init = SorterInit<K>;
    type Msg = SorterMsg<K>;

    fn create(init: SorterInit<K>, ctx: &mut Ctx) -> Self {
        let me = ctx.my_pe();
        let keys: Vec<K> = input(ctx.seed(), me, init.params.keys_per_pe);
        let fingerprint_in = fingerprint(&keys);
        ctx.contribute(0u64, Reducer::Sum, init.ready.clone());
        Sorter {
            me,
            npes: ctx.num_pes() as u32,
            next: Vec::new(),
            received: 0,
            layout: None,
            early: Vec::new(),
            round: None,
            rounds: rounds::<K>(init.params.radix_bits),
            fingerprint_in,
            comm_s: 0.0,
            comp_s: 0.0,
            overlapped_s: 0.0,
            keys,
            init,
        }
    }

    fn handle(&mut self, msg: SorterMsg<K>, ctx: &mut Ctx) {
        match msg {
            SorterMsg::Go => self.begin_round(0, ctx),
            SorterMsg::Chunk => self.chunk(ctx),
            SorterMsg::Histograms(all) => self.histograms(all, ctx),
            SorterMsg::Keys { round, runs } => {
                for (pos, keys) in runs {
                    self.take_run(round, pos, keys, ctx);
                }
                self.check_round_done(ctx);
            }
        }
    }
}

impl<K: Key> Sorter<K> {
    fn proxy(ctx: &Ctx) -> GroupProxy<Sorter<K>> {
        ctx.this_group::<Sorter<K>>()
            .expect("a sorter runs as a group member")
    }

    /// Charge `units` keys' (or histogram entries') worth of compute.
    fn charge(&self, ctx: &mut Ctx, units: usize) {
        let ns = self.init.params.key_ns * units as f64;
        if ns >= 1.0 {
            ctx.work(Duration::from_nanos(ns as u64));
        }
    }

    fn world(&self) -> RangeMember {
        let world = RangeSection::world(self.npes, K_TREE).expect("a job has PEs");
        RangeMember::new(world, self.me).expect("every PE is in the world")
    }

    fn begin_round(&mut self, index: u32, ctx: &mut Ctx) {
        let p = self.init.params;
        let n = self.keys.len();
        let h = counts(&self.keys, index, p.radix_bits);
        self.charge(ctx, n);
        let scatter = Scatter::new(&h, index, p.radix_bits, n);
        let started = ctx.now();
        let cb = Callback::group_member(&Self::proxy(ctx), self.me, self.init.histograms);
        self.init
            .collectives
            .allgather(ctx, self.world(), h, p.allgather, cb)
            .expect("the histogram allgather is well formed");
        self.next = vec![K::default(); n];
        self.received = 0;
        let finished = scatter.finished();
        self.round = Some(Round {
            index,
            started,
            comp_started: started,
            scatter,
            comp_done: finished.then_some(started),
            comm_done: None,
            histograms: None,
            sent: false,
        });
        if !p.blocking && !finished {
            Self::proxy(ctx).send(ctx, self.me, SorterMsg::Chunk);
        }
        self.place_arrived(ctx);
    }

    fn chunk(&mut self, ctx: &mut Ctx) {
        let chunk = self.init.params.chunk_keys;
        let Some(r) = self.round.as_mut() else {
            return;
        };
        let moved = r.scatter.step(&self.keys, chunk);
        let finished = r.scatter.finished();
        self.charge(ctx, moved);
        let now = ctx.now();
        let r = self.round.as_mut().expect("checked above");
        if finished {
            r.comp_done = Some(now);
            self.advance(ctx);
        } else {
            Self::proxy(ctx).send(ctx, self.me, SorterMsg::Chunk);
        }
    }

    fn histograms(&mut self, all: Vec<u64>, ctx: &mut Ctx) {
        let buckets = self.init.params.buckets();
        if self.layout.is_none() {
            self.layout = Some(Layout::of(&all, buckets));
        }
        let now = ctx.now();
        let blocking = self.init.params.blocking;
        let r = self
            .round
            .as_mut()
            .expect("histograms come in a round that started them");
        r.comm_done = Some(now);
        r.histograms = Some(all);
        if blocking {
            r.comp_started = now;
            if r.scatter.finished() {
                r.comp_done = Some(now);
            } else {
                Self::proxy(ctx).send(ctx, self.me, SorterMsg::Chunk);
            }
        }
        self.place_arrived(ctx);
        self.advance(ctx);
    }

    /// Once both the local movement and the allgather are done: send every run to
    /// its owner.
    fn advance(&mut self, ctx: &mut Ctx) {
        let Some(r) = self.round.as_mut() else {
            return;
        };
        let (Some(comp), Some(comm), false) = (r.comp_done, r.comm_done, r.sent) else {
            return;
        };
        r.sent = true;
        self.comm_s += comm - r.started;
        self.comp_s += comp - r.comp_started;
        self.overlapped_s += comp.max(comm) - r.started;
        let index = r.index;
        let all = r
            .histograms
            .take()
            .expect("comm_done comes with histograms");
        let scatter = std::mem::replace(&mut r.scatter, Scatter::new(&[], 0, 1, 0));
        let (moved, starts) = scatter.into_parts();
        let buckets = self.init.params.buckets();
        let layout = self.layout.as_ref().expect("set with the first histograms");
        let batches = plan(&all, buckets, self.me, &starts, layout);
        self.charge(ctx, all.len());
        let proxy = Self::proxy(ctx);
        for batch in batches {
            let runs: Vec<(u64, Vec<K>)> = batch
                .runs
                .into_iter()
                .map(|run| (run.pos, moved[run.local].to_vec()))
                .collect();
            if batch.dest == self.me {
                for (pos, keys) in runs {
                    self.take_run(index, pos, keys, ctx);
                }
            } else {
                let msg = SorterMsg::Keys { round: index, runs };
                proxy.send(ctx, batch.dest, msg);
            }
        }
        self.check_round_done(ctx);
    }

    /// Where this PE's block of round `round`'s keys starts, if it can place them now
    /// (it is in that round and knows which positions it owns).
    fn base_for(&self, round: u32) -> Option<u64> {
        let (r, layout) = (self.round.as_ref()?, self.layout.as_ref()?);
        (r.index == round).then(|| layout.owned(self.me).start)
    }

    /// Place a run of round `round` now, or hold it until this PE can.
    fn take_run(&mut self, round: u32, pos: u64, keys: Vec<K>, ctx: &mut Ctx) {
        match self.base_for(round) {
            Some(base) => {
                let at = (pos - base) as usize;
                self.next[at..at + keys.len()].copy_from_slice(&keys);
                self.received += keys.len();
                self.charge(ctx, keys.len());
            }
            None => self.early.push((round, pos, keys)),
        }
    }

    /// Place the held runs that this PE can place now (called when it enters a round
    /// and when it learns which positions it owns).
    fn place_arrived(&mut self, ctx: &mut Ctx) {
        let Some(index) = self.round.as_ref().map(|r| r.index) else {
            return;
        };
        if self.base_for(index).is_none() || self.early.is_empty() {
            return;
        }
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
            .into_iter()
            .partition(|e| e.0 == index);
        self.early = later;
        for (round, pos, keys) in now {
            self.take_run(round, pos, keys, ctx);
        }
    }

    fn check_round_done(&mut self, ctx: &mut Ctx) {
        let Some(r) = self.round.as_ref() else {
            return;
        };
        if !r.sent || self.received < self.next.len() {
            return;
        }
        let index = r.index;
        self.keys = std::mem::take(&mut self.next);
        if index + 1 < self.rounds {
            self.begin_round(index + 1, ctx);
        } else {
            self.round = None;
            self.finish(ctx);
        }
    }

    fn finish(&mut self, ctx: &mut Ctx) {
        let row = PeRow {
            locally_sorted: self.keys.windows(2).all(|w| w[0] <= w[1]),
            count: self.keys.len() as u64,
            first: self.keys.first().map_or(0, |k| k.to_u64()),
            last: self.keys.last().map_or(0, |k| k.to_u64()),
            fingerprint_in: self.fingerprint_in,
            fingerprint_out: fingerprint(&self.keys),
            comm_ns: ns(self.comm_s),
            comp_ns: ns(self.comp_s),
            overlapped_ns: ns(self.overlapped_s),
            finished_ns: ns(ctx.now()),
        };
        ctx.contribute(row.to_vec(), Reducer::Concat, self.init.done.clone());
    }
}
