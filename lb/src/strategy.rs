//! Load-balancing strategies: what a walker group does when its chain ends, and how
//! often (if ever) all PEs stop to exchange load and regroup.

use crate::regroup::{self, GroupLoad};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::str::FromStr;
use thiserror::Error;

/// A load-balancing policy for walker groups; implement it to plug in another one.
pub trait Strategy: Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Name in reports, e.g. `collective:16`.
    fn name(&self) -> String;

    /// Steps a busy group runs between two exchanges of load among all PEs, or None
    /// if this strategy never exchanges.
    fn exchange_every(&self) -> Option<u32> {
        None
    }

    /// True if a group whose chain has ended asks the group to its right to merge
    /// (only the two groups take part).
    fn merge_when_done(&self) -> bool {
        false
    }

    /// The groups after an exchange, from the groups before it (in PE order, tiling
    /// the PEs); every busy chain must keep exactly one group.
    fn regroup(&self, groups: &[GroupLoad]) -> Vec<GroupLoad> {
        regroup::idle_join_busy(groups)
    }
}

/// Groups never change: the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoBalancing;

impl Strategy for NoBalancing {
    fn name(&self) -> String {
        "none".into()
    }
}

/// Every `interval` steps all PEs exchange load and idle groups join busy ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collective {
    /// Steps between exchanges.
    pub interval: u32,
}

impl Strategy for Collective {
    fn name(&self) -> String {
        format!("collective:{}", self.interval)
    }
    fn exchange_every(&self) -> Option<u32> {
        Some(self.interval)
    }
}

/// A group that finishes asks the group to its right to merge; the busy group takes
/// it in after its current step (noncollective: nobody else hears of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsyncMerge;

impl Strategy for AsyncMerge {
    fn name(&self) -> String {
        "async".into()
    }
    fn merge_when_done(&self) -> bool {
        true
    }
}

/// A built-in strategy named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StrategySpec {
    /// `none`
    None,
    /// `collective:I`
    Collective(u32),
    /// `async`
    Async,
}

impl StrategySpec {
    /// What `all` runs: none, collective at 1, 16 and 128 steps, and async.
    pub const ALL: [StrategySpec; 5] = [
        StrategySpec::None,
        StrategySpec::Collective(1),
        StrategySpec::Collective(16),
        StrategySpec::Collective(128),
        StrategySpec::Async,
    ];

    /// Parse a comma-separated list; `all` expands to [`StrategySpec::ALL`].
    pub fn parse_list(s: &str) -> Result<Vec<StrategySpec>, BadStrategy> {
        let mut out = Vec::new();
        for part in s.split(',') {
            if part.trim() == "all" {
                out.extend(Self::ALL);
            } else {
                out.push(part.trim().parse()?);
            }
        }
        Ok(out)
    }

    /// Name in reports.
    pub fn name(&self) -> String {
        match self {
            StrategySpec::None => NoBalancing.name(),
            StrategySpec::Collective(i) => Collective { interval: *i }.name(),
            StrategySpec::Async => AsyncMerge.name(),
        }
    }
}

/// Why a strategy name does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BadStrategy {
    /// A name that is no strategy.
    #[error(
        "unknown load-balancing strategy {0:?}: use none, collective:I (I >= 1 steps), async or all"
    )]
    Unknown(String),
    /// `collective:I` with an interval that is no whole number of steps in range.
    #[error("{given:?}: collective:I needs a whole number of steps I: {why}")]
    Interval {
        /// The strategy as given.
        given: String,
        /// What is wrong with I, naming its range.
        why: String,
    },
}

/// The most steps between two regroupings of `collective:I`.
pub const MAX_INTERVAL: u32 = u32::MAX;

impl FromStr for StrategySpec {
    type Err = BadStrategy;
    fn from_str(s: &str) -> Result<Self, BadStrategy> {
        match s {
            "none" => Ok(StrategySpec::None),
            "async" => Ok(StrategySpec::Async),
            _ => {
                let i = s
                    .strip_prefix("collective:")
                    .ok_or_else(|| BadStrategy::Unknown(s.into()))?;
                let steps =
                    chorus_core::cli::u64_in(i, 1, u64::from(MAX_INTERVAL)).map_err(|why| {
                        BadStrategy::Interval {
                            given: s.into(),
                            why,
                        }
                    })?;
                // In range: u64_in held it to MAX_INTERVAL.
                Ok(StrategySpec::Collective(steps as u32))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_and_bad_names_are_named() {
        let l = StrategySpec::parse_list("all").expect("parses");
        assert_eq!(l.len(), 5);
        assert_eq!(
            StrategySpec::parse_list("none,collective:4").expect("parses"),
            vec![StrategySpec::None, StrategySpec::Collective(4)]
        );
        for bad in [
            "collective:0",
            "collective:4294967296",
            "collective:-1",
            "collective:",
        ] {
            let e = StrategySpec::parse_list(bad).expect_err(bad);
            // It once said "unknown strategy", as if collective were no name.
            assert!(matches!(e, BadStrategy::Interval { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("1..=4294967295"), "{bad}: {e}");
        }
        assert!(StrategySpec::parse_list("greedy").is_err());
    }
}
