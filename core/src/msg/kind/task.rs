//! Async tasks: the reply to an `ask` awaited by a task on the asking PE, and the
//! timer a PE sends itself while an `ask_with_timeout` waits (handled in
//! `engine/tasks.rs`).

use super::{family, payload_in, Body};
use crate::msg::payload::Payload;
use serde::{Deserialize, Serialize};

family! {
    /// Replies to asks, and their timeouts.
    TaskMsg {
        Reply = 27 => Some("chorus::reply");
        AskTimer = 28 => Some("chorus::ask_timer");
    }
}

/// The answer to ask `id` of the receiving PE (sent by `ReplyTo::send`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Reply {
    pub(crate) id: u64,
    #[serde(with = "super::payload_slot")]
    pub(crate) payload: Payload,
}

impl Body for Reply {
    payload_in!(payload);
    fn body_bytes(&self) -> u64 {
        8
    }
}

/// Look at the deadlines of this PE's asks again (sent by a PE to itself, counted,
/// so quiescence waits for an ask that can still time out).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct AskTimer {}

impl Body for AskTimer {
    fn body_bytes(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::envelope::{Envelope, Kind};
    use crate::wire::{decode, encode};
    use std::sync::Arc;

    /// A reply crosses a wire with its payload: the mpi layer's path.
    #[test]
    fn a_reply_and_the_timer_round_trip() {
        let reply = Envelope {
            src: 2,
            seq: 7,
            prio: 0,
            expedited: false,
            counted: true,
            kind: Reply {
                id: 1 << 40,
                payload: Payload::new((5u64, "five".to_string())),
            }
            .into(),
        };
        let mut out = Vec::new();
        encode(&reply, 0, &mut out).expect("encodes");
        let back = decode(Arc::new(out), 0).expect("decodes");
        let Kind::Task(TaskMsg::Reply(Reply { id, payload })) = back.kind else {
            panic!("not a reply: {:?}", back.kind)
        };
        assert_eq!(id, 1 << 40);
        let value = payload.take::<(u64, String)>().expect("payload");
        assert_eq!(value, (5, "five".to_string()));

        let timer = Envelope {
            src: 0,
            seq: 1,
            prio: i32::MAX,
            expedited: false,
            counted: true,
            kind: AskTimer {}.into(),
        };
        let mut out = Vec::new();
        encode(&timer, 0, &mut out).expect("encodes");
        let back = decode(Arc::new(out), 0).expect("decodes");
        assert!(matches!(back.kind, Kind::Task(TaskMsg::AskTimer(_))));
    }
}
