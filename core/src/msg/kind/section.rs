//! Array sections (Charm++'s `CkSectionInfo` and `CkMulticast`): a multicast going
//! down the section's tree over the home PEs of its members, and section reductions
//! coming up it (handled in `engine/section.rs`).

use super::payload_slot;
use super::{family, payload_in, Body};
use crate::base::ids::{CollectionId, Pe};
use crate::msg::callback::Callback;
use crate::msg::payload::Payload;
use crate::msg::reduction::{Partial, Reducer};
pub(crate) use crate::msg::section_spec::SectionSpec;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

family! {
    /// Array-section multicasts and reductions.
    SectionMsg {
        SectionCast = 32 => None;
        SectionReduce = 33 => Some("chorus::section_reduction");
    }
}

/// A multicast to every member of a section, for the PE of tree rank `rank`, in the
/// tree re-rooted at rank `root`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SectionCast {
    pub(crate) spec: Arc<SectionSpec>,
    pub(crate) root: u32,
    pub(crate) rank: u32,
    #[serde(with = "payload_slot")]
    pub(crate) payload: Payload,
}

impl Body for SectionCast {
    payload_in!(payload);
    fn needs(&self) -> Option<CollectionId> {
        Some(self.spec.coll)
    }
    fn check(&self, npes: usize) -> Result<(), String> {
        self.spec.check(npes)?;
        let m = self.spec.roster.len() as u32;
        if self.root >= m || self.rank >= m {
            return Err(format!(
                "a section multicast names rank {} from root {} of {m}",
                self.rank, self.root
            ));
        }
        Ok(())
    }
    fn body_bytes(&self) -> u64 {
        self.spec.wire_bytes() + self.payload.wire_len()
    }
}

/// One tree node of a section reduction: the PE and how many contributions (its
/// members' and its children's partials) it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Node {
    pub(crate) pe: Pe,
    pub(crate) expect: u32,
}

/// A member's contribution, or a child's combined partial, to reduction `red` of
/// section `id`, for the node `path[0]`; the rest of `path` leads to the root, so no
/// PE keeps the section's tree to pass a reduction on.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SectionReduce {
    pub(crate) id: u64,
    pub(crate) coll: CollectionId,
    pub(crate) red: u32,
    pub(crate) path: Vec<Node>,
    pub(crate) reducer: Reducer,
    /// Boxed as a reduction's `Contribute` is: rare and large.
    pub(crate) body: Box<(Callback, Partial)>,
}

impl Body for SectionReduce {
    fn check(&self, npes: usize) -> Result<(), String> {
        match self
            .path
            .iter()
            .find(|n| n.pe as usize >= npes || n.expect == 0)
        {
            Some(n) => Err(format!(
                "a section reduction names PE {} waiting for {} of a job of {npes}",
                n.pe, n.expect
            )),
            None if self.path.is_empty() => Err("a section reduction has no path".into()),
            None => Ok(()),
        }
    }
    fn body_bytes(&self) -> u64 {
        32 + 8 * self.path.len() as u64 + bincode::serialized_size(&self.body.1).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::array::ElemAddr;
    use crate::msg::envelope::{Envelope, Kind};

    fn spec() -> SectionSpec {
        SectionSpec {
            id: 7 << 32 | 2,
            coll: CollectionId { creator: 0, seq: 3 },
            k: 2,
            roster: vec![1, 4, 6],
            members: vec![
                vec![ElemAddr::of(&3usize)],
                vec![ElemAddr::of(&9usize), ElemAddr::of(&11usize)],
                vec![ElemAddr::of(&14usize)],
            ],
        }
    }

    fn wire(kind: Kind) -> Kind {
        let env = Envelope {
            src: 0,
            seq: 1,
            prio: 0,
            expedited: false,
            counted: true,
            kind,
        };
        let mut out = Vec::new();
        crate::wire::encode(&env, 4, &mut out).expect("encodes");
        crate::wire::decode(Arc::new(out), 4).expect("decodes").kind
    }

    #[test]
    fn a_multicast_and_a_contribution_cross_a_wire_whole() {
        let cast = SectionCast {
            spec: Arc::new(spec()),
            root: 0,
            rank: 1,
            payload: Payload::new(42u64),
        };
        let Kind::Section(SectionMsg::SectionCast(back)) = wire(cast.into()) else {
            panic!("not a section multicast")
        };
        assert_eq!((&*back.spec, back.root, back.rank), (&spec(), 0, 1));
        assert_eq!(back.payload.take::<u64>(), Ok(42));
        assert_eq!(back.spec.check(8), Ok(()));

        let path = vec![Node { pe: 4, expect: 3 }, Node { pe: 1, expect: 3 }];
        let red = SectionReduce {
            id: 5,
            coll: spec().coll,
            red: 2,
            path: path.clone(),
            reducer: Reducer::Sum,
            body: Box::new((
                Callback::Exit,
                Partial::Value(crate::msg::reduction::RedData::U64(vec![9])),
            )),
        };
        let Kind::Section(SectionMsg::SectionReduce(back)) = wire(red.into()) else {
            panic!("not a section reduction")
        };
        assert_eq!((back.id, back.red, back.path), (5, 2, path));
    }

    #[test]
    fn a_bad_section_is_refused_on_arrival() {
        let mut s = spec();
        assert!(s.check(5).is_err(), "PE 6 is outside a job of 5");
        s.roster.swap(0, 1);
        assert!(s.check(8).is_err(), "unsorted");
        let mut s = spec();
        s.members.pop();
        assert!(s.check(8).is_err(), "a list short");
        let cast = SectionCast {
            spec: Arc::new(spec()),
            root: 3,
            rank: 0,
            payload: Payload::new(()),
        };
        assert!(cast.check(8).is_err(), "root outside the tree");
    }
}
