//! The global check: each PE sums up its final slice in one record, and the driver
//! checks from the records alone that the slices are sorted, in order across PEs,
//! exactly balanced and a permutation of the input (fingerprints of (key, origin)).

use super::key::Elem;
use super::layout::Layout;
use serde::{Deserialize, Serialize};

/// Words in one PE's record.
pub const RECORD_WORDS: usize = 15;

/// What one PE reports at the end.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PeRecord {
    /// The PE.
    pub pe: u32,
    /// Elements it holds at the end.
    pub count: u64,
    /// Its smallest and largest element (meaningless when count = 0).
    pub first: Elem,
    /// See `first`.
    pub last: Elem,
    /// True if its slice is sorted.
    pub sorted: bool,
    /// Fingerprint of its input and of its output.
    pub fp_in: u64,
    /// See `fp_in`.
    pub fp_out: u64,
    /// When it started and ended sorting, seconds on the layer's clock.
    pub t0: f64,
    /// See `t0`.
    pub t1: f64,
    /// Splits at which it ended in both subtasks (a janus PE).
    pub janus: u64,
    /// Sections it created as rank 0 of a distributed task.
    pub sections: u64,
    /// Distributed recursion levels it took part in (max depth + 1).
    pub levels: u64,
    /// Most distributed tasks it had running at once.
    pub max_concurrent: u64,
}

impl PeRecord {
    /// The record of a final slice.
    pub fn of_slice(pe: u32, slice: &[Elem]) -> Self {
        PeRecord {
            pe,
            count: slice.len() as u64,
            first: slice.first().copied().unwrap_or_default(),
            last: slice.last().copied().unwrap_or_default(),
            sorted: slice.windows(2).all(|w| w[0] < w[1]),
            fp_out: super::input::fingerprint(slice),
            ..PeRecord::default()
        }
    }

    /// As words for a Concat reduction.
    pub fn words(&self) -> [u64; RECORD_WORDS] {
        [
            u64::from(self.pe),
            self.count,
            self.first.0,
            self.first.1,
            self.last.0,
            self.last.1,
            u64::from(self.sorted),
            self.fp_in,
            self.fp_out,
            self.t0.to_bits(),
            self.t1.to_bits(),
            self.janus,
            self.sections,
            self.levels,
            self.max_concurrent,
        ]
    }

    /// From words.
    pub fn from_words(w: &[u64]) -> Self {
        PeRecord {
            pe: w[0] as u32,
            count: w[1],
            first: (w[2], w[3]),
            last: (w[4], w[5]),
            sorted: w[6] != 0,
            fp_in: w[7],
            fp_out: w[8],
            t0: f64::from_bits(w[9]),
            t1: f64::from_bits(w[10]),
            janus: w[11],
            sections: w[12],
            levels: w[13],
            max_concurrent: w[14],
        }
    }
}

/// The verdict on a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Every slice sorted and slices in order across PEs.
    pub sorted: bool,
    /// Every PE holds exactly its floor(n/p) or ceil(n/p) positions.
    pub balanced: bool,
    /// The output is a permutation of the input (fingerprints agree).
    pub permutation: bool,
    /// Elements.
    pub n: u64,
    /// PEs.
    pub pes: u32,
    /// From the first PE's start to the last PE's end, seconds.
    pub time_s: f64,
    /// Distributed recursion levels (deepest task + 1).
    pub levels: u64,
    /// Sections created (one per distributed task).
    pub sections_created: u64,
    /// Janus events: a PE ending a split in both subtasks.
    pub janus: u64,
    /// Most distributed tasks one PE had running at once.
    pub max_concurrent_sections: u64,
}

impl Outcome {
    /// Sorted, balanced and a permutation of the input.
    pub fn passed(&self) -> bool {
        self.sorted && self.balanced && self.permutation
    }
}

/// Check the records of all PEs (any order) against the layout.
pub fn check(layout: &Layout, words: &[u64]) -> Result<Outcome, String> {
    if words.len() != RECORD_WORDS * layout.pes() as usize {
        return Err(format!(
            "{} record words from {} PEs, expected {} each",
            words.len(),
            layout.pes(),
            RECORD_WORDS
        ));
    }
    let mut recs: Vec<PeRecord> = words
        .chunks_exact(RECORD_WORDS)
        .map(PeRecord::from_words)
        .collect();
    recs.sort_by_key(|r| r.pe);
    let balanced = recs
        .iter()
        .enumerate()
        .all(|(i, r)| r.pe == i as u32 && r.count == layout.len(r.pe));
    let mut sorted = recs.iter().all(|r| r.sorted);
    let mut prev: Option<Elem> = None;
    for r in recs.iter().filter(|r| r.count > 0) {
        if prev.is_some_and(|p| p >= r.first) {
            sorted = false;
        }
        prev = Some(r.last);
    }
    let sum = |f: fn(&PeRecord) -> u64| recs.iter().fold(0u64, |a, r| a.wrapping_add(f(r)));
    let t0 = recs.iter().map(|r| r.t0).fold(f64::INFINITY, f64::min);
    let t1 = recs.iter().map(|r| r.t1).fold(f64::NEG_INFINITY, f64::max);
    Ok(Outcome {
        sorted,
        balanced,
        permutation: sum(|r| r.fp_in) == sum(|r| r.fp_out),
        n: layout.n(),
        pes: layout.pes(),
        time_s: (t1 - t0).max(0.0),
        levels: recs.iter().map(|r| r.levels).max().unwrap_or(0),
        sections_created: sum(|r| r.sections),
        janus: sum(|r| r.janus),
        max_concurrent_sections: recs.iter().map(|r| r.max_concurrent).max().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_catch_order_balance_and_loss() {
        let l = Layout::new(5, 2);
        let a = PeRecord::of_slice(0, &[(1, 0), (2, 4), (3, 1)]);
        let b = PeRecord::of_slice(1, &[(4, 2), (9, 3)]);
        let mut w: Vec<u64> = b.words().into_iter().chain(a.words()).collect();
        let ok = check(&l, &w).unwrap();
        assert!(ok.sorted && ok.balanced);
        let swapped = PeRecord::of_slice(1, &[(0, 2), (9, 3)]);
        w[..RECORD_WORDS].copy_from_slice(&swapped.words());
        assert!(!check(&l, &w).unwrap().sorted);
        let short = PeRecord::of_slice(1, &[(9, 3)]);
        w[..RECORD_WORDS].copy_from_slice(&short.words());
        assert!(!check(&l, &w).unwrap().balanced);
        assert!(check(&l, &w[1..]).is_err());
    }
}
