//! Communication/computation overlap the NBCBench way:
//! overlap = 1 − (t_comp+comm − t_comp) / t_comm, where t_comm is the allgather
//! alone, t_comp the local work alone, and t_comp+comm the allgather started, the
//! local work done, then the allgather waited for.

use serde::{Deserialize, Serialize};

/// One PE's times, summed over the sort's rounds, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Histogram allgather alone (from its start until its result arrived; blocking run).
    pub comm_s: f64,
    /// Local key movement alone (blocking run).
    pub comp_s: f64,
    /// Allgather started, local key movement done, allgather finished (overlapped run).
    pub overlapped_s: f64,
}

impl PhaseTimes {
    /// The mean over PEs (NBCBench averages over processes).
    pub fn mean(per_pe: &[PhaseTimes]) -> PhaseTimes {
        if per_pe.is_empty() {
            return PhaseTimes::default();
        }
        let n = per_pe.len() as f64;
        let sum = per_pe
            .iter()
            .fold(PhaseTimes::default(), |a, t| PhaseTimes {
                comm_s: a.comm_s + t.comm_s,
                comp_s: a.comp_s + t.comp_s,
                overlapped_s: a.overlapped_s + t.overlapped_s,
            });
        PhaseTimes {
            comm_s: sum.comm_s / n,
            comp_s: sum.comp_s / n,
            overlapped_s: sum.overlapped_s / n,
        }
    }
}

/// NBCBench's overlap: 1 − (t_comp+comm − t_comp) / t_comm; None when t_comm is not
/// positive. 1 means the communication was fully hidden behind the computation, 0 that
/// nothing was; it exceeds 1 when the overlapped run beats the computation alone and
/// goes below 0 when overlapping made things slower. It cannot pass t_comp / t_comm
/// by much unless the computation also sped up: only as much communication hides as
/// there is computation to hide it behind.
pub fn overlap(comm_s: f64, comp_s: f64, overlapped_s: f64) -> Option<f64> {
    (comm_s > 0.0).then(|| 1.0 - (overlapped_s - comp_s) / comm_s)
}

/// Overlap of mean times: t_comm and t_comp from the blocking run's PEs, t_comp+comm
/// from the overlapped run's.
pub fn overlap_of(blocking: &PhaseTimes, overlapped: &PhaseTimes) -> Option<f64> {
    overlap(blocking.comm_s, blocking.comp_s, overlapped.overlapped_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nbcbench_formula() {
        // Fully hidden: the overlapped run takes the computation's time.
        assert_eq!(overlap(2.0, 3.0, 3.0), Some(1.0));
        // Nothing hidden: the overlapped run takes both.
        assert_eq!(overlap(2.0, 3.0, 5.0), Some(0.0));
        // Half hidden.
        assert_eq!(overlap(2.0, 3.0, 4.0), Some(0.5));
        // Worse than not overlapping.
        assert_eq!(overlap(2.0, 3.0, 6.0), Some(-0.5));
        assert_eq!(overlap(0.0, 3.0, 3.0), None);
    }

    #[test]
    fn means_then_overlap() {
        let blocking = [
            PhaseTimes {
                comm_s: 1.0,
                comp_s: 2.0,
                overlapped_s: 0.0,
            },
            PhaseTimes {
                comm_s: 3.0,
                comp_s: 4.0,
                overlapped_s: 0.0,
            },
        ];
        let m = PhaseTimes::mean(&blocking);
        assert_eq!((m.comm_s, m.comp_s), (2.0, 3.0));
        let o = PhaseTimes {
            overlapped_s: 4.0,
            ..PhaseTimes::default()
        };
        assert_eq!(overlap_of(&m, &o), Some(0.5));
        assert_eq!(PhaseTimes::mean(&[]), PhaseTimes::default());
    }
}
