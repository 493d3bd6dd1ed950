//! What one sort measured, and the global check that it sorted.

use super::overlap::PhaseTimes;
use super::params::RadixParams;
use super::row::PeRow;
use std::path::PathBuf;

/// The outcome of one radix sort run.
#[derive(Debug, Clone, PartialEq)]
pub struct SortReport {
    /// Key type name.
    pub key: &'static str,
    /// PEs that took part.
    pub pes: u32,
    /// Keys sorted in all.
    pub keys: u64,
    /// Digit rounds run.
    pub rounds: u32,
    /// The allgather asked for (`auto` stays `auto`; see the binary for its choice).
    pub allgather: String,
    /// The baseline (allgather waited for before moving keys locally).
    pub blocking: bool,
    /// Globally sorted, and the same keys as the input.
    pub sorted: bool,
    /// From the start signal until the last PE held its sorted block, seconds.
    pub time_s: f64,
    /// Mean over PEs of the per-round phase times.
    pub times: PhaseTimes,
    /// The trace file, when one was written.
    pub trace: Option<PathBuf>,
    /// What the simulator measured (sim layer): events, events/s, makespan, digest.
    pub sim: Option<Box<chorus_core::SimStats>>,
}

impl SortReport {
    /// The report of a run whose PEs reported `rows` (in PE order), started at `go_s`.
    pub fn of(
        key: &'static str,
        params: &RadixParams,
        rounds: u32,
        go_s: f64,
        rows: &[PeRow],
        trace: Option<PathBuf>,
    ) -> Self {
        let end = rows.iter().map(|r| r.finished_ns).max().unwrap_or(0);
        let per_pe: Vec<PhaseTimes> = rows
            .iter()
            .map(|r| PhaseTimes {
                comm_s: r.comm_ns as f64 * 1e-9,
                comp_s: r.comp_ns as f64 * 1e-9,
                overlapped_s: r.overlapped_ns as f64 * 1e-9,
            })
            .collect();
        SortReport {
            key,
            pes: rows.len() as u32,
            keys: rows.iter().map(|r| r.count).sum(),
            rounds,
            allgather: params.allgather.name(),
            blocking: params.blocking,
            sorted: globally_sorted(rows, params.keys_per_pe as u64),
            time_s: (end as f64 * 1e-9 - go_s).max(0.0),
            times: PhaseTimes::mean(&per_pe),
            trace,
            sim: None,
        }
    }
}

/// True if every PE holds its input count of keys, in order, no PE's keys come
/// before the previous holder's, and the keys are the input's (same fingerprint).
pub fn globally_sorted(rows: &[PeRow], keys_per_pe: u64) -> bool {
    let counts = rows.iter().all(|r| r.count == keys_per_pe);
    let local = rows.iter().all(|r| r.locally_sorted);
    let (fin, fout) = rows.iter().fold((0u64, 0u64), |(a, b), r| {
        (
            a.wrapping_add(r.fingerprint_in),
            b.wrapping_add(r.fingerprint_out),
        )
    });
    let held: Vec<&PeRow> = rows.iter().filter(|r| r.count > 0).collect();
    let across = held.windows(2).all(|w| w[0].last <= w[1].first);
    counts && local && fin == fout && across
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(first: u64, last: u64, count: u64, fp: u64) -> PeRow {
        PeRow {
            locally_sorted: true,
            count,
            first,
            last,
            fingerprint_in: fp,
            fingerprint_out: fp,
            comm_ns: 0,
            comp_ns: 0,
            overlapped_ns: 0,
            finished_ns: 0,
        }
    }

    #[test]
    fn the_global_check_catches_each_fault() {
        let good = [row(1, 5, 2, 7), row(5, 9, 2, 8)];
        assert!(globally_sorted(&good, 2));
        assert!(!globally_sorted(&good, 3), "counts");
        let mut bad = good;
        bad[1].first = 4;
        assert!(!globally_sorted(&bad, 2), "boundary");
        let mut bad = good;
        bad[0].locally_sorted = false;
        assert!(!globally_sorted(&bad, 2), "local order");
        let mut bad = good;
        bad[0].fingerprint_out = 9;
        assert!(!globally_sorted(&bad, 2), "lost or altered keys");
        assert!(globally_sorted(&[row(0, 0, 0, 0), row(0, 0, 0, 0)], 0));
    }
}
