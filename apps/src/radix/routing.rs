//! Global redistribution plan of a radix round, from the allgathered histograms:
//! prefix sums give every (bucket, PE) pair its global position, and a block layout
//! (each PE keeps as many keys as it started with) says which PE owns a position.

use std::ops::Range;

/// Which PE owns which global positions: PE i owns `starts[i]..starts[i + 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    starts: Vec<u64>,
}

impl Layout {
    /// The layout of the keys counted in `all` (PE-major: `all[i * buckets + b]`).
    pub fn of(all: &[u64], buckets: usize) -> Self {
        let mut starts = Vec::with_capacity(all.len() / buckets.max(1) + 1);
        let mut at = 0u64;
        starts.push(0);
        for per_pe in all.chunks(buckets.max(1)) {
            at += per_pe.iter().sum::<u64>();
            starts.push(at);
        }
        Layout { starts }
    }

    /// Global positions PE `pe` owns.
    pub fn owned(&self, pe: u32) -> Range<u64> {
        self.starts[pe as usize]..self.starts[pe as usize + 1]
    }

    /// The PE owning global position `pos` (the last of several owning none before it).
    pub fn owner(&self, pos: u64) -> u32 {
        (self.starts.partition_point(|&s| s <= pos) - 1) as u32
    }

    /// Number of keys in all.
    pub fn total(&self) -> u64 {
        *self.starts.last().unwrap_or(&0)
    }
}

/// A run of this PE's bucket-ordered keys bound for one global position onward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Global position of the run's first key.
    pub pos: u64,
    /// The keys, as a range of the bucket-ordered local keys.
    pub local: Range<usize>,
}

/// The runs PE `dest` receives from this PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The receiving PE.
    pub dest: u32,
    /// Its runs, in increasing position.
    pub runs: Vec<Run>,
}

/// Where PE `me`'s keys go: `all` is every PE's histogram (PE-major, `buckets` each),
/// `starts` where each bucket begins in `me`'s bucket-ordered keys. One batch per
/// receiving PE, in increasing PE order (positions grow with the bucket).
pub fn plan(all: &[u64], buckets: usize, me: u32, starts: &[usize], layout: &Layout) -> Vec<Batch> {
    let pes = all.len() / buckets;
    let mut batches: Vec<Batch> = Vec::new();
    let mut bucket_base = 0u64;
    for b in 0..buckets {
        let column = (0..pes).map(|i| all[i * buckets + b]);
        let (mut before_me, mut total) = (0u64, 0u64);
        for (i, c) in column.enumerate() {
            if i < me as usize {
                before_me += c;
            }
            total += c;
        }
        let mine = all[me as usize * buckets + b] as usize;
        let mut pos = bucket_base + before_me;
        let mut local = starts[b]..starts[b] + mine;
        while !local.is_empty() {
            let dest = layout.owner(pos);
            let room = (layout.owned(dest).end - pos) as usize;
            let take = room.min(local.len());
            let run = Run {
                pos,
                local: local.start..local.start + take,
            };
            match batches.last_mut() {
                Some(last) if last.dest == dest => last.runs.push(run),
                _ => batches.push(Batch {
                    dest,
                    runs: vec![run],
                }),
            }
            pos += take as u64;
            local.start += take;
        }
        bucket_base += total;
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_finds_owners_past_empty_pes() {
        // PEs own 2, 0, 3 and 1 keys (two buckets each).
        let all = [1, 1, 0, 0, 2, 1, 0, 1];
        let l = Layout::of(&all, 2);
        assert_eq!(l.total(), 6);
        assert_eq!(l.owned(1), 2..2);
        assert_eq!(
            (0..6).map(|p| l.owner(p)).collect::<Vec<_>>(),
            [0, 0, 2, 2, 2, 3]
        );
    }

    /// Every PE's plan, applied, puts every key at its stable sorted position.
    #[test]
    fn plans_of_all_pes_cover_every_position_once_in_digit_order() {
        let buckets = 3;
        // Per PE, its keys' digits in bucket order.
        let digits: Vec<Vec<usize>> = vec![vec![0, 0, 2], vec![], vec![1, 1, 1, 2], vec![0, 2]];
        let all: Vec<u64> = digits
            .iter()
            .flat_map(|d| (0..buckets).map(move |b| d.iter().filter(|&&x| x == b).count() as u64))
            .collect();
        let layout = Layout::of(&all, buckets);
        let mut placed = vec![None; layout.total() as usize];
        for (me, d) in digits.iter().enumerate() {
            let starts: Vec<usize> = (0..buckets)
                .map(|b| d.iter().filter(|&&x| x < b).count())
                .collect();
            for batch in plan(&all, buckets, me as u32, &starts, &layout) {
                for run in batch.runs {
                    let owned = layout.owned(batch.dest);
                    assert!(
                        owned.start <= run.pos && run.pos + (run.local.len() as u64) <= owned.end
                    );
                    for (j, i) in run.local.enumerate() {
                        let slot = &mut placed[run.pos as usize + j];
                        assert!(slot.is_none(), "position written twice");
                        *slot = Some((d[i], me, i));
                    }
                }
            }
        }
        let placed: Vec<(usize, usize, usize)> = placed.into_iter().map(|s| s.unwrap()).collect();
        let mut want = placed.clone();
        want.sort();
        assert_eq!(placed, want, "digit order, then PE, then local order");
    }
}
