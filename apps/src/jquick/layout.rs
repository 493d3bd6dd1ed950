//! Where global positions live: PE i owns positions start(i)..start(i+1) of the
//! sorted order, floor(n/p) or ceil(n/p) of them (the first n mod p PEs hold one
//! more), and a task over positions a..b spans the PEs owning them.

/// The perfectly balanced split of n positions over p PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    n: u64,
    p: u32,
}

impl Layout {
    /// n positions over p PEs (p >= 1).
    pub fn new(n: u64, p: u32) -> Self {
        assert!(p > 0, "a layout needs a PE");
        Layout { n, p }
    }

    /// Number of positions.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Number of PEs.
    pub fn pes(&self) -> u32 {
        self.p
    }

    /// First position of `pe` (start(p) = n).
    pub fn start(&self, pe: u32) -> u64 {
        let (q, r) = (self.n / u64::from(self.p), self.n % u64::from(self.p));
        u64::from(pe) * q + u64::from(pe).min(r)
    }

    /// Positions `pe` holds.
    pub fn len(&self, pe: u32) -> u64 {
        self.start(pe + 1) - self.start(pe)
    }

    /// The PE holding position `pos` (< n).
    pub fn owner(&self, pos: u64) -> u32 {
        debug_assert!(pos < self.n);
        let (q, r) = (self.n / u64::from(self.p), self.n % u64::from(self.p));
        let big = r * (q + 1);
        if pos < big {
            (pos / (q + 1)) as u32
        } else {
            (r + (pos - big) / q) as u32
        }
    }

    /// First and last PE of the non-empty positions a..b.
    pub fn span(&self, a: u64, b: u64) -> (u32, u32) {
        debug_assert!(a < b);
        (self.owner(a), self.owner(b - 1))
    }

    /// How many of the positions a..b `pe` holds.
    pub fn overlap(&self, pe: u32, a: u64, b: u64) -> u64 {
        let (s, e) = (self.start(pe), self.start(pe + 1));
        b.min(e).saturating_sub(a.max(s))
    }

    /// The pieces of positions a..b by owner: (PE, first position, count).
    pub fn pieces(&self, a: u64, b: u64) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        let mut pos = a;
        std::iter::from_fn(move || {
            if pos >= b {
                return None;
            }
            let pe = self.owner(pos);
            let end = self.start(pe + 1).min(b);
            let piece = (pe, pos, end - pos);
            pos = end;
            Some(piece)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn positions_split_evenly_and_map_back(n in 0u64..500, p in 1u32..40, a in 0u64..500, len in 1u64..500) {
            let l = Layout::new(n, p);
            let (lo, hi) = (n / u64::from(p), n.div_ceil(u64::from(p)));
            let mut total = 0;
            for pe in 0..p {
                prop_assert!(l.len(pe) == lo || l.len(pe) == hi);
                for pos in l.start(pe)..l.start(pe + 1) {
                    prop_assert_eq!(l.owner(pos), pe);
                }
                total += l.len(pe);
            }
            prop_assert_eq!(total, n);
            let a = a.min(n);
            let b = (a + len).min(n);
            if a < b {
                let (f, last) = l.span(a, b);
                let pieces: Vec<_> = l.pieces(a, b).collect();
                prop_assert_eq!(pieces.first().map(|x| x.0), Some(f));
                prop_assert_eq!(pieces.last().map(|x| x.0), Some(last));
                prop_assert_eq!(pieces.iter().map(|x| x.2).sum::<u64>(), b - a);
                for (pe, _, c) in pieces {
                    prop_assert_eq!(l.overlap(pe, a, b), c);
                }
            }
        }
    }
}
