//! The messages builders exchange: one family per part of the builder.

use super::*;

/// Messages of the builder group, by the part that handles them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BuilderMsg {
    /// Starting and running creations.
    Creation(CreationMsg),
    /// Splits by colour and key, and the ranking of their sections.
    Split(SplitMsg),
    /// Noncollective merges.
    Merge(MergeMsg),
    /// Repairs of kept sections after a failure.
    Repair(RepairMsg),
    /// Frees and map sizes.
    Free(FreeMsg),
}

impl BuilderMsg {
    /// The runtime reports that PE `pe` failed (the builder's failure entry).
    pub fn failed(pe: Pe) -> Self {
        RepairMsg::Failed(pe).into()
    }
}

/// Each family's message is a builder message.
macro_rules! families {
    ($($variant:ident($family:ty)),*) => {
        $(impl From<$family> for BuilderMsg {
            fn from(m: $family) -> Self {
                BuilderMsg::$variant(m)
            }
        })*
    };
}

families!(
    Creation(CreationMsg),
    Split(SplitMsg),
    Merge(MergeMsg),
    Repair(RepairMsg),
    Free(FreeMsg)
);
