//! A rank's side of the network: its sends in flight, its posted receives, and the
//! buffers both reuse.
//!
//! Sends are nonblocking, from owned buffers freed (or kept as spares) once MPI
//! reports them complete. Envelopes up to `POSTED_BYTES` land in receives posted
//! ahead of them; a longer one is announced by a notice and taken whole by matched
//! probe, as are the segments of a segmented envelope.

mod announced;

use super::backoff::Backoff;
use super::posted_receive::PostedReceive;
use crate::base::bytes::Bytes;
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::msg::envelope::Envelope;
use crate::wire::{self, SegmentPlan};
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::{BTreeMap, VecDeque};
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

/// A send to start: `slice` (the bytes of `buf` or of `segment`) to `to` on `tag`.
struct Post {
    to: Pe,
    slice: &'static [u8],
    tag: i32,
    buf: Vec<u8>,
    segment: Option<Bytes>,
}

/// A body or segment held back by `--fault-hold-long-ms` until `due`.
struct HeldPost {
    due: Instant,
    post: Post,
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
    /// Bytes of the sends in `pending` from the link's own buffers.
    in_flight: usize,
    /// Bytes of the segments in `pending` (shared with the sending program).
    segments_in_flight: usize,
    /// Completed send buffers kept for reuse.
    spare: Vec<Vec<u8>>,
    /// False when other threads encode the envelopes (SMP mode): nothing here would
    /// take the spare buffers again.
    keep_spares: bool,
    /// Whole envelopes taken off the network, in the order they are to be handled:
    /// those that came while a send waited for room (at most what arrives while
    /// `MAX_IN_FLIGHT` bytes, or `MAX_SEGMENTS_IN_FLIGHT` bytes of segments, of this
    /// rank's sends drain) and those whose announced
    /// parts came after later envelopes; emptied by the next polls before anything
    /// else is received.
    inbox: VecDeque<(Whole, i32)>,
    /// Sources with an envelope whose announced parts have not all come, by rank
    /// (at most one entry per rank of the job).
    waiting: BTreeMap<i32, announced::Waiting>,
    /// `--fault-hold-long-ms`: how long a long envelope's body and segments wait
    /// after its notice before they are sent.
    hold: Option<Duration>,
    /// Bodies and segments held by `hold`, due in this order: at most what the rank
    /// sends within the hold.
    held_posts: VecDeque<HeldPost>,
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
/// Bytes of segments a rank keeps in flight before a new send waits for old ones.
/// A segment's bytes are the program's own `Bytes`, so sending more of them at once
/// allocates nothing; MPI moves each as the receiver asks for it, so a receiver
/// keeps pulling data while its sender is descheduled (a 2-core machine running
/// both ranks and more). With the 8 MiB of `MAX_IN_FLIGHT`, a 1 MiB stream ran at
/// 0.85-0.95x raw MPI, whose sender posts the whole stream at once.
const MAX_SEGMENTS_IN_FLIGHT: usize = 64 << 20;
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

/// An envelope taken whole off the network: it fills `buf` from byte `at` on.
pub(crate) struct Whole {
    /// The receive buffer, which `Bytes` decoded from the envelope keep views of.
    pub(crate) buf: Arc<Vec<u8>>,
    /// Where the envelope starts: bytes before it put a segment's landing place on an
    /// `ALIGN`-byte boundary.
    pub(crate) at: usize,
}

impl Whole {
    /// An envelope that fills all of `buf`.
    fn all(buf: Arc<Vec<u8>>) -> Self {
        Whole { buf, at: 0 }
    }

    /// The envelope's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.at..]
    }
}

/// Segments are received to this boundary. The kernel's copy from the sending
/// process (OpenMPI's CMA single copy) runs about 6% slower into a destination 50
/// bytes past a cache line than into an aligned one; an envelope's header, body and
/// the payload before a segment put it at such an offset.
const ALIGN: usize = 64;

/// Bytes to leave before an envelope in a buffer at address `base` so that its byte
/// `at` lands on an `ALIGN`-byte boundary.
fn landing_pad(base: usize, at: usize) -> usize {
    (ALIGN - (base.wrapping_add(at)) % ALIGN) % ALIGN
}

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
        .map_err(|e| RuntimeError::Encode {
            pe: env.src,
            to,
            reason: e.to_string(),
        })?;
        // Refused whole, before any part (a notice, the main part) leaves: rsmpi
        // panics on a longer slice, and a receiver would wait for the rest.
        let longest = segments.iter().map(|s| s.len()).chain([buf.len()]).max();
        if let Some(n) = longest.filter(|&n| n > MAX_MPI_MESSAGE) {
            return Err(RuntimeError::MessageTooLong {
                pe: env.src,
                to,
                bytes: n,
                max: MAX_MPI_MESSAGE,
            });
        }
        Ok(Encoded { buf, segments })
    }
}

