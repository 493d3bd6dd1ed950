//! The envelope: what one PE sends another. `Kind` (`kind/`) says what it carries,
//! `Dest` (`dest.rs`) which chare, group member or element a user message is for;
//! `Envelope` adds the sender, sequence number, priority and quiescence accounting.

use crate::base::ids::Pe;
pub(crate) use crate::msg::dest::{Dest, DestKey, GroupMember};
pub(crate) use crate::msg::kind::Kind;
use crate::msg::payload::Message;
use serde::{Deserialize, Serialize};

/// Delivery options of a send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendOpts {
    /// Scheduling priority: smaller runs first (Charm++'s convention); default 0.
    pub prio: i32,
    /// Skip the priority queue: handled before any queued message once it arrives.
    pub expedited: bool,
}

impl SendOpts {
    /// A send with priority `prio` (smaller runs first).
    pub fn prio(prio: i32) -> Self {
        SendOpts {
            prio,
            expedited: false,
        }
    }

    /// An expedited send.
    pub fn expedited() -> Self {
        SendOpts {
            prio: i32::MIN,
            expedited: true,
        }
    }
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
