//! From measurements to decisions: each case's latency over runs, the guideline
//! violations (a mock-up at least 10% faster than the baseline for a section size and
//! message size — by the median over runs and in most of the runs, so that one noisy
//! run on a shared machine does not make one), and the profile choosing, per message
//! size, the fastest violating mock-up or the default.

use super::measure::{summarise, Sample};
use super::stats;
use crate::collectives::tuned::mockups::{Collective, Impl, MockUp};
use crate::collectives::tuned::profile::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A mock-up violates a guideline when it takes at most this share of the baseline's time.
pub const VIOLATION_RATIO: f64 = 0.9;

/// A case's latency over runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// The collective.
    pub collective: Collective,
    /// What ran it (None: the profile's choice).
    pub choice: Option<Impl>,
    /// Bytes per member.
    pub bytes: u64,
    /// Median over runs of each run's median, µs.
    pub median_us: f64,
    /// Smallest latency of any run, µs.
    pub min_us: f64,
    /// Each run's median, µs.
    pub run_medians_us: Vec<f64>,
}

/// A mock-up at least 10% faster than the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The collective.
    pub collective: Collective,
    /// The faster mock-up.
    pub mock_up: MockUp,
    /// Section size.
    pub pes: u32,
    /// Bytes per member.
    pub bytes: u64,
    /// The baseline's latency (the default, or the tuned choice), µs.
    pub default_us: f64,
    /// The mock-up's latency, µs.
    pub mock_up_us: f64,
}

/// Each case's latency over `runs` (runs of the same cases, in the same order).
pub fn latencies(runs: &[Vec<Sample>]) -> Vec<Latency> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let same: Vec<&Sample> = runs.iter().filter_map(|r| r.get(i)).collect();
            let (median_us, min_us) = summarise(&same);
            Latency {
                collective: s.case.collective,
                choice: s.case.choice,
                bytes: s.case.bytes,
                median_us,
                min_us,
                run_medians_us: same.iter().map(|s| stats::median(&s.us)).collect(),
            }
        })
        .collect()
}

fn find(lat: &[Latency], c: Collective, choice: Option<Impl>, bytes: u64) -> Option<&Latency> {
    lat.iter()
        .find(|l| l.collective == c && l.choice == choice && l.bytes == bytes)
}

/// True if `fast` takes at most [`VIOLATION_RATIO`] of `slow`'s time by the median
/// over runs and in more than half of the runs.
fn faster(fast: &Latency, slow: &Latency) -> bool {
    let runs = fast.run_medians_us.len().min(slow.run_medians_us.len());
    let wins = fast
        .run_medians_us
        .iter()
        .zip(&slow.run_medians_us)
        .filter(|(f, s)| **f <= VIOLATION_RATIO * **s)
        .count();
    fast.median_us <= VIOLATION_RATIO * slow.median_us && 2 * wins > runs
}

/// Every mock-up at least 10% faster than `baseline` (in most runs) (`Some(Impl::Default)` for the
/// defaults, None for the tuned runtime) on sections of `pes`.
pub fn violations(lat: &[Latency], pes: u32, baseline: Option<Impl>) -> Vec<Violation> {
    lat.iter()
        .filter_map(|l| {
            let Some(Impl::MockUp(mock_up)) = l.choice else {
                return None;
            };
            let base = find(lat, l.collective, baseline, l.bytes)?;
            faster(l, base).then_some(Violation {
                collective: l.collective,
                mock_up,
                pes,
                bytes: l.bytes,
                default_us: base.median_us,
                mock_up_us: l.median_us,
            })
        })
        .collect()
}

/// Set in `profile`, for every collective measured on sections of `pes`, the fastest
/// violating mock-up per message size (the default where none violates).
pub fn repair(lat: &[Latency], pes: u32, profile: &mut Profile) {
    let found = violations(lat, pes, Some(Impl::Default));
    let colls: BTreeSet<Collective> = lat.iter().map(|l| l.collective).collect();
    for c in colls {
        rechoose(lat, c, Some(Impl::Default), &found, pes, profile, |_| {
            Impl::Default
        });
    }
}

/// Change in `profile`, from a re-measurement `check` of the tuned runtime, the choice
/// of every (collective, message size) that a mock-up still beats by 10% to the
/// fastest such mock-up, keeping the other choices; false if nothing needed it.
pub fn repair_remaining(check: &[Latency], pes: u32, profile: &mut Profile) -> bool {
    let found = violations(check, pes, None);
    let colls: BTreeSet<Collective> = found.iter().map(|v| v.collective).collect();
    for &c in &colls {
        let current = profile.clone();
        rechoose(check, c, None, &found, pes, profile, |b| {
            current.choose(c, pes, b)
        });
    }
    !colls.is_empty()
}