impl Link {
    /// The link over `comm`; `hold` is `--fault-hold-long-ms`.
    pub(crate) fn new(comm: SimpleCommunicator, keep_spares: bool, hold: Option<Duration>) -> Self {
        Link {
            posted: (0..POSTED)
                .map(|_| PostedReceive::new(&comm, POSTED_BYTES, ENVELOPE_TAG))
                .collect(),
            unposted: None,
            comm,
            pending: Vec::new(),
            in_flight: 0,
            segments_in_flight: 0,
            spare: Vec::new(),
            keep_spares,
            inbox: VecDeque::new(),
            waiting: BTreeMap::new(),
            hold,
            held_posts: VecDeque::new(),
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
        while self.in_flight > MAX_IN_FLIGHT || self.segments_in_flight > MAX_SEGMENTS_IN_FLIGHT {
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
        let post = Post {
            to,
            slice,
            tag,
            buf,
            segment,
        };
        match self.hold.filter(|_| tag != ENVELOPE_TAG) {
            Some(hold) => self.held_posts.push_back(HeldPost {
                due: Instant::now() + hold,
                post,
            }),
            None => self.post_now(post),
        }
    }

    /// Post held bodies and segments that are due, in order; true if any was.
    fn post_held(&mut self) -> bool {
        let now = Instant::now();
        let mut any = false;
        while self.held_posts.front().is_some_and(|h| h.due <= now) {
            let h = self.held_posts.pop_front().expect("checked above");
            self.post_now(h.post);
            any = true;
        }
        any
    }

    /// Start sending `post` now.
    fn post_now(&mut self, post: Post) {
        let Post {
            to,
            slice,
            tag,
            buf,
            segment,
        } = post;
        let req = self
            .comm
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, slice, tag);
        if segment.is_some() {
            self.segments_in_flight += slice.len();
        } else {
            self.in_flight += slice.len();
        }
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

    /// True while some send is not yet complete (or held, not yet started).
    pub(crate) fn sending(&self) -> bool {
        !self.pending.is_empty() || !self.held_posts.is_empty()
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
        let mut any = self.post_held();
        let mut i = 0;
        while i < self.pending.len() {
            let Some(req) = self.pending[i].req.take() else {
                i += 1;
                continue;
            };
            match req.test() {
                Ok(_) => {
                    let done = self.pending.swap_remove(i);
                    match done.segment {
                        Some(segment) => {
                            self.segments_in_flight -= done.len;
                            drop(segment);
                        }
                        None => self.in_flight -= done.len,
                    }
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

    /// Take what has arrived off the network into the inbox; true if anything came.
    pub(crate) fn pull(&mut self) -> bool {
        let completed = self.complete_waiting();
        completed | self.take_posted()
    }

    /// Take the next whole envelope that has arrived, with its source rank.
    pub(crate) fn receive(&mut self) -> Option<(Whole, i32)> {
        loop {
            if let Some(got) = self.inbox.pop_front() {
                return Some(got);
            }
            if !self.pull() {
                return None;
            }
        }
    }

    /// Take the message in the first posted receive, if one has come, into the inbox
    /// (or, if it waits for an announced part, into its source's wait); true if one had.
    fn take_posted(&mut self) -> bool {
        // Posting the last arrival's receive again waits until now, the next look:
        // done before that arrival was handed on, the MPI call sat on the path of
        // every reply. The other posted receives take arrivals meanwhile, in order.
        if let Some(mut again) = self.unposted.take() {
            again.post(&self.comm);
            self.posted.push_back(again);
        }
        let Some(status) = self.posted.front_mut().and_then(PostedReceive::test) else {
            return false;
        };
        let posted = self.posted.pop_front().expect("tested just above");
        let source = status.source_rank();
        let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
        let got = posted.bytes(len);
        let first = self.filled(got.len(), |buf| buf.copy_from_slice(got));
        self.unposted = Some(posted);
        if let Some(whole) = self.arrived(source, first) {
            self.inbox.push_back((whole, source));
        }
        true
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

    /// A buffer for segmented envelope `main` whole, with its segments received into it
    /// by `receive`, called with each one's place in order: the largest segment lands
    /// on an `ALIGN`-byte boundary.
    fn reassembled(
        &mut self,
        main: &[u8],
        plan: &SegmentPlan,
        mut receive: impl FnMut(&mut [u8]),
    ) -> Whole {
        let mut buf = self.buffer(plan.total + ALIGN - 1);
        let vec = Arc::get_mut(&mut buf).expect("a fresh receive buffer is not shared");
        let largest = plan.gaps.iter().max_by_key(|&&(_, len)| len);
        let pad = largest.map_or(0, |&(at, _)| landing_pad(vec.as_ptr() as usize, at));
        vec.truncate(pad + plan.total);
        let whole = &mut vec[pad..];
        plan.assemble(main, whole);
        for &(at, len) in &plan.gaps {
            receive(&mut whole[at..at + len]);
        }
        self.reuse_later(&buf);
        Whole { buf, at: pad }
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
    while link.sending() {
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

#[cfg(test)]
mod tests {
    use super::{landing_pad, ALIGN};

    #[test]
    fn a_landing_pad_puts_the_byte_on_a_boundary() {
        for base in [0usize, 1, 16, 63, 64, 4096 + 17, usize::MAX - 5] {
            for at in [0usize, 1, 50, 63, 64, 100_000] {
                let pad = landing_pad(base, at);
                assert!(pad < ALIGN, "base {base} at {at}: pad {pad}");
                assert_eq!(
                    base.wrapping_add(pad + at) % ALIGN,
                    0,
                    "base {base} at {at}"
                );
            }
        }
    }
}
