//! The numbers each PE reports at the end of a sort, as they travel in a
//! concatenating reduction.

/// Numbers each PE reports when done, in this order (see [`PeRow`]).
pub const ROW_LEN: usize = 10;

/// What one PE reports at the end, as `ROW_LEN` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeRow {
    /// The PE's keys are in order.
    pub locally_sorted: bool,
    /// How many keys it holds.
    pub count: u64,
    /// Its first and last key (0 when it holds none).
    pub first: u64,
    /// See `first`.
    pub last: u64,
    /// Fingerprint of its input keys.
    pub fingerprint_in: u64,
    /// Fingerprint of the keys it holds at the end.
    pub fingerprint_out: u64,
    /// Allgather from start to result, summed over rounds, ns.
    pub comm_ns: u64,
    /// Local key movement alone (blocking runs), summed over rounds, ns.
    pub comp_ns: u64,
    /// Allgather start until both it and the local movement were done, summed, ns.
    pub overlapped_ns: u64,
    /// When the PE finished, ns since the job began.
    pub finished_ns: u64,
}

impl PeRow {
    /// The row as `ROW_LEN` numbers, for a concatenating reduction.
    pub fn to_vec(self) -> Vec<u64> {
        vec![
            u64::from(self.locally_sorted),
            self.count,
            self.first,
            self.last,
            self.fingerprint_in,
            self.fingerprint_out,
            self.comm_ns,
            self.comp_ns,
            self.overlapped_ns,
            self.finished_ns,
        ]
    }

    /// Read a row back from `ROW_LEN` numbers.
    pub fn from_slice(v: &[u64]) -> Self {
        PeRow {
            locally_sorted: v[0] != 0,
            count: v[1],
            first: v[2],
            last: v[3],
            fingerprint_in: v[4],
            fingerprint_out: v[5],
            comm_ns: v[6],
            comp_ns: v[7],
            overlapped_ns: v[8],
            finished_ns: v[9],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_survive_the_trip_through_numbers() {
        let r = PeRow {
            locally_sorted: true,
            count: 2,
            first: 3,
            last: 4,
            fingerprint_in: 5,
            fingerprint_out: 6,
            comm_ns: 7,
            comp_ns: 8,
            overlapped_ns: 9,
            finished_ns: 10,
        };
        let v = r.to_vec();
        assert_eq!(v.len(), ROW_LEN);
        assert_eq!(PeRow::from_slice(&v), r);
    }
}