/// Set the choices of collective `c` for every size measured with `baseline`: the
/// fastest mock-up of `found` at that size, else `otherwise(size)`.
fn rechoose(
    lat: &[Latency],
    c: Collective,
    baseline: Option<Impl>,
    found: &[Violation],
    pes: u32,
    profile: &mut Profile,
    otherwise: impl Fn(u64) -> Impl,
) {
    let sizes: BTreeSet<u64> = lat
        .iter()
        .filter(|l| l.collective == c && l.choice == baseline)
        .map(|l| l.bytes)
        .collect();
    let choices: Vec<(u64, Impl)> = sizes
        .into_iter()
        .map(|b| {
            let best = found
                .iter()
                .filter(|v| v.collective == c && v.bytes == b)
                .min_by(|x, y| x.mock_up_us.total_cmp(&y.mock_up_us));
            (
                b,
                best.map_or_else(|| otherwise(b), |v| Impl::MockUp(v.mock_up)),
            )
        })
        .collect();
    profile.set(c, pes, &choices);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::measure::Case;
    use crate::tune::MockUp;

    fn sample(choice: Impl, bytes: u64, us: &[f64]) -> Sample {
        Sample {
            case: Case {
                collective: Collective::Reduce,
                choice: Some(choice),
                bytes,
            },
            us: us.to_vec(),
        }
    }

    #[test]
    fn a_violation_needs_the_median_and_most_runs() {
        let m = Impl::MockUp(MockUp::ReduceAsAllreduce);
        // Size 8: the mock-up wins by 20% in two runs of three. Size 64: its median
        // over runs (9) is 10% below the default's (10), but run by run it is 10%
        // faster only once.
        let run = |a: f64, b: f64, c: f64, d: f64| {
            vec![
                sample(Impl::Default, 8, &[a]),
                sample(m, 8, &[b]),
                sample(Impl::Default, 64, &[c]),
                sample(m, 64, &[d]),
            ]
        };
        let runs = [
            run(10.0, 8.0, 9.0, 9.0),
            run(10.0, 8.0, 10.0, 9.0),
            run(10.0, 10.0, 10.0, 12.0),
        ];
        let lat = latencies(&runs);
        let v = violations(&lat, 4, Some(Impl::Default));
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].bytes, v[0].default_us, v[0].mock_up_us),
            (8, 10.0, 8.0)
        );
        let mut p = Profile::new();
        repair(&lat, 4, &mut p);
        assert_eq!(p.choose(Collective::Reduce, 4, 8), m);
        assert_eq!(p.choose(Collective::Reduce, 4, 63), m);
        assert_eq!(p.choose(Collective::Reduce, 4, 64), Impl::Default);
    }

    #[test]
    fn a_remaining_violation_changes_only_its_own_size() {
        let m = Impl::MockUp(MockUp::ReduceAsAllreduce);
        let tuned = |bytes: u64, us: f64| Sample {
            case: Case {
                collective: Collective::Reduce,
                choice: None,
                bytes,
            },
            us: vec![us],
        };
        // The profile chose the default at 8 and 512; in the re-measurement the
        // mock-up beats the tuned runtime at 512 only.
        let run = vec![
            tuned(8, 10.0),
            sample(m, 8, &[10.0]),
            tuned(512, 10.0),
            sample(m, 512, &[5.0]),
        ];
        let check = latencies(&[run.clone(), run]);
        let mut p = Profile::new();
        p.set(
            Collective::Reduce,
            4,
            &[(8, Impl::Default), (512, Impl::Default)],
        );
        assert!(repair_remaining(&check, 4, &mut p));
        assert_eq!(p.choose(Collective::Reduce, 4, 8), Impl::Default);
        assert_eq!(p.choose(Collective::Reduce, 4, 511), Impl::Default);
        assert_eq!(p.choose(Collective::Reduce, 4, 512), m);
        let fixed = p.clone();
        let calm = vec![tuned(8, 10.0), sample(m, 8, &[10.0])];
        assert!(!repair_remaining(&latencies(&[calm]), 4, &mut p));
        assert_eq!(p, fixed);
    }
}
