//! Tuning profiles: for each collective and section size, message-size ranges and the
//! implementation chosen for each, in a line-based text file people can read and edit:
//!
//! ```text
//! # collective  section-size  bytes (FROM..TO, TO excluded; FROM.. is open)  implementation
//! allgather  8  0..64     bruck/1
//! allgather  8  64..      default
//! ```
//!
//! The ranges of a (collective, size) start at 0, follow each other without gaps and
//! end open; a section size the profile does not list runs the defaults.

use super::mockups::{Collective, Impl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use thiserror::Error;

/// The implementation of a collective from a message size on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    /// First message size (bytes per member) of the range.
    pub from: u64,
    /// What runs in the range.
    pub choice: Impl,
}

/// Why a profile cannot be read.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// The file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The profile cannot be written whole (the message names the file); whatever
    /// was at the path is left as it was.
    #[error(transparent)]
    Write(#[from] chorus_traces::TraceError),
    /// A line does not parse.
    #[error("profile line {line}: {reason}")]
    Line {
        /// Line number, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A line of a profile file does not parse: fix or remove that line.
    #[error("{path} line {line}: {reason}")]
    FileLine {
        /// The file.
        path: String,
        /// Line number, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// A range as read: first size, end (None: open) and implementation.
type Parsed = (u64, Option<u64>, Impl);

/// A tuning profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Ranges by (collective, section size), sorted by `from`, the first from 0.
    entries: BTreeMap<(Collective, u32), Vec<Range>>,
}

impl Profile {
    /// An empty profile (every collective runs its default).
    pub fn new() -> Self {
        Profile::default()
    }

    /// Set the choices of `collective` on sections of `size`: `choices` lists
    /// (first message size, implementation) in increasing sizes; the first range is
    /// widened down to 0 and neighbours with the same choice merge.
    pub fn set(&mut self, collective: Collective, size: u32, choices: &[(u64, Impl)]) {
        let mut ranges: Vec<Range> = Vec::new();
        for &(from, choice) in choices {
            match ranges.last() {
                Some(r) if r.choice == choice => {}
                Some(_) => ranges.push(Range { from, choice }),
                None => ranges.push(Range { from: 0, choice }),
            }
        }
        if ranges.is_empty() {
            self.entries.remove(&(collective, size));
        } else {
            self.entries.insert((collective, size), ranges);
        }
    }

    /// The ranges of `collective` on sections of `size`, if the profile has them.
    pub fn ranges(&self, collective: Collective, size: u32) -> Option<&[Range]> {
        self.entries.get(&(collective, size)).map(Vec::as_slice)
    }

    /// The implementation for a call of `collective` on a section of `size` with
    /// `bytes` per member: a binary search over the ranges, O(log ranges).
    pub fn choose(&self, collective: Collective, size: u32, bytes: u64) -> Impl {
        let Some(ranges) = self.entries.get(&(collective, size)) else {
            return Impl::Default;
        };
        let i = ranges.partition_point(|r| r.from <= bytes);
        ranges
            .get(i.wrapping_sub(1))
            .map_or(Impl::Default, |r| r.choice)
    }

    /// The profile as text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# chorus tuning profile (chorus-tune)\n\
             # collective  section-size  bytes (FROM..TO, TO excluded; FROM.. is open)  implementation\n",
        );
        for ((c, size), ranges) in &self.entries {
            for (i, r) in ranges.iter().enumerate() {
                let to = ranges
                    .get(i + 1)
                    .map_or(String::new(), |n| n.from.to_string());
                let bytes = format!("{}..{to}", r.from);
                let _ = writeln!(
                    s,
                    "{:<10} {:>7}  {:<16} {}",
                    c.name(),
                    size,
                    bytes,
                    r.choice.name()
                );
            }
        }
        s
    }

    /// Parse a profile written by `to_text` (or by hand, in that form).
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let mut entries: BTreeMap<(Collective, u32), Vec<Parsed>> = BTreeMap::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |reason: String| ProfileError::Line {
                line: n + 1,
                reason,
            };
            let f: Vec<&str> = line.split_whitespace().collect();
            let [coll, size, bytes, choice] = f[..] else {
                return Err(bad(format!(
                    "expected `collective size FROM..TO implementation`, got {line:?}"
                )));
            };
            let c = Collective::parse(coll)
                .ok_or_else(|| bad(format!("unknown collective {coll:?}")))?;
            let size: u32 =
                size.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                    bad(format!("section size {size:?} is not a positive number"))
                })?;
            let (from, to) = bytes
                .split_once("..")
                .ok_or_else(|| bad(format!("bytes {bytes:?} is not FROM..TO or FROM..")))?;
            let num = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| bad(format!("{s:?} in {bytes:?} is not a byte count")))
            };
            let from = num(from)?;
            let to = if to.is_empty() { None } else { Some(num(to)?) };
            let choice = Impl::parse(c, choice)
                .ok_or_else(|| bad(format!("{choice:?} is not an implementation of {coll}")))?;
            let list = entries.entry((c, size)).or_default();
            let expected = match list.last() {
                None => Some(0),
                Some(&(_, to, _)) => to,
            };
            if expected != Some(from) {
                return Err(bad(match expected {
                    None => format!("{coll} on {size}: a range after the open one"),
                    Some(e) => format!("{coll} on {size}: range starts at {from}, expected {e}"),
                }));
            }
            if to.is_some_and(|t| t <= from) {
                return Err(bad(format!("empty range {bytes}")));
            }
            list.push((from, to, choice));
        }
        let mut profile = Profile::new();
        for ((c, size), list) in entries {
            if list.last().is_some_and(|l| l.1.is_some()) {
                return Err(ProfileError::Line {
                    line: text.lines().count(),
                    reason: format!("{c} on {size}: the last range must be open (FROM..)"),
                });
            }
            let ranges = list
                .into_iter()
                .map(|(from, _, choice)| Range { from, choice })
                .collect();
            profile.entries.insert((c, size), ranges);
        }
        Ok(profile)
    }

    /// Read a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            ProfileError::Line { line, reason } => ProfileError::FileLine {
                path: path.display().to_string(),
                line,
                reason,
            },
            e => e,
        })
    }

    /// Write the profile to a file: a temporary file beside it, synced and renamed
    /// onto `path`, so a failed write never leaves half a profile there.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        chorus_traces::capture::staged::write_atomic(path, self.to_text().as_bytes())?;
        Ok(())
    }
}
