//! How many work items each walker's Markov chain holds.

use chorus_core::mix64;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The chain lengths of the walker groups, one chain per initial group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    /// The paper's cyclic triangle: S = 10 * (R mod 32) for leader rank R, i.e.
    /// 0, 40, 80, .., 280, 0, .. with groups of 4.
    Cyclic,
    /// Lengths drawn uniformly from 0..=280 with a seed.
    Random {
        /// Seed of the draw.
        seed: u64,
    },
}

impl Workload {
    /// Items of the chain whose initial group's leader is world PE `leader`; `chain`
    /// numbers the groups from 0.
    pub fn items(&self, chain: u32, leader: u32) -> u64 {
        match self {
            Workload::Cyclic => 10 * u64::from(leader % 32),
            Workload::Random { seed } => {
                let z = mix64(seed ^ u64::from(chain).wrapping_mul(0xA24B_AED4_963E_E407));
                z % 281
            }
        }
    }

    /// Chain lengths for `npes` PEs in initial groups of `group_size`.
    pub fn chains(&self, npes: u32, group_size: u32) -> Vec<u64> {
        (0..npes.div_ceil(group_size))
            .map(|c| self.items(c, c * group_size))
            .collect()
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Cyclic => write!(f, "cyclic"),
            Workload::Random { seed } => write!(f, "random:{seed}"),
        }
    }
}

/// Why a workload name does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown workload {0:?}: use `cyclic` or `random` (with --seed)")]
pub struct BadWorkload(pub String);

impl FromStr for Workload {
    type Err = BadWorkload;
    fn from_str(s: &str) -> Result<Self, BadWorkload> {
        match s {
            "cyclic" => Ok(Workload::Cyclic),
            "random" => Ok(Workload::Random { seed: 0 }),
            _ => s
                .strip_prefix("random:")
                .and_then(|n| n.parse().ok())
                .map(|seed| Workload::Random { seed })
                .ok_or_else(|| BadWorkload(s.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_is_the_papers_triangle() {
        let c = Workload::Cyclic.chains(64, 4);
        assert_eq!(&c[..9], &[0, 40, 80, 120, 160, 200, 240, 280, 0]);
        assert_eq!(c.len(), 16);
    }

    #[test]
    fn random_depends_on_the_seed_only() {
        let a = Workload::Random { seed: 3 }.chains(400, 4);
        assert_eq!(a, Workload::Random { seed: 3 }.chains(400, 4));
        assert_ne!(a, Workload::Random { seed: 4 }.chains(400, 4));
        assert!(a.iter().all(|&s| s <= 280));
    }
}
