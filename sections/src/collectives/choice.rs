//! Which allgather to run: the user's pick or an automatic choice by section size.
//! The offloaded-allgather paper has Bruck and the standard exchange lowest in latency
//! for short messages and the ring winning for long ones (on offloading NICs). In
//! chorus the ring lost to them at every length measured: `chorus-tune` found it 1.5x
//! slower than Bruck at 256 KiB blocks on 8 PEs (threads) and 2.3x at 64 KiB blocks
//! on 64 simulated Blue Gene/P PEs. Its p − 1 steps each wait a full message latency,
//! and chorus has no NIC offload to hide them. So the automatic choice never takes the
//! ring. The exchange suits powers of two; Bruck handles other sizes.

use super::error::CollectiveError;
use serde::{Deserialize, Serialize};

/// An allgather algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Allgather {
    /// Choose by size, block length and whether the member has a roster.
    Auto,
    /// Gather up the section tree, broadcast down it: needs only tree neighbours.
    Tree,
    /// Bruck with this many ports (1 = classic Bruck); needs a roster.
    Bruck(u32),
    /// k-port standard exchange (1 = recursive doubling); needs a roster.
    StandardExchange(u32),
    /// Ring; needs a roster.
    Ring,
}

impl Allgather {
    /// Short name, e.g. `bruck/2`.
    pub fn name(self) -> String {
        match self {
            Allgather::Auto => "auto".into(),
            Allgather::Tree => "tree".into(),
            Allgather::Bruck(k) => format!("bruck/{k}"),
            Allgather::StandardExchange(k) => format!("standard-exchange/{k}"),
            Allgather::Ring => "ring".into(),
        }
    }

    /// The algorithm to run for `size` members: `Auto` resolves to the tree without a roster, recursive doubling for powers of
    /// two and Bruck otherwise, whatever the length (a tuning profile can choose
    /// per length). Errors if an explicit choice needs a roster the member lacks.
    pub fn resolve(self, size: u32, has_roster: bool) -> Result<Allgather, CollectiveError> {
        let needs_roster = |algorithm: &'static str| {
            if has_roster {
                Ok(())
            } else {
                Err(CollectiveError::NeedsRoster { algorithm })
            }
        };
        match self {
            Allgather::Auto if !has_roster => Ok(Allgather::Tree),
            Allgather::Auto if size.is_power_of_two() => Ok(Allgather::StandardExchange(1)),
            Allgather::Auto => Ok(Allgather::Bruck(1)),
            Allgather::Tree => Ok(Allgather::Tree),
            Allgather::Bruck(0) | Allgather::StandardExchange(0) => {
                Err(CollectiveError::BadPorts(0))
            }
            Allgather::Bruck(_) => needs_roster("Bruck").map(|_| self),
            Allgather::StandardExchange(_) => needs_roster("the standard exchange").map(|_| self),
            Allgather::Ring => needs_roster("the ring").map(|_| self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_by_roster_and_size() {
        assert_eq!(Allgather::Auto.resolve(8, false), Ok(Allgather::Tree));
        assert_eq!(
            Allgather::Auto.resolve(8, true),
            Ok(Allgather::StandardExchange(1))
        );
        assert_eq!(Allgather::Auto.resolve(7, true), Ok(Allgather::Bruck(1)));
        assert_eq!(
            Allgather::Auto.resolve(1024, true),
            Ok(Allgather::StandardExchange(1))
        );
        assert_eq!(
            Allgather::Ring.resolve(7, false),
            Err(CollectiveError::NeedsRoster {
                algorithm: "the ring"
            })
        );
        assert_eq!(
            Allgather::Bruck(0).resolve(7, true),
            Err(CollectiveError::BadPorts(0))
        );
        assert_eq!(Allgather::Bruck(3).name(), "bruck/3");
    }
}
