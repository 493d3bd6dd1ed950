//! A rank's side of the network: its sends in flight, its posted receives, and the
//! buffers both reuse.
//!
//! Sends are nonblocking, from owned buffers freed (or kept as spares) once MPI
//! reports them complete. Envelopes up to `POSTED_BYTES` land in receives posted
//! ahead of them; a longer one is announced by a notice and taken whole by matched
//! probe, as are the segments of a segmented envelope.

use super::backoff::Backoff;
use super::posted_receive::PostedReceive;
use crate::base::bytes::Bytes;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::Envelope;
use crate::wire;
use mpi::point_to_point::{Message, Status};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Process, SimpleCommunicator};
use mpi::traits::*;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A nonblocking send in flight and what owns the bytes it reads.
struct PendingSend {
    /// Always `Some` until completion; taken to call `test`.
    req: Option<Request<'static, [u8], StaticScope>>,
    /// The envelope's buffer (empty for a segment).
    buf: Vec<u8>,
    /// A segment's bytes, held until MPI is done with them.
    segment: Option<Bytes>,
    /// Bytes the send reads.
    len: usize,
}

/// A rank's side of the network: its communicator and its sends in flight.
pub(crate) struct Link {
    /// Receives of envelopes, posted in this order, so MPI fills them in this order.
    /// Declared before `comm`, so they are cancelled before it is freed.
    posted: VecDeque<PostedReceive>,
    /// The receive the last envelope came in, read and waiting to be posted again at
    /// the next look (also dropped before `comm`).
    unposted: Option<PostedReceive>,
    pub(crate) comm: SimpleCommunicator,
    pending: Vec<PendingSend>,
    /// Bytes of the sends in `pending`.
    in_flight: usize,
    /// Completed send buffers kept for reuse.
    spare: Vec<Vec<u8>>,
    /// False when other threads encode the envelopes (SMP mode): nothing here would
    /// take the spare buffers again.
    keep_spares: bool,
    /// Messages taken off the network while a send waited for room: at most what
    /// arrives while `MAX_IN_FLIGHT` bytes of this rank's sends drain, and emptied by
    /// the next polls before anything else is received.
    inbox: VecDeque<(Arc<Vec<u8>>, i32)>,
    /// Large receive buffers lately handed out; one no longer shared is reused.
    recycle: Vec<Arc<Vec<u8>>>,
    /// Small receive buffers in the order they were handed out. Messages mostly run
    /// in arrival order, so the oldest is the one likely free again: checking only it
    /// keeps a receive O(1) and saves two allocations per message.
    small: VecDeque<Arc<Vec<u8>>>,
}

/// Bytes of sends a rank keeps in flight before a new send waits for old ones:
/// bounds the buffers a burst of large messages allocates (and the pages it faults
/// in) to what MPI can move at once anyway.
const MAX_IN_FLIGHT: usize = 8 << 20;
/// Bytes one MPI message can carry: its count is a C `int`.
const MAX_MPI_MESSAGE: usize = i32::MAX as usize;
/// Receive buffers at least this large are recycled instead of freed.
const RECYCLE_MIN: usize = 64 << 10;
/// Receive buffers kept for recycling.
const RECYCLE_KEEP: usize = 8;
/// Completed send buffers kept for reuse.
const SPARE_KEEP: usize = 64;
/// Small receive buffers kept for reuse.
const SMALL_KEEP: usize = 32;
/// Capacity of a new small receive buffer, so one serves most later messages too.
const SMALL_MIN: usize = 256;
/// Tag of envelopes.
const ENVELOPE_TAG: i32 = 0;
/// Tag of the segments that follow a segmented envelope (see `wire::encode_segmented`).
const SEGMENT_TAG: i32 = 1;
/// Tag of envelopes longer than `POSTED_BYTES`, each announced by a notice on
/// `ENVELOPE_TAG` (see `wire::long_notice`).
const LONG_TAG: i32 = 2;
/// Receives of envelopes a rank keeps posted: a few, so a burst of arrivals lands
/// in them rather than in MPI's queue of unexpected messages.
const POSTED: usize = 4;
/// Bytes of each posted receive: envelopes up to this long travel as one message.
/// Ranks compare it (with the wire version) at startup: a longer message on the
/// envelope tag would overflow a posted receive.
pub(crate) const POSTED_BYTES: usize = 16 << 10;
/// How long a receiver waits for a message an envelope announced (a long envelope's
/// body, a segment) before it ends the job. The sender posts them together with the
/// envelope, so only a broken peer makes it wait this long, and going on without the
/// message would pair later announcements with the wrong messages.
const SEGMENT_WAIT: Duration = Duration::from_secs(30);

