//! What a creation request names: the parent, who joins, the algorithm, and where
//! the results go; and what a finished creation reports.

use crate::hash::mix64;
use crate::protocol::{Algorithm, ProtocolError};
use crate::section::SectionId;
use chorus_core::{Callback, Pe};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The PEs a creation runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Parent {
    /// Every PE of the job, over the balanced k-ary tree of PE numbers.
    World,
    /// The members of a section this builder created, over that section's tree.
    Section(SectionId),
}

/// How each PE of the parent decides whether it joins the new section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Membership {
    /// Every PE of the parent joins.
    All,
    /// Each PE joins with probability `fraction`, drawn from `seed` and its PE number
    /// alone (so every algorithm sees the same members).
    Random {
        /// Probability of joining, 0..=1.
        fraction: f64,
        /// Seed of the draw.
        seed: u64,
    },
    /// Exactly these PEs join (sorted, without repeats).
    Pes(Vec<Pe>),
}

impl Membership {
    /// True if `pe` joins.
    pub fn joins(&self, pe: Pe) -> bool {
        match self {
            Membership::All => true,
            Membership::Random { fraction, seed } => drawn(*seed, pe, *fraction),
            Membership::Pes(pes) => pes.binary_search(&pe).is_ok(),
        }
    }
}

/// The benchmark's draw: true with probability `fraction`, a fixed function of
/// `seed` and `pe` (splitmix64, the same on every process and for every algorithm).
pub fn drawn(seed: u64, pe: Pe, fraction: f64) -> bool {
    let x = mix64(seed ^ mix64(u64::from(pe) ^ 0x5EC7_1095));
    ((x >> 11) as f64) / ((1u64 << 53) as f64) < fraction
}

/// A request to create one section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The creation algorithm.
    pub algorithm: Algorithm,
    /// Branching factor of the new tree (and of the world's tree when the parent is
    /// the world), 2..=16.
    pub k: u32,
    /// The PEs that take part.
    pub parent: Parent,
    /// Which of them join.
    pub membership: Membership,
    /// Each member's `Section` (as `Encoded<Section>`) goes here; a group callback
    /// made with `Callback::group_all` reaches the group's member on each member PE.
    pub on_member: Callback,
    /// The `CreationReport` (as `Encoded<CreationReport>`) goes here, once.
    pub on_report: Callback,
    /// A number of the caller's choosing, echoed in the report.
    pub tag: u64,
}

/// What one finished creation cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreationReport {
    /// The caller's tag.
    pub tag: u64,
    /// The new section's id (count = members).
    pub id: SectionId,
    /// The algorithm that ran.
    pub algorithm: Algorithm,
    /// PEs of the parent (every one took part).
    pub parent_pes: u64,
    /// Members of the new section.
    pub members: u64,
    /// Messages of the creation itself between distinct PEs (not the start
    /// broadcast, not the report reduction).
    pub messages: u64,
    /// Encoded bytes of those messages (chorus message bodies, envelope headers
    /// excluded).
    pub bytes: u64,
    /// From the first PE's join to the last PE's finish, microseconds of the layer's
    /// clock (virtual on sim, wall elsewhere).
    pub time_us: f64,
    /// Most bytes of creation state any PE of the parent held at once (its algorithm
    /// state plus its intermediary slots).
    pub max_pe_state_bytes: u64,
}

/// Why a builder cannot run a creation.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HostError {
    /// The parent section is not known on this PE (it did not create it as a member).
    #[error("PE {pe}: parent section {id:?} is not known here")]
    UnknownParent {
        /// The PE.
        pe: Pe,
        /// The section named.
        id: SectionId,
    },
    /// The branching factor is out of range.
    #[error("k = {0} is outside 2..=16")]
    BadK(u32),
    /// A random membership fraction outside 0..=1.
    #[error("membership fraction {0} is outside 0..=1")]
    BadFraction(f64),
    /// This build cannot run the algorithm.
    #[error("algorithm {} is not available", .0.name())]
    Unsupported(Algorithm),
    /// The algorithm's state machine rejected a message.
    #[error("token {token:#x}: {source}")]
    Protocol {
        /// The creation.
        token: u64,
        /// What went wrong.
        source: ProtocolError,
    },
    /// A message for a creation this PE has no record of.
    #[error("PE {pe}: {what} for unknown creation {token:#x}")]
    UnknownCreation {
        /// The PE.
        pe: Pe,
        /// The creation.
        token: u64,
        /// The message.
        what: &'static str,
    },
}

impl Request {
    /// Check the parts a creator can check alone.
    pub fn validate(&self) -> Result<(), HostError> {
        if !(crate::kary::MIN_K..=crate::kary::MAX_K).contains(&self.k) {
            return Err(HostError::BadK(self.k));
        }
        if let Membership::Random { fraction, .. } = self.membership {
            if !(0.0..=1.0).contains(&fraction) {
                return Err(HostError::BadFraction(fraction));
            }
        }
        crate::host::algo::check(self.algorithm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_matches_its_fraction_and_is_fixed() {
        let n = 100_000u32;
        for f in [0.001, 0.1, 0.5, 0.99] {
            let hits = (0..n).filter(|&pe| drawn(7, pe, f)).count() as f64;
            let want = f * f64::from(n);
            assert!((hits - want).abs() < 4.0 * want.sqrt() + 2.0, "{f}: {hits}");
        }
        assert!((0..n).all(|pe| !drawn(7, pe, 0.0) && drawn(7, pe, 1.0)));
        let a: Vec<bool> = (0..64).map(|pe| drawn(3, pe, 0.5)).collect();
        let b: Vec<bool> = (0..64).map(|pe| drawn(3, pe, 0.5)).collect();
        let c: Vec<bool> = (0..64).map(|pe| drawn(4, pe, 0.5)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn listed_membership_is_exact() {
        let m = Membership::Pes(vec![1, 4, 9]);
        let got: Vec<Pe> = (0..12).filter(|&pe| m.joins(pe)).collect();
        assert_eq!(got, vec![1, 4, 9]);
    }
}
