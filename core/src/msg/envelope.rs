//! The envelope: what one PE sends another. `Dest` says which chare, group member or
//! element a user message is for, `Kind` what the envelope carries, `Envelope` adds
//! the sender, sequence number, priority and quiescence accounting.

use crate::base::error::RuntimeError;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::array::{ArrayMap, ElemAddr, Shape};
use crate::msg::callback::Callback;
use crate::msg::payload::{Message, Payload};
use crate::msg::reduction::{Partial, Reducer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a user message is addressed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Dest {
    Chare(ChareId),
    Group(CollectionId),
    Array(CollectionId),
    /// An element, wherever the array's map puts it.
    Element(CollectionId, ElemAddr),
    /// An element that has migrated, sent on news that it reached the receiving PE on
    /// its n-th move (see `location.rs`).
    ElementAt(CollectionId, ElemAddr, u32),
}

/// A destination as a send names it: compared with a queued envelope's on every send,
/// and made into a `Dest` only when the message needs an envelope of its own. Chares
/// and groups, the common streams, name theirs by id, without building, comparing
/// and dropping a whole `Dest` per message.
pub(crate) trait DestKey {
    /// True if `dest` is this destination.
    fn is(&self, dest: &Dest) -> bool;
    /// The destination, for an envelope.
    fn into_dest(self) -> Dest;
}

impl DestKey for ChareId {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Chare(id) if id == self)
    }
    fn into_dest(self) -> Dest {
        Dest::Chare(self)
    }
}

/// The member of a group on the PE a message is sent to.
pub(crate) struct GroupMember(pub(crate) CollectionId);

impl DestKey for GroupMember {
    #[inline(always)]
    fn is(&self, dest: &Dest) -> bool {
        matches!(dest, Dest::Group(c) if *c == self.0)
    }
    fn into_dest(self) -> Dest {
        Dest::Group(self.0)
    }
}

impl DestKey for Dest {
    #[inline]
    fn is(&self, dest: &Dest) -> bool {
        self == dest
    }
    fn into_dest(self) -> Dest {
        self
    }
}

impl Dest {
    pub(crate) fn coll(&self) -> Option<CollectionId> {
        match self {
            Dest::Chare(_) => None,
            Dest::Group(c) | Dest::Array(c) | Dest::Element(c, _) | Dest::ElementAt(c, _, _) => {
                Some(*c)
            }
        }
    }
}

/// The body of an envelope. On a wire its payload travels after it, raw (see
/// `wire.rs`), so payload fields encode as nothing here.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// A message for one chare, group member or array element on the receiving PE.
    User {
        dest: Dest,
        #[serde(with = "payload_slot")]
        payload: Payload,
        hops: u8,
    },
    /// A broadcast to a group or array, forwarded down the tree rooted at `root`.
    Bcast {
        dest: Dest,
        root: Pe,
        #[serde(with = "payload_slot")]
        payload: Payload,
    },
    CreateChare {
        id: ChareId,
        ty: u32,
        #[serde(with = "payload_slot")]
        init: Payload,
    },
    CreateGroup {
        coll: CollectionId,
        ty: u32,
        root: Pe,
        #[serde(with = "payload_slot")]
        init: Payload,
    },
    CreateArray {
        coll: CollectionId,
        ty: u32,
        root: Pe,
        #[serde(with = "payload_slot")]
        init: Payload,
        shape: Arc<Shape>,
        map: ArrayMap,
    },
    Insert {
        coll: CollectionId,
        addr: ElemAddr,
        #[serde(with = "payload_slot")]
        init: Payload,
        /// Times the insert was forwarded towards the element's home.
        hops: u8,
    },
    DoneInserting {
        coll: CollectionId,
        root: Pe,
    },
    /// A child's count of array elements in its subtree.
    Census {
        coll: CollectionId,
        epoch: u32,
        count: u64,
    },
    /// A child's combined contributions to reduction `seq`.
    Contribute {
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        /// Boxed: the largest fields of any kind, on a rare message, would otherwise
        /// make every envelope bigger.
        body: Box<(Callback, Partial)>,
    },
    QdRequest {
        callback: Callback,
    },
    QdWave {
        wave: u64,
    },
    QdReply {
        wave: u64,
        sent: u64,
        processed: u64,
    },
    /// Sent down the tree at quiescence: report messages still waiting for a creation.
    Orphans {
        root: Pe,
    },
    Exit {
        root: Pe,
        #[serde(with = "error_text")]
        error: Option<RuntimeError>,
    },
    /// The machine layer's notice that PE `pe` failed, for a subscriber's callback.
    PeFailed {
        pe: Pe,
        callback: Callback,
    },
    /// An array element moving here: its state, its move count and reduction progress.
    Migrate {
        coll: CollectionId,
        addr: ElemAddr,
        home: Pe,
        moves: u32,
        contributed: u64,
        #[serde(with = "payload_slot")]
        state: Payload,
    },
    /// News that an element reached PE `pe` on its `moves`-th move.
    Moved {
        coll: CollectionId,
        addr: ElemAddr,
        home: Pe,
        pe: Pe,
        moves: u32,
    },
    /// A contribution of an element away from its home, which counts it there.
    HomeContribute {
        coll: CollectionId,
        seq: u64,
        reducer: Reducer,
        body: Box<(Callback, Partial)>,
    },
    /// Credit for `n` windowed messages of the receiver's that the sender handled
    /// (`engine/flow.rs`).
    Credit {
        n: u64,
    },
}

