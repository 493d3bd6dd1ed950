//! What a creation request names: the parent, who joins, the algorithm, and where
//! the results go; and what a finished creation reports.

use crate::creation::protocol::{Algorithm, Filler, ProtocolError};
use crate::hash::mix64;
use crate::host::tally::PhaseReport;
use crate::section::SectionId;
use chorus_core::{Callback, Pe};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The PEs a creation runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Exactly these PEs join. The creator sorts the list and drops repeats before
    /// the start leaves it, so any order is accepted; every PE holds the whole list,
    /// so it suits small sections (split by colour and key at scale: `crate::Sections`).
    Pes(Vec<Pe>),
    /// Split by colour in one pass: each PE names a colour or none, and one section
    /// is made per colour.
    Colours(Colouring),
    /// Split by colour and key, `MPI_Comm_split` style: each PE of the parent names
    /// its own colour (below `colours`, or none) and key in a call of its own
    /// ([`crate::host::Split`]), so no PE learns another's; members are ranked by
    /// (key, PE). `seq` numbers the splits of one parent (every PE of the parent
    /// makes them in the same order) and matches the start with each PE's call.
    Called {
        /// Number of colours (sections made), at least 1.
        colours: u32,
        /// The split's number among the parent's splits, from 0.
        seq: u64,
    },
    /// The PEs `first..=last` join (none if `first > last`): a run of any length
    /// named in two words, so every PE can hold it at any scale.
    Run {
        /// First PE.
        first: Pe,
        /// Last PE, inclusive.
        last: Pe,
    },
}

/// How each PE names its colour in a split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Colouring {
    /// Each PE names no colour with probability `none`, else one of `colours` drawn
    /// from `seed` and its PE number.
    Random {
        /// Number of colours (sections made), at least 1.
        colours: u32,
        /// Probability of naming no colour, 0..=1.
        none: f64,
        /// Seed of the draw.
        seed: u64,
    },
    /// PE p names colour `of[p]` (None, or p outside the list: no colour). Every PE
    /// receives the whole list (O(n) each, O(n²) over the job): at scale, let each
    /// PE name its own colour with a [`crate::host::Split`].
    Listed {
        /// Number of colours (sections made), at least 1.
        colours: u32,
        /// Colour of each PE.
        of: Vec<Option<u32>>,
    },
}

/// Most colours one split may make.
pub const MAX_COLOURS: u32 = 4096;

impl Membership {
    /// True if `pe` joins (a section of any colour).
    pub fn joins(&self, pe: Pe) -> bool {
        self.colour(pe).is_some()
    }

    /// The section `pe` joins: its colour in a split, 0 otherwise; None if it joins
    /// none, or if only `pe` itself knows (`Called`).
    pub fn colour(&self, pe: Pe) -> Option<u32> {
        let yes = |b: bool| b.then_some(0);
        match self {
            Membership::All => Some(0),
            Membership::Random { fraction, seed } => yes(drawn(*seed, pe, *fraction)),
            Membership::Pes(pes) => yes(pes.binary_search(&pe).is_ok()),
            Membership::Run { first, last } => yes((*first..=*last).contains(&pe)),
            Membership::Colours(Colouring::Random {
                colours,
                none,
                seed,
            }) => {
                if drawn(*seed, pe, *none) {
                    return None;
                }
                let x = mix64(mix64(*seed ^ 0xC010_0125) ^ u64::from(pe));
                Some((x % u64::from((*colours).max(1))) as u32)
            }
            Membership::Colours(Colouring::Listed { of, .. }) => of.get(pe as usize).copied()?,
            Membership::Called { .. } => None,
        }
    }

