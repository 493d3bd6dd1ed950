//! The overlapped sort and its blocking baseline, run side by side, and the
//! NBCBench overlap they give.

use super::driver::{run, RadixError};
use super::key::Key;
use super::overlap::{overlap_of, PhaseTimes};
use super::params::RadixParams;
use super::report::SortReport;
use crate::cli::tagged_path;
use chorus_core::Config;
use chorus_sections::tune::stats::median;

/// One allgather algorithm measured both ways.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The sort with the allgather overlapped with the local key movement.
    pub overlapped: SortReport,
    /// The baseline: the allgather waited for first.
    pub blocking: SortReport,
    /// NBCBench overlap: t_comm and t_comp from the baseline, t_comp+comm from the
    /// overlapped run (None if the allgather took no time).
    pub overlap: Option<f64>,
}

impl Comparison {
    /// Both runs sorted.
    pub fn sorted(&self) -> bool {
        self.overlapped.sorted && self.blocking.sorted
    }

    /// The baseline's time over the overlapped sort's (0 if the latter took none).
    pub fn speedup(&self) -> f64 {
        if self.overlapped.time_s > 0.0 {
            self.blocking.time_s / self.overlapped.time_s
        } else {
            0.0
        }
    }
}

/// `config` with `-tag` put before the trace file's extension, so that every run
/// of a comparison writes its own trace.
pub fn tagged(config: &Config, tag: &str) -> Config {
    Config {
        trace: config.trace.as_deref().map(|t| tagged_path(t, tag)),
        ..config.clone()
    }
}

/// A report whose time and phase times are the medians of `reports`' (which must
/// not be empty), sorted only if all of them sorted.
fn median_report(reports: &[&SortReport]) -> SortReport {
    let pick =
        |f: fn(&SortReport) -> f64| median(&reports.iter().map(|r| f(r)).collect::<Vec<_>>());
    SortReport {
        sorted: reports.iter().all(|r| r.sorted),
        time_s: pick(|r| r.time_s),
        times: PhaseTimes {
            comm_s: pick(|r| r.times.comm_s),
            comp_s: pick(|r| r.times.comp_s),
            overlapped_s: pick(|r| r.times.overlapped_s),
        },
        ..reports[0].clone()
    }
}

impl Comparison {
    /// Medians over repetitions: each time is the median of its own, and the overlap
    /// is computed from the median phase times. None for no repetition.
    pub fn median(reps: &[Comparison]) -> Option<Comparison> {
        if reps.is_empty() {
            return None;
        }
        let blocking = median_report(&reps.iter().map(|c| &c.blocking).collect::<Vec<_>>());
        let overlapped = median_report(&reps.iter().map(|c| &c.overlapped).collect::<Vec<_>>());
        let overlap = overlap_of(&blocking.times, &overlapped.times);
        Some(Comparison {
            overlapped,
            blocking,
            overlap,
        })
    }
}

/// Run the baseline, then the overlapped sort, on the same input (same seed).
pub fn compare<K: Key>(config: &Config, params: RadixParams) -> Result<Comparison, RadixError> {
    let blocking = run::<K>(
        &tagged(config, "blocking"),
        RadixParams {
            blocking: true,
            ..params
        },
    )?;
    let overlapped = run::<K>(
        &tagged(config, "overlapped"),
        RadixParams {
            blocking: false,
            ..params
        },
    )?;
    let overlap = overlap_of(&blocking.times, &overlapped.times);
    Ok(Comparison {
        overlapped,
        blocking,
        overlap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(time_s: f64, comm_s: f64, comp_s: f64, overlapped_s: f64) -> SortReport {
        SortReport {
            key: "u32",
            pes: 2,
            keys: 4,
            rounds: 4,
            allgather: "ring".into(),
            blocking: false,
            sorted: true,
            time_s,
            times: PhaseTimes {
                comm_s,
                comp_s,
                overlapped_s,
            },
            trace: None,
            sim: None,
        }
    }

    #[test]
    fn medians_per_figure_and_overlap_from_them() {
        let reps: Vec<Comparison> = [(1.0, 9.0), (3.0, 2.0), (2.0, 4.0)]
            .iter()
            .map(|&(x, y)| Comparison {
                overlapped: report(x, 0.0, 0.0, y),
                blocking: report(x * 2.0, y, x, 0.0),
                overlap: None,
            })
            .collect();
        let m = Comparison::median(&reps).expect("three reps");
        assert_eq!(m.overlapped.time_s, 2.0);
        assert_eq!(m.blocking.time_s, 4.0);
        assert_eq!(m.overlapped.times.overlapped_s, 4.0);
        assert_eq!(
            (m.blocking.times.comm_s, m.blocking.times.comp_s),
            (4.0, 2.0)
        );
        // 1 - (4 - 2) / 4
        assert_eq!(m.overlap, Some(0.5));
        assert!(m.sorted());
        let mut bad = reps.clone();
        bad[1].blocking.sorted = false;
        assert!(!Comparison::median(&bad).expect("reps").sorted());
        assert!(Comparison::median(&[]).is_none());
    }

    #[test]
    fn traces_get_a_tag_per_run() {
        let mut c = Config::default();
        assert_eq!(tagged(&c, "x").trace, None);
        c.trace = Some("out/t.json".into());
        assert_eq!(
            tagged(&c, "blocking").trace,
            Some("out/t-blocking.json".into())
        );
    }
}
