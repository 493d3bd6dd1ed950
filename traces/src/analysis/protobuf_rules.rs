//! The incremental-state and interning rules of Perfetto protobuf traces, as
//! Perfetto's trace processor applies them, and the tally of packets that break them.
//!
//! Each packet sequence (`trusted_packet_sequence_id`) starts with its incremental
//! state invalid: Perfetto assumes packets before it were lost. A packet with
//! `SEQ_INCREMENTAL_STATE_CLEARED` (or the deprecated `incremental_state_cleared`)
//! makes it valid and forgets what was interned before; `previous_packet_dropped`
//! makes it invalid again until the next clear. While it is invalid Perfetto skips
//! interned data and every packet flagged `SEQ_NEEDS_INCREMENTAL_STATE`, so names
//! referred to by iid are lost; an iid never defined since the last clear is
//! misnamed; an event on a track uuid with no descriptor has no track to go on; and
//! interning on sequence 0 (no sequence id) is ignored or an error.

use std::collections::BTreeMap;
use std::path::Path;

use crate::analysis::model::bad;
use crate::error::TraceError;

/// Whether a sequence's incremental state can be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SeqState {
    /// No packet of the sequence has cleared it yet.
    #[default]
    NeverCleared,
    /// Cleared, and no packet lost since.
    Valid,
    /// A packet said packets were lost since the last clear.
    Lost,
}

impl SeqState {
    /// Why the state of `sequence` cannot be used, for messages.
    pub(crate) fn why(self, sequence: u64) -> String {
        match self {
            SeqState::NeverCleared => format!(
                "sequence {sequence}'s incremental state was never cleared (no SEQ_INCREMENTAL_STATE_CLEARED packet before it)"
            ),
            SeqState::Lost => format!(
                "sequence {sequence} lost packets (previous_packet_dropped) and its incremental state was not cleared since"
            ),
            SeqState::Valid => format!("sequence {sequence}'s incremental state is valid"),
        }
    }
}

/// A rule of the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SeqRule {
    /// Interning, a clear or `SEQ_NEEDS_INCREMENTAL_STATE` on a packet with no sequence id.
    NoSequenceId,
    /// Interned data on a sequence whose state is not valid (Perfetto skips it).
    InternedDataBeforeClear,
    /// A `SEQ_NEEDS_INCREMENTAL_STATE` packet while the state is not valid (Perfetto skips it).
    NeedsStateBeforeClear,
    /// An iid used, without the flag, while the state is not valid (misnamed).
    InternedIdBeforeClear,
    /// An iid not defined on the sequence since its last clear (misnamed).
    UnknownInternedId,
    /// An event on a track uuid no descriptor has defined.
    TrackWithoutDescriptor,
}

/// Packets breaking each rule: how many, and the first as a sentence.
#[derive(Default)]
pub(crate) struct RuleTally {
    broken: BTreeMap<SeqRule, (usize, String)>,
}

impl RuleTally {
    /// Counts one packet breaking `rule`; `what` is called for the first only.
    pub(crate) fn add(&mut self, rule: SeqRule, what: impl FnOnce() -> String) {
        self.broken
            .entry(rule)
            .and_modify(|(n, _)| *n += 1)
            .or_insert_with(|| (1, what()));
    }

    /// Whether any rule is broken: the items after it cannot be trusted.
    pub(crate) fn any(&self) -> bool {
        !self.broken.is_empty()
    }

    /// An error naming each broken rule once, with its count and first example.
    pub(crate) fn check(&self, path: &Path) -> Result<(), TraceError> {
        if self.broken.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = self
            .broken
            .iter()
            .map(|(rule, (n, first))| {
                let s = if *n == 1 { "" } else { "s" };
                format!("{rule:?}: {n} packet{s}; first: {first}")
            })
            .collect();
        Err(bad(
            path,
            format!(
                "Perfetto would drop or misname packets of this trace:\n  {}",
                lines.join("\n  ")
            ),
        ))
    }
}
