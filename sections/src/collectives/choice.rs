//! Which allgather to run: the user's pick or an automatic choice by section size and
//! message length, after the offloaded-allgather paper's measurements (Bruck and the
//! standard exchange have the lowest latency for short messages, the ring wins for
//! long ones; the exchange suits powers of k+1, Bruck handles other sizes better).

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

/// Total bytes (size × block) from which the ring is preferred.
pub const RING_FROM_BYTES: usize = 256 * 1024;

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

    /// The algorithm to run for `size` members with blocks of about `block_bytes`:
    /// `Auto` resolves to the tree without a roster, the ring when the gathered data is
    /// long (>= [`RING_FROM_BYTES`]), recursive doubling for powers of two and Bruck
    /// otherwise. Errors if an explicit choice needs a roster the member lacks.
    pub fn resolve(
        self,
        size: u32,
        block_bytes: usize,
        has_roster: bool,
    ) -> Result<Allgather, CollectiveError> {
        let needs_roster = |algorithm: &'static str| {
            if has_roster {
                Ok(())
            } else {
                Err(CollectiveError::NeedsRoster { algorithm })
            }
        };
        match self {
            Allgather::Auto if !has_roster => Ok(Allgather::Tree),
            Allgather::Auto if block_bytes.saturating_mul(size as usize) >= RING_FROM_BYTES => {
                Ok(Allgather::Ring)
            }
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
    fn auto_picks_by_roster_size_and_length() {
        assert_eq!(Allgather::Auto.resolve(8, 8, false), Ok(Allgather::Tree));
        assert_eq!(
            Allgather::Auto.resolve(8, 8, true),
            Ok(Allgather::StandardExchange(1))
        );
        assert_eq!(Allgather::Auto.resolve(7, 8, true), Ok(Allgather::Bruck(1)));
        assert_eq!(
            Allgather::Auto.resolve(7, 1 << 16, true),
            Ok(Allgather::Ring)
        );
        assert_eq!(
            Allgather::Ring.resolve(7, 8, false),
            Err(CollectiveError::NeedsRoster {
                algorithm: "the ring"
            })
        );
        assert_eq!(
            Allgather::Bruck(0).resolve(7, 8, true),
            Err(CollectiveError::BadPorts(0))
        );
        assert_eq!(Allgather::Bruck(3).name(), "bruck/3");
    }
}