    /// Number of sections the creation makes: the colours of a split, else 1.
    pub fn sections(&self) -> u32 {
        match self {
            Membership::Colours(Colouring::Random { colours, .. })
            | Membership::Colours(Colouring::Listed { colours, .. })
            | Membership::Called { colours, .. } => *colours,
            _ => 1,
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
    /// made with `Callback::group_all` reaches the group's member on each member PE
    /// ([`crate::callback`]).
    pub on_member: Callback,
    /// The `CreationReport` (as `Encoded<CreationReport>`) goes here, once.
    pub on_report: Callback,
    /// A number of the caller's choosing, echoed in the report.
    pub tag: u64,
    /// Members keep the new section, so it can be a parent, merged or rebuilt
    /// (false: they only hear of it at `on_member`, and the builder holds nothing).
    pub keep: bool,
}

/// Branching factor of new trees unless a request says otherwise: shallow enough
/// that a message crosses a 10^5-member section in 9 hops, narrow enough that no
/// parent waits on many children.
pub const DEFAULT_K: u32 = 4;

/// Parents of at most this many PEs use the centralized algorithm by default.
pub const CENTRALIZED_UP_TO: u32 = 64;

/// The creation algorithm for a parent of `pes` PEs when the caller names none:
/// Centralized on small parents (fewest messages; its root holds every member,
/// which costs nothing at this size), Shrink-and-Hash on larger ones (O(1) state per
/// PE, no PE holds the member list).
pub fn default_algorithm(pes: u32) -> Algorithm {
    if pes <= CENTRALIZED_UP_TO {
        Algorithm::Centralized
    } else {
        Algorithm::ShrinkAndHash(Filler::None)
    }
}

impl Default for Request {
    /// Every PE of the world joins one section made by Shrink-and-Hash with
    /// [`DEFAULT_K`]; members keep it; results go nowhere until set.
    fn default() -> Self {
        Request {
            algorithm: Algorithm::ShrinkAndHash(Filler::None),
            k: DEFAULT_K,
            parent: Parent::World,
            membership: Membership::All,
            on_member: Callback::Ignore,
            on_report: Callback::Ignore,
            tag: 0,
            keep: true,
        }
    }
}

impl Request {
    /// A request for a section of `membership`, the rest as [`Request::default`].
    pub fn new(membership: Membership) -> Self {
        Request {
            membership,
            ..Request::default()
        }
    }

    /// This request with creation algorithm `algorithm`.
    pub fn algorithm(self, algorithm: Algorithm) -> Self {
        Request { algorithm, ..self }
    }

    /// This request with branching factor `k`.
    pub fn k(self, k: u32) -> Self {
        Request { k, ..self }
    }

    /// This request made from `parent`.
    pub fn parent(self, parent: Parent) -> Self {
        Request { parent, ..self }
    }

    /// This request delivering each member's section to `on_member`.
    pub fn on_member(self, on_member: Callback) -> Self {
        Request { on_member, ..self }
    }

    /// This request delivering the creation's report to `on_report`.
    pub fn on_report(self, on_report: Callback) -> Self {
        Request { on_report, ..self }
    }

    /// This request with tag `tag`, echoed in the report.
    pub fn tag(self, tag: u64) -> Self {
        Request { tag, ..self }
    }

    /// This request with members keeping the section (`keep`) or not.
    pub fn keep(self, keep: bool) -> Self {
        Request { keep, ..self }
    }
}

/// What one finished creation cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreationReport {
    /// The caller's tag.
    pub tag: u64,
    /// The new section's id (count = members); the first colour's in a split.
    pub id: SectionId,
    /// Every section made, one per colour (just `id` unless it was a split).
    pub sections: Vec<SectionId>,
    /// The algorithm that ran (None for a merge).
    pub algorithm: Option<Algorithm>,
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
    /// Of `time_us`, from the first join to the last (the start reaching every PE).
    pub join_spread_us: f64,
    /// Most bytes of creation state any PE of the parent held at once (its algorithm
    /// state plus its intermediary slots).
    pub max_pe_state_bytes: u64,
    /// Per phase with any message, in order, then `finish`: messages and the time
    /// from the previous phase's end to its own (they sum to `time_us`).
    pub phases: Vec<PhaseReport>,
    /// The PE whose failure ended the creation (None: it finished); the figures
    /// above are then zero. A member that finished its part before it heard of the
    /// failure got its section and keeps it: the caller frees or ignores it.
    #[serde(default)]
    pub failed: Option<Pe>,
}

/// Why a builder cannot run a creation.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HostError {
    /// The parent section is not known on this PE (it did not create it as a member).
    #[error("PE {pe}: parent section {id} is not known here")]
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
    /// A split with no colours, too many, or a PE naming a colour out of range.
    #[error("a split needs 1..={MAX_COLOURS} colours and colours below that: {0}")]
    BadColours(String),
    /// The algorithm and filler do not go together (Shrink-and-Balance needs a filler).
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
    /// A routed merge message found no way on (the trees are not what they claim).
    #[error("section {id} rank {rank}: no route to merged rank {dest}")]
    Route {
        /// The member's old section.
        id: SectionId,
        /// The member's old rank.
        rank: u32,
        /// The merged rank sought.
        dest: u32,
    },
    /// A PE belongs to both sections of a merge.
    #[error("PE {pe} is a member of both sections of merge {token:#x}")]
    Overlap {
        /// The PE.
        pe: Pe,
        /// The merge.
        token: u64,
    },
    /// A member list names a PE the job does not have.
    #[error("the member list names PE {pe}, but the job has PEs 0..{pes}")]
    NoSuchPe {
        /// The PE named.
        pe: Pe,
        /// PEs in the job.
        pes: u32,
    },
    /// A PE failed while a creation was in flight here: it ended on this PE. Ask
    /// again: a creation from the world started after the failure leaves it out.
    #[error("PE {pe}: creation {token:#x} (tag {tag}) ended: PE {failed} failed")]
    PeFailed {
        /// The PE the creation ended on.
        pe: Pe,
        /// The creation.
        token: u64,
        /// The caller's tag.
        tag: u64,
        /// The PE that failed.
        failed: Pe,
    },
    /// The section was freed on this PE: it cannot be freed again, split or used as a
    /// parent.
    #[error("PE {pe}: section {id} was freed here")]
    Freed {
        /// The PE.
        pe: Pe,
        /// The section.
        id: SectionId,
    },
    /// A free names a section this PE does not keep (not a member, a section made
    /// with `keep(false)`, which `Collectives::free` frees, or not a built section).
    #[error("PE {pe} cannot free section {id}: it is not a member of it, or the section was made with keep(false) (free it with Collectives::free), or this PE freed it longer ago than it remembers")]
    UnknownSection {
        /// The PE.
        pe: Pe,
        /// The section named.
        id: SectionId,
    },
    /// The reduction `Sections::split_reduce` starts over a section it made was
    /// refused by the collectives host (the value, reducer or section is wrong).
    #[error("the reduction over a section the split made was refused: {0}")]
    Reduction(#[from] crate::collectives::CollectiveError),
    /// A member freed a section while splits of it that other members started were
    /// never called on this PE: they can never finish.
    #[error("PE {pe} freed section {id} without calling {splits} split(s) of it that its other members started; every member must make the same splits of a section before freeing it")]
    UncalledSplits {
        /// The PE.
        pe: Pe,
        /// The section.
        id: SectionId,
        /// How many splits were started and not called here.
        splits: usize,
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

// With the rest of a request's checks rather than in `algo`, which builds the state
// machines: `algo` depends on this module, not the other way round.
/// Whether this build can run `alg`.
pub(crate) fn check_algorithm(alg: Algorithm) -> Result<(), HostError> {
    match alg {
        // Balancing moves members only, so holes must leave the tree.
        Algorithm::ShrinkAndBalance(Filler::None) => Err(HostError::Unsupported(alg)),
        _ => Ok(()),
    }
}

impl Request {
    /// Sort and deduplicate a member list (every PE looks itself up in it by binary
    /// search) and check that a list or a run names PEs of a job of `npes`.
    pub fn normalize(&mut self, npes: u32) -> Result<(), HostError> {
        let last = match &mut self.membership {
            Membership::Pes(pes) => {
                pes.sort_unstable();
                pes.dedup();
                pes.last().copied()
            }
            Membership::Run { first, last } => (first <= last).then_some(*last),
            _ => None,
        };
        match last {
            Some(pe) if pe >= npes => Err(HostError::NoSuchPe { pe, pes: npes }),
            _ => Ok(()),
        }
    }

    /// Check the parts a creator can check alone.
    pub fn validate(&self) -> Result<(), HostError> {
        if !(crate::kary::MIN_K..=crate::kary::MAX_K).contains(&self.k) {
            return Err(HostError::BadK(self.k));
        }
        match &self.membership {
            Membership::Random { fraction: f, .. }
            | Membership::Colours(Colouring::Random { none: f, .. })
                if !(0.0..=1.0).contains(f) =>
            {
                return Err(HostError::BadFraction(*f));
            }
            _ => {}
        }
        let colours = self.membership.sections();
        if !(1..=MAX_COLOURS).contains(&colours) {
            return Err(HostError::BadColours(format!("{colours} colours")));
        }
        if let Membership::Colours(Colouring::Listed { of, .. }) = &self.membership {
            if let Some((pe, c)) = of
                .iter()
                .enumerate()
                .find_map(|(pe, c)| c.filter(|&c| c >= colours).map(|c| (pe, c)))
            {
                return Err(HostError::BadColours(format!(
                    "PE {pe} names colour {c} of {colours}"
                )));
            }
        }
        check_algorithm(self.algorithm)
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
    fn colours_cover_their_range_and_none_leaves_pes_out() {
        let m = Membership::Colours(Colouring::Random {
            colours: 3,
            none: 0.25,
            seed: 9,
        });
        let mut seen = [0u32; 4];
        for pe in 0..4000 {
            match m.colour(pe) {
                Some(c) => seen[c as usize] += 1,
                None => seen[3] += 1,
            }
        }
        assert!(seen[..3].iter().all(|&n| n > 900), "{seen:?}");
        assert!((800..1200).contains(&seen[3]), "{seen:?}");
        assert_eq!(m.sections(), 3);
        let bad = Membership::Colours(Colouring::Listed {
            colours: 2,
            of: vec![Some(0), Some(2)],
        });
        let req = |membership| Request {
            algorithm: Algorithm::ShrinkAndHash(Filler::None),
            k: 2,
            parent: Parent::World,
            membership,
            on_member: Callback::Ignore,
            on_report: Callback::Ignore,
            tag: 0,
            keep: true,
        };
        assert!(matches!(req(bad).validate(), Err(HostError::BadColours(_))));
        assert!(req(m).validate().is_ok());
    }

    #[test]
    fn a_default_request_with_a_few_fields_set_is_valid() {
        let req = Request::new(Membership::Pes(vec![3, 1]))
            .k(3)
            .tag(7)
            .algorithm(default_algorithm(100_000));
        assert_eq!(req.algorithm, Algorithm::ShrinkAndHash(Filler::None));
        assert_eq!((req.k, req.tag, req.keep), (3, 7, true));
        assert!(req.validate().is_ok());
        assert_eq!(default_algorithm(8), Algorithm::Centralized);
    }

    #[test]
    fn listed_membership_is_exact() {
        let m = Membership::Pes(vec![1, 4, 9]);
        let got: Vec<Pe> = (0..12).filter(|&pe| m.joins(pe)).collect();
        assert_eq!(got, vec![1, 4, 9]);
    }

    #[test]
    fn a_run_joins_its_pes_and_must_fit_the_job() {
        let m = Membership::Run { first: 3, last: 5 };
        let got: Vec<Pe> = (0..12).filter(|&pe| m.joins(pe)).collect();
        assert_eq!(got, vec![3, 4, 5]);
        assert!(!(0..12).any(|pe| Membership::Run { first: 5, last: 3 }.joins(pe)));
        let mut fits = Request::new(Membership::Run { first: 0, last: 7 });
        assert!(fits.normalize(8).is_ok());
        let mut past = Request::new(Membership::Run { first: 2, last: 8 });
        assert!(matches!(
            past.normalize(8),
            Err(HostError::NoSuchPe { pe: 8, pes: 8 })
        ));
        let mut empty = Request::new(Membership::Run { first: 9, last: 0 });
        assert!(empty.normalize(8).is_ok());
    }
}