/// A message between PEs.
#[derive(Debug)]
pub struct Envelope {
    pub(crate) src: Pe,
    /// The sender's sequence number: with `src`, names the message (trace arrows).
    pub(crate) seq: u32,
    pub(crate) prio: i32,
    pub(crate) expedited: bool,
    /// Counted by quiescence detection (everything but the detector's own messages).
    pub(crate) counted: bool,
    pub(crate) kind: Kind,
}

impl Kind {
    /// True for a quiescence wave going down the PE tree or a reply coming up.
    pub(crate) fn is_quiescence_wave(&self) -> bool {
        matches!(self, Kind::QdWave { .. } | Kind::QdReply { .. })
    }

    /// The trace name of a runtime-internal message's handler; `None` for user
    /// messages and creations, whose chare entry or constructor is traced instead.
    pub(crate) fn runtime_entry(&self) -> Option<&'static str> {
        Some(match self {
            Kind::User { .. }
            | Kind::Bcast { .. }
            | Kind::CreateChare { .. }
            | Kind::CreateGroup { .. }
            | Kind::CreateArray { .. }
            | Kind::Insert { .. } => return None,
            Kind::DoneInserting { .. } | Kind::Census { .. } => "chorus::census",
            Kind::Contribute { .. } | Kind::HomeContribute { .. } => "chorus::reduction",
            Kind::Migrate { .. } => "chorus::migrate",
            Kind::Moved { .. } => "chorus::location",
            Kind::QdRequest { .. } | Kind::QdWave { .. } | Kind::QdReply { .. } => {
                "chorus::quiescence"
            }
            Kind::Orphans { .. } => "chorus::orphans",
            Kind::Exit { .. } => "chorus::exit",
            Kind::PeFailed { .. } => "chorus::pe_failed",
            Kind::Credit { .. } => "chorus::credit",
        })
    }
}

impl Envelope {
    /// A job-wide name for this message: its sender and the sender's sequence number.
    pub(crate) fn msg_id(&self) -> u64 {
        u64::from(self.src) << 32 | u64::from(self.seq)
    }

    /// Messages this envelope stands for in quiescence counting.
    pub(crate) fn weight(&self) -> u64 {
        match &self.kind {
            Kind::User { payload, .. } => payload.count() as u64,
            _ => 1,
        }
    }

    /// What quiescence detection counted of it when sent: its weight, or 0 for an
    /// uncounted control message.
    pub(crate) fn counted_weight(&self) -> u64 {
        if self.counted {
            self.weight()
        } else {
            0
        }
    }

    /// Append `msg` to this envelope's run if it goes from `src` to `dest` with the
    /// same priority; give it back otherwise.
    #[inline]
    pub(crate) fn append<M: Message>(
        &mut self,
        src: Pe,
        dest: &impl DestKey,
        prio: i32,
        msg: M,
    ) -> Result<(), M> {
        if self.src != src || self.prio != prio || self.expedited || !self.counted {
            return Err(msg);
        }
        match &mut self.kind {
            Kind::User {
                dest: d,
                payload,
                hops: 0,
            } if dest.is(d) => payload.absorb(msg),
            _ => Err(msg),
        }
    }
}

/// Serde for payload fields inside a kind's body: nothing is written, and decoding
/// leaves an empty payload that `decode` fills from the bytes after the body.
pub(crate) mod payload_slot {
    use crate::msg::payload::Payload;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(_: &Payload, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Payload, D::Error> {
        <()>::deserialize(d)?;
        Ok(Payload::placeholder())
    }
}

/// Serde for an error carried by an exit: its text, which becomes a
/// `RuntimeError::Remote` on the receiving side.
pub(crate) mod error_text {
    use crate::base::error::RuntimeError;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        e: &Option<RuntimeError>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        e.as_ref()
            .map(|e| match e {
                RuntimeError::Remote(text) => text.clone(),
                e => e.to_string(),
            })
            .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<RuntimeError>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(RuntimeError::Remote))
    }
}
