//! One PE's part in a split by colour and key, `MPI_Comm_split` style.

use crate::creation::protocol::Algorithm;
use crate::host::spec::MAX_COLOURS;
use crate::host::spec::{default_algorithm, HostError, Membership, Parent, Request, DEFAULT_K};
use chorus_core::Callback;
use serde::{Deserialize, Serialize};

/// What one PE of the parent says in a split: its own colour and key, and how the
/// sections are made (every PE of the parent gives the same `colours`, `any`,
/// `parent`, `algorithm` and `k`; the parent's root's `on_report` and `tag` count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// Number of colours, each a section (those with no member end up empty); not
    /// used by a split by any colour (`any`).
    pub colours: u32,
    /// This PE's colour (below `colours` unless `any`); None: this PE joins no section.
    pub colour: Option<u64>,
    /// A split by any colour ([`Split::any`]): one section per distinct colour the
    /// PEs name, the sections numbered in ascending colour order.
    pub any: bool,
    /// This PE's key: members are ranked by (key, PE).
    pub key: i64,
    /// The PEs that split (every one of them calls).
    pub parent: Parent,
    /// The creation algorithm; None: [`default_algorithm`] for the parent's size.
    pub algorithm: Option<Algorithm>,
    /// Branching factor of the new trees.
    pub k: u32,
    /// Where the creation's report goes, once (the parent root's call counts).
    pub on_report: Callback,
    /// A number of the caller's choosing, echoed in the report.
    pub tag: u64,
}

impl Split {
    /// A split of the world into `colours` sections; this PE takes colour 0 and key 0
    /// until told otherwise (so equal keys rank members by PE).
    pub fn new(colours: u32) -> Self {
        Split {
            colours,
            colour: Some(0),
            any: false,
            key: 0,
            parent: Parent::World,
            algorithm: None,
            k: DEFAULT_K,
            on_report: Callback::Ignore,
            tag: 0,
        }
    }

    /// A split of the world by any `u64` colour (`MPI_Comm_split`'s colours): one
    /// section per distinct colour named, made in ascending colour order, so the
    /// same colours give the same sections on every run. Each PE gives only its own
    /// colour; the PEs find the distinct colours (at most [`MAX_COLOURS`]) over the
    /// parent's tree first. This PE takes colour 0 and key 0 until told otherwise.
    pub fn any() -> Self {
        Split {
            any: true,
            ..Split::new(1)
        }
    }

    /// A split of the world by any colour ([`Split::any`]) in which this PE names `colour`.
    pub fn by(colour: u64) -> Self {
        Split::any().colour(colour)
    }

    /// This PE joins the section of `colour`.
    pub fn colour(self, colour: impl Into<u64>) -> Self {
        Split {
            colour: Some(colour.into()),
            ..self
        }
    }

    /// This PE joins no section (`MPI_UNDEFINED`).
    pub fn no_colour(self) -> Self {
        Split {
            colour: None,
            ..self
        }
    }

    /// This PE's rank key.
    pub fn key(self, key: impl Into<i64>) -> Self {
        Split {
            key: key.into(),
            ..self
        }
    }

    /// Split `parent` instead of the world.
    pub fn parent(self, parent: Parent) -> Self {
        Split { parent, ..self }
    }

    /// Make the sections with `algorithm`.
    pub fn algorithm(self, algorithm: Algorithm) -> Self {
        Split {
            algorithm: Some(algorithm),
            ..self
        }
    }

    /// Branching factor `k` for the new trees.
    pub fn k(self, k: u32) -> Self {
        Split { k, ..self }
    }

    /// Send the creation's report to `on_report`, with `tag`.
    pub fn report(self, on_report: Callback, tag: u64) -> Self {
        Split {
            on_report,
            tag,
            ..self
        }
    }

    /// Check what this PE alone can check.
    pub fn validate(&self) -> Result<(), HostError> {
        if self.any {
            return self.request(0, 0).validate();
        }
        if !(1..=MAX_COLOURS).contains(&self.colours) {
            return Err(HostError::BadColours(format!("{} colours", self.colours)));
        }
        if let Some(c) = self.colour.filter(|&c| c >= u64::from(self.colours)) {
            return Err(HostError::BadColours(format!(
                "colour {c} of {}",
                self.colours
            )));
        }
        self.request(0, 0).validate()
    }

    /// The request the parent's root starts for the split numbered `seq` over a
    /// parent of `parent_pes` PEs.
    pub(crate) fn request(&self, seq: u64, parent_pes: u32) -> Request {
        Request {
            algorithm: self
                .algorithm
                .unwrap_or_else(|| default_algorithm(parent_pes)),
            k: self.k,
            parent: self.parent,
            membership: Membership::Called {
                colours: self.colours,
                seq,
            },
            on_member: Callback::Ignore,
            on_report: self.on_report.clone(),
            tag: self.tag,
            keep: true,
        }
    }
}
