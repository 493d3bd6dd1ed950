//! An optional digest of every message a PE hands to user code: when, where, to
//! which chare, and the message's bytes. Two runs that deliver the same messages in
//! the same order at the same times have equal digests, whatever process ran them;
//! `chorus-bench replay` compares them across processes. A second digest starts at
//! each checkpoint's commit (or a restart's resume), so a restarted run can be
//! compared with the rest of the run that wrote its checkpoint.

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
    /// The digest of deliveries since the last `mark`, and how many.
    since: Option<(Fnv64, u64)>,
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
        // The entry is the message's variant, so the encoding covers it. A message
        // that cannot be encoded digests as its error, which is as reproducible.
        self.scratch.clear();
        let encoded = payload.encode_into(&mut self.scratch);
        let words = [now.to_bits(), u64::from(me), target.0, target.1];
        let mix = |d: &mut Fnv64| {
            for w in words {
                d.write_u64(w);
            }
            d.write(target.2);
            match &encoded {
                Ok(run) => {
                    d.write_u64(u64::from(*run));
                    d.write_u64(self.scratch.len() as u64);
                    d.write(&self.scratch);
                }
                Err(e) => d.write(e.as_bytes()),
            }
        };
        mix(&mut self.digest);
        if let Some((since, n)) = self.since.as_mut() {
            mix(since);
            *n += 1;
        }
        self.events += 1;
    }

    /// Start the digest since now (a checkpoint was committed, or a restarted job
    /// resumes), dropping the one since the previous mark.
    pub(crate) fn mark(&mut self) {
        self.since = Some((Fnv64::default(), 0));
    }

    /// The digest since the last `mark` and the deliveries in it, if marked.
    pub(crate) fn since_mark(&self) -> Option<(u64, u64)> {
        self.since.as_ref().map(|(d, n)| (d.finish(), *n))
    }

    /// The digest so far and the deliveries in it.
    pub(crate) fn value(&self) -> (u64, u64) {
        (self.digest.finish(), self.events)
    }
}
