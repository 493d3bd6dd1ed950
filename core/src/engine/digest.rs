//! An optional digest of every message a PE hands to user code: when, where, to
//! which chare, and the message's bytes. Two runs that deliver the same messages in
//! the same order at the same times have equal digests, whatever process ran them;
//! `chorus-bench replay` compares them across processes.

use crate::base::hash::Fnv64;
use crate::base::ids::Pe;
use crate::msg::payload::Payload;
use std::hash::Hasher;

/// One PE's running digest of delivered messages.
#[derive(Default)]
pub(crate) struct DeliveryLog {
    digest: Fnv64,
    /// Handler invocations digested (a run of messages is one).
    events: u64,
    /// Reused for each payload's encoding, so digesting allocates once.
    scratch: Vec<u8>,
}

impl DeliveryLog {
    /// Mix in one delivery at `now` (the layer's clock, seconds) on PE `me` to
    /// `target`: (kind, id, index bytes) of the receiving chare.
    pub(crate) fn record(
        &mut self,
        now: f64,
        me: Pe,
        target: (u64, u64, &[u8]),
        payload: &Payload,
    ) {
        let d = &mut self.digest;
        d.write_u64(now.to_bits());
        d.write_u64(u64::from(me));
        d.write_u64(target.0);
        d.write_u64(target.1);
        d.write(target.2);
        // The entry is the message's variant, so the encoding covers it. A message
        // that cannot be encoded digests as its error, which is as reproducible.
        self.scratch.clear();
        match payload.encode_into(&mut self.scratch) {
            Ok(run) => {
                d.write_u64(u64::from(run));
                d.write_u64(self.scratch.len() as u64);
                d.write(&self.scratch);
            }
            Err(e) => d.write(e.as_bytes()),
        }
        self.events += 1;
    }

    /// The digest so far and the deliveries in it.
    pub(crate) fn value(&self) -> (u64, u64) {
        (self.digest.finish(), self.events)
    }
}