/// An envelope in its wire form: its bytes, and the long byte strings that follow
/// it as segments (see `wire::encode_segmented`).
pub(crate) struct Encoded {
    buf: Vec<u8>,
    segments: Vec<Bytes>,
}

impl Encoded {
    /// Damage the envelope as a fault on the wire would (`--fault-corrupt-every`); a
    /// segmented one is left whole, since its segments are matched by their lengths.
    pub(crate) fn damage(&mut self) {
        if self.segments.is_empty() {
            crate::machine::fault::damage(&mut self.buf);
        }
    }

    /// `env` encoded for PE `to` into a buffer from `buffer`, which gets the size the
    /// envelope wants (0 for a segmented one) and returns an empty buffer.
    pub(crate) fn new(
        env: &Envelope,
        to: Pe,
        buffer: impl FnOnce(usize) -> Vec<u8>,
    ) -> Result<Self, RuntimeError> {
        // The size pass also says whether the payload holds a long `Bytes`.
        let (want, long) = crate::base::bytes::noting_long(|| {
            (wire::size_hint(env), crate::base::bytes::any_noted())
        });
        let mut buf = buffer(if long { 0 } else { want });
        // Sized up front: growing a buffer of megabytes by doubling touches (and, on
        // a fresh mapping, zeroes) every page several times over. A segmented
        // envelope holds little beyond its header.
        if !long {
            buf.reserve(want);
        }
        // Long `Bytes` go as segments, straight from where they are: copying them into
        // the envelope would cost the sender as much memory traffic as MPI's transfer.
        let segments = if long {
            wire::encode_segmented(env, to, &mut buf)
        } else {
            wire::encode(env, to, &mut buf).map(|()| Vec::new())
        }
        .map_err(|e| RuntimeError::Invalid(format!("PE {}: {e}", env.src)))?;
        // Refused whole, before any part (a notice, the main part) leaves: rsmpi
        // panics on a longer slice, and a receiver would wait for the rest.
        let longest = segments.iter().map(|s| s.len()).chain([buf.len()]).max();
        if let Some(n) = longest.filter(|&n| n > MAX_MPI_MESSAGE) {
            return Err(RuntimeError::Invalid(format!(
                "PE {}: a message of {n} bytes to PE {to} is more than one MPI message carries ({MAX_MPI_MESSAGE} bytes); send it in pieces",
                env.src
            )));
        }
        Ok(Encoded { buf, segments })
    }
}

impl Link {
    pub(crate) fn new(comm: SimpleCommunicator, keep_spares: bool) -> Self {
        Link {
            posted: (0..POSTED)
                .map(|_| PostedReceive::new(&comm, POSTED_BYTES, ENVELOPE_TAG))
                .collect(),
            unposted: None,
            comm,
            pending: Vec::new(),
            in_flight: 0,
            spare: Vec::new(),
            keep_spares,
            inbox: VecDeque::new(),
            recycle: Vec::new(),
            small: VecDeque::new(),
        }
    }

    /// Encode `env` and start sending it to `to`, damaged on the way if `damage`
    /// (`--fault-corrupt-every`).
    pub(crate) fn send(
        &mut self,
        to: Pe,
        env: &Envelope,
        damage: bool,
    ) -> Result<(), RuntimeError> {
        let mut encoded = Encoded::new(env, to, |want| self.spare_buffer(want))?;
        if damage {
            encoded.damage();
        }
        self.post_encoded(to, encoded);
        Ok(())
    }

