//! From measurements to decisions: each case's latency over runs, the guideline
//! violations (a mock-up at least 10% faster than the baseline for a section size and
//! message size), and the profile choosing, per message size, the fastest violating
//! mock-up or the default.

use super::measure::{summarise, Sample};
use super::mockups::{Collective, Impl, MockUp};
use super::profile::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A mock-up violates a guideline when it takes at most this share of the baseline's time.
pub const VIOLATION_RATIO: f64 = 0.9;

/// A case's latency over runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
            }
        })
        .collect()
}

fn find(lat: &[Latency], c: Collective, choice: Option<Impl>, bytes: u64) -> Option<f64> {
    lat.iter()
        .find(|l| l.collective == c && l.choice == choice && l.bytes == bytes)
        .map(|l| l.median_us)
}

/// Every mock-up at least 10% faster than `baseline` (`Some(Impl::Default)` for the
/// defaults, None for the tuned runtime) on sections of `pes`.
pub fn violations(lat: &[Latency], pes: u32, baseline: Option<Impl>) -> Vec<Violation> {
    lat.iter()
        .filter_map(|l| {
            let Some(Impl::MockUp(mock_up)) = l.choice else {
                return None;
            };
            let base = find(lat, l.collective, baseline, l.bytes)?;
            (l.median_us <= VIOLATION_RATIO * base).then_some(Violation {
                collective: l.collective,
                mock_up,
                pes,
                bytes: l.bytes,
                default_us: base,
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
        let sizes: BTreeSet<u64> = lat
            .iter()
            .filter(|l| l.collective == c && l.choice == Some(Impl::Default))
            .map(|l| l.bytes)
            .collect();
        let choices: Vec<(u64, Impl)> = sizes
            .into_iter()
            .map(|b| {
                let best = found
                    .iter()
                    .filter(|v| v.collective == c && v.bytes == b)
                    .min_by(|x, y| x.mock_up_us.total_cmp(&y.mock_up_us));
                (b, best.map_or(Impl::Default, |v| Impl::MockUp(v.mock_up)))
            })
            .collect();
        profile.set(c, pes, &choices);
    }
}
