//! Injected wire faults (`--fault-corrupt-every`): what a damaged frame on a real
//! network does, on demand, so the engine's handling of a message that does not
//! decode can be tested on every layer whose PEs exchange bytes.

use super::Arrival;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::{Envelope, Kind};
use crate::wire;
use std::sync::Arc;

/// Picks which of a PE's user messages to other PEs arrive damaged: every `every`th.
pub(crate) struct Corrupter {
    every: u64,
    seen: u64,
}

impl Corrupter {
    /// A corrupter for `--fault-corrupt-every`, if it is set.
    pub(crate) fn new(every: Option<u64>) -> Option<Self> {
        every.map(|every| Corrupter {
            every: every.max(1),
            seen: 0,
        })
    }

    /// Whether `env`, about to leave for another PE, is to arrive damaged. Only user
    /// messages are: a damaged runtime message (a reduction's part, a quiescence
    /// wave) would stall the job whatever the engine did, which tests nothing.
    pub(crate) fn hit(&mut self, env: &Envelope) -> bool {
        if !matches!(env.kind, Kind::User { .. }) {
            return false;
        }
        self.seen += 1;
        self.seen.is_multiple_of(self.every)
    }
}

/// Damage an encoded envelope past its header: a trailing byte its lengths do not
/// account for, so it fails to decode while the header still says what was sent.
pub(crate) fn damage(buf: &mut Vec<u8>) {
    buf.push(0xEE);
}

/// What PE `to` receives for `env` sent by PE `from` and damaged on a wire that
/// layer does not have (PEs of one process): the arrival a real wire would produce.
pub(crate) fn damaged_arrival(env: &Envelope, from: Pe, to: Pe) -> Arrival {
    let mut buf = Vec::new();
    if let Err(e) = wire::encode(env, to, &mut buf) {
        return Arrival::Failed {
            err: RuntimeError::Encode {
                pe: from,
                to,
                reason: e.to_string(),
            },
            weight: Some(if env.counted { env.weight() } else { 0 }),
        };
    }
    damage(&mut buf);
    match wire::decode(Arc::new(buf.clone()), to) {
        Ok(env) => Arrival::One(env),
        Err(e) => Arrival::undecodable(&buf, e.at(to, &format!("PE {from}"))),
    }
}