    /// Start sending an encoded envelope and its segments to `rank`.
    pub(crate) fn post_encoded(&mut self, rank: Pe, encoded: Encoded) {
        while self.in_flight > MAX_IN_FLIGHT {
            // Receiving meanwhile is what lets a peer that waits on us finish too.
            if !self.progress() && !self.pull() {
                std::hint::spin_loop();
            }
        }
        let Encoded { buf, segments } = encoded;
        // SAFETY: the slice covers `buf`'s heap allocation, which stays where it is
        // when the Vec moves into `PendingSend`, and is neither written nor freed until
        // MPI reports the send complete: a `PendingSend` leaves `pending` only in
        // `progress` (after `test` succeeded), and the rank never returns with sends
        // pending (`shut_down` waits for them). If a runtime bug unwinds through the
        // rank instead, dropping the still-pending rsmpi request panics during the
        // unwind, which aborts the process before the buffer could be freed.
        let slice: &'static [u8] = unsafe { std::slice::from_raw_parts(buf.as_ptr(), buf.len()) };
        if buf.len() > POSTED_BYTES {
            let notice = wire::long_notice(buf.len());
            // SAFETY: as for `buf` above.
            let notice_slice: &'static [u8] =
                unsafe { std::slice::from_raw_parts(notice.as_ptr(), notice.len()) };
            self.post(rank, notice_slice, ENVELOPE_TAG, notice, None);
            self.post(rank, slice, LONG_TAG, buf, None);
        } else {
            self.post(rank, slice, ENVELOPE_TAG, buf, None);
        }
        for segment in segments {
            // SAFETY: `segment` shares the allocation of an immutable `Bytes` (its
            // `Arc` is shared, so nothing can write it), and the handle moves into the
            // `PendingSend`, which keeps it alive until MPI reports the send complete,
            // as above.
            let slice: &'static [u8] =
                unsafe { std::slice::from_raw_parts(segment.as_ptr(), segment.len()) };
            self.post(rank, slice, SEGMENT_TAG, Vec::new(), Some(segment));
        }
    }

    /// Start sending `slice` (the bytes of `buf` or of `segment`) and keep its owner
    /// until the send completes.
    fn post(
        &mut self,
        to: Pe,
        slice: &'static [u8],
        tag: i32,
        buf: Vec<u8>,
        segment: Option<Bytes>,
    ) {
        let req = self
            .comm
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, slice, tag);
        self.in_flight += slice.len();
        self.pending.push(PendingSend {
            req: Some(req),
            buf,
            segment,
            len: slice.len(),
        });
    }

    /// End the whole MPI job with `why`: a rank that cannot go on must not leave the
    /// others waiting for it.
    pub(crate) fn abort(&self, why: &str) -> ! {
        eprintln!(
            "chorus: rank {}: {why}; aborting the MPI job",
            self.comm.rank()
        );
        self.comm.abort(70)
    }

    /// True while some send is not yet complete.
    pub(crate) fn sending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// An empty buffer for a send, reusing a spare one that is large enough.
    fn spare_buffer(&mut self, want: usize) -> Vec<u8> {
        let fit = self.spare.iter().position(|b| b.capacity() >= want);
        let mut buf = match fit {
            Some(i) => self.spare.swap_remove(i),
            None => self.spare.pop().unwrap_or_default(),
        };
        buf.clear();
        buf
    }

    /// Complete every send MPI has finished with; true if any did.
    pub(crate) fn progress(&mut self) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < self.pending.len() {
            let Some(req) = self.pending[i].req.take() else {
                i += 1;
                continue;
            };
            match req.test() {
                Ok(_) => {
                    let done = self.pending.swap_remove(i);
                    self.in_flight -= done.len;
                    drop(done.segment);
                    // Notices are shorter than any envelope's header, and never reused.
                    let reusable = done.buf.capacity() > wire::HEADER_BYTES;
                    if self.keep_spares && reusable && self.spare.len() < SPARE_KEEP {
                        self.spare.push(done.buf);
                    }
                    any = true;
                }
                Err(req) => {
                    self.pending[i].req = Some(req);
                    i += 1;
                }
            }
        }
        any
    }

    /// Move one arrived message into the inbox; true if there was one.
    pub(crate) fn pull(&mut self) -> bool {
        match self.probe() {
            Some(got) => {
                self.inbox.push_back(got);
                true
            }
            None => false,
        }
    }

    /// Take one message that has arrived, with its source rank.
    pub(crate) fn receive(&mut self) -> Option<(Arc<Vec<u8>>, i32)> {
        self.inbox.pop_front().or_else(|| self.probe())
    }

    /// Take the next envelope that has arrived, with its source rank.
    fn probe(&mut self) -> Option<(Arc<Vec<u8>>, i32)> {
        // Posting the last arrival's receive again waits until now, the next look:
        // done before that arrival was handed on, the MPI call sat on the path of
        // every reply. The other posted receives take arrivals meanwhile, in order.
        if let Some(mut again) = self.unposted.take() {
            again.post(&self.comm);
            self.posted.push_back(again);
        }
        let status = self.posted.front_mut()?.test()?;
        let posted = self.posted.pop_front().expect("tested just above");
        let source = status.source_rank();
        let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
        let got = posted.bytes(len);
        let arrived = match wire::noticed_len(got) {
            Some(long) => Err(long),
            None => Ok(self.filled(got.len(), |buf| buf.copy_from_slice(got))),
        };
        self.unposted = Some(posted);
        let buf = match arrived {
            Ok(buf) => buf,
            Err(long) => self.receive_long(source, long),
        };
        // A malformed table is left for `decode` to report (it refuses a segmented
        // envelope that was not reassembled).
        if let Ok(Some(plan)) = wire::segment_plan(&buf) {
            return Some((self.receive_segments(&buf, &plan, source), source));
        }
        Some((buf, source))
    }

    /// The envelope `source` announced with a notice of `len` bytes, received whole
    /// from `LONG_TAG`. It is probed before its buffer is allocated, so the buffer
    /// holds only the bytes really sent; the body says its own length, so a notice of
    /// another length is only logged (`decode` checks the envelope itself).
    fn receive_long(&mut self, source: i32, len: u64) -> Arc<Vec<u8>> {
        let from = self.comm.process_at_rank(source);
        let Some((msg, status)) = probe_within(&from, LONG_TAG) else {
            self.abort(&format!(
                "the {len}-byte envelope rank {source} announced did not arrive within {SEGMENT_WAIT:?}"
            ));
        };
        let arrived = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
        if arrived as u64 != len {
            tracing::warn!(
                rank = source,
                "a long envelope of {arrived} bytes came where its notice said {len}"
            );
        }
        self.filled(arrived, |buf| {
            msg.matched_receive_into(buf);
        })
    }

    /// A buffer of exactly `len` bytes, written by `fill`, and kept to be reused once
    /// nobody holds it any more.
    fn filled(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Arc<Vec<u8>> {
        let mut buf = self.buffer(len);
        fill(Arc::get_mut(&mut buf).expect("a fresh receive buffer is not shared"));
        self.reuse_later(&buf);
        buf
    }

    /// A buffer of exactly `len` bytes to receive into, not shared: a reused one if
    /// one is free.
    fn buffer(&mut self, len: usize) -> Arc<Vec<u8>> {
        if len < RECYCLE_MIN {
            self.small_buffer(len)
        } else {
            self.receive_buffer(len)
        }
    }

    /// Keep `buf`, once written, for `buffer` to hand out again when nobody else
    /// holds it.
    fn reuse_later(&mut self, buf: &Arc<Vec<u8>>) {
        if buf.len() < RECYCLE_MIN {
            if self.small.len() >= SMALL_KEEP {
                self.small.pop_front();
            }
            self.small.push_back(Arc::clone(buf));
        } else {
            self.recycle_later(buf);
        }
    }

    /// A buffer of exactly `len` (small) bytes to receive into, not shared: the oldest
    /// small one handed out, if it is free again and large enough.
    fn small_buffer(&mut self, len: usize) -> Arc<Vec<u8>> {
        let reuse = self
            .small
            .front_mut()
            .is_some_and(|b| Arc::get_mut(b).is_some_and(|v| v.capacity() >= len));
        let mut buf = match reuse {
            true => self.small.pop_front().expect("checked above"),
            false => Arc::new(Vec::with_capacity(len.max(SMALL_MIN))),
        };
        Self::fit(&mut buf, len);
        buf
    }

    /// A buffer of exactly `len` bytes to receive into, not shared: the recycled one
    /// freed last (likeliest still in cache), if one is large enough.
    fn receive_buffer(&mut self, len: usize) -> Arc<Vec<u8>> {
        let reusable = self
            .recycle
            .iter_mut()
            .rposition(|b| Arc::get_mut(b).is_some_and(|v| v.capacity() >= len));
        let mut buf = match reusable {
            Some(i) => self.recycle.remove(i),
            None => Arc::new(Vec::with_capacity(len)),
        };
        Self::fit(&mut buf, len);
        buf
    }

    /// Give unshared `buf` a length of `len`, writing only the part beyond its old
    /// length (the receive overwrites it all).
    fn fit(buf: &mut Arc<Vec<u8>>, len: usize) {
        let vec = Arc::get_mut(buf).expect("a receive buffer is not shared");
        if vec.len() < len {
            vec.resize(len, 0);
        } else {
            vec.truncate(len);
        }
    }

    /// Keep `buf` for recycling once nobody else holds it.
    fn recycle_later(&mut self, buf: &Arc<Vec<u8>>) {
        if self.recycle.len() >= RECYCLE_KEEP {
            self.recycle.remove(0);
        }
        self.recycle.push(Arc::clone(buf));
    }

    /// The whole envelope of segmented `main` from `source`: its parts copied into
    /// place and each segment received straight into its gap. The sender posted the
    /// segments with the envelope, so they are on their way. Every segment is probed
    /// before the envelope's buffer is allocated, so a corrupt table (a peer's bug)
    /// costs only the bytes really sent: segments of the wrong length make the
    /// envelope one `decode` refuses (each is still received, so later envelopes stay
    /// paired with their own); one that does not come within `SEGMENT_WAIT` ends the
    /// job.
    fn receive_segments(
        &mut self,
        main: &[u8],
        plan: &wire::SegmentPlan,
        source: i32,
    ) -> Arc<Vec<u8>> {
        let from = self.comm.process_at_rank(source);
        let count = plan.gaps.len();
        let mut probed = Vec::with_capacity(count);
        let mut fault = None;
        for (i, &(_, len)) in plan.gaps.iter().enumerate() {
            let Some((msg, status)) = probe_within(&from, SEGMENT_TAG) else {
                self.abort(&format!(
                    "segment {i} of {count} that rank {source} announced did not arrive within {SEGMENT_WAIT:?}"
                ));
            };
            let arrived = status.count(u8::equivalent_datatype()) as usize;
            if fault.is_none() && arrived == len {
                probed.push((msg, len));
                continue;
            }
            // Every announced segment is taken off the network, refused or not, so the
            // sender's later segments stay in step with their envelopes.
            let _ = (msg, status).matched_receive_vec::<u8>();
            fault.get_or_insert(format!(
                "segment {i} is {arrived} bytes where its table says {len}"
            ));
        }
        if let Some(fault) = fault {
            tracing::warn!(rank = source, "refusing a segmented envelope: {fault}");
            // Segments already matched must still be received; each holds what the
            // sender really sent, so the scratch space is bounded by that.
            for (msg, len) in probed {
                let mut scratch = vec![0u8; len];
                msg.matched_receive_into(&mut scratch[..]);
            }
            // `main` still says it is segmented, so `decode` refuses it.
            return Arc::new(main.to_vec());
        }
        self.filled(plan.total, |whole| {
            plan.assemble(main, whole);
            for ((msg, len), &(at, _)) in probed.into_iter().zip(&plan.gaps) {
                msg.matched_receive_into(&mut whole[at..at + len]);
            }
        })
    }
}

/// The next message from `from` on `tag`, waited for up to `SEGMENT_WAIT` (see there);
/// None if it did not come.
fn probe_within(from: &Process<'_>, tag: i32) -> Option<(Message, Status)> {
    let deadline = Instant::now() + SEGMENT_WAIT;
    loop {
        if let Some(got) = from.immediate_matched_probe_with_tag(tag) {
            return Some(got);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// After the exit: finish our sends while dropping whatever still arrives, then wait
/// for every rank to get here.
pub(crate) fn shut_down(link: &mut Link) {
    let mut backoff = Backoff(0);
    let drain = |link: &mut Link, backoff: &mut Backoff| {
        let mut any = link.progress();
        while link.receive().is_some() {
            any = true;
        }
        if any {
            backoff.reset();
        } else {
            backoff.wait();
        }
    };
    while !link.pending.is_empty() {
        drain(link, &mut backoff);
    }
    let mut barrier = Some(link.comm.immediate_barrier());
    while let Some(req) = barrier.take() {
        match req.test() {
            Ok(_) => {}
            Err(req) => {
                barrier = Some(req);
                drain(link, &mut backoff);
            }
        }
    }
    // Messages sent before a peer reached the barrier may still be queued here.
    while link.receive().is_some() {}
}
