//! The mpi layer: PEs on MPI ranks under mpirun, one per rank unless --pes-per-rank says more.
//!
//! One thread owns every MPI object (rsmpi communicators are not `Send`): the rank's
//! thread runs its PE and drives MPI between handlers. Sends are nonblocking, from
//! owned buffers that are freed once MPI reports them complete; receives are by
//! matched probe, so a message is taken whole whatever its size. Envelopes travel in
//! the versioned wire form of `crate::wire`; bad bytes become a `RuntimeError::Decode`
//! naming the sending rank, handled by the job's `--on-error` policy.
//!
//! Startup: the registry digests of all ranks are compared (a mismatch ends every
//! rank with an error naming the first differing type), and each rank measures its
//! clock offset to rank 0 so times agree across ranks. Shutdown: after the job's exit,
//! each rank keeps receiving (and dropping) while its own sends complete, then meets
//! the others in a nonblocking barrier, so no rank finalizes while a peer still sends
//! to it; finally the ranks exchange their reports, so every rank returns the whole
//! job's `RunReport`.
//!
//! With `--pes-per-rank` above 1 (Charm++'s SMP mode, `smp.rs`), worker threads run
//! the rank's PEs and this rank's thread only moves envelopes to and from MPI.

mod posted_receive;
mod smp;

use posted_receive::PostedReceive;

use super::{real_work, Job, MachineLayer, Transport};
use crate::bytes::Bytes;
use crate::config::WorkMode;
use crate::error::RuntimeError;
use crate::ids::Pe;
use crate::registry::Registry;
use crate::report::{PeReport, RunReport};
use crate::runtime::{Envelope, PeRuntime, PeSetup};
use crate::trace::JobTrace;
use crate::wire;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::point_to_point::{Message, Status};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Process, SimpleCommunicator};
use mpi::traits::*;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages a PE runs, and takes off the network, between two looks at it.
const BATCH: usize = 64;
/// Bytes of envelopes a PE takes off the network before it runs their handlers:
/// fewer than its recycled receive buffers hold, so a stream of long messages keeps
/// reusing them instead of faulting in fresh pages.
const PASS_BYTES: usize = 4 << 20;
/// Tag of the trace records ranks send to rank 0 after the job.
const TRACE_TAG: i32 = 7;
/// Idle polls spent spinning, then yielding, before the rank starts to sleep.
const SPIN_POLLS: u32 = 2_000;
const YIELD_POLLS: u32 = 200;
/// Longest sleep of an idle rank: bounds the latency a sleeping rank adds.
const MAX_SLEEP: Duration = Duration::from_micros(500);

thread_local! {
    static SESSION: RefCell<Session> = const { RefCell::new(Session::Never) };
}

enum Session {
    Never,
    Active(Universe),
    Finalized,
}

/// Keeps MPI initialised across several runs in one process, and finalises it when
/// dropped. Without one, a run on the mpi layer initialises and finalises MPI itself.
pub struct MpiSession {
    /// MPI lives on the thread that initialised it.
    _not_send: PhantomData<*const ()>,
}

impl MpiSession {
    /// Initialise MPI on this thread.
    pub fn init() -> Result<Self, RuntimeError> {
        start_mpi()?;
        Ok(MpiSession {
            _not_send: PhantomData,
        })
    }
}

impl MpiSession {
    /// MPI's world communicator, for programs that also use MPI directly (chorus
    /// itself talks on a duplicate of it, so the two never mix).
    pub fn world(&self) -> SimpleCommunicator {
        world().expect("an MpiSession keeps MPI initialised")
    }
}

impl Drop for MpiSession {
    fn drop(&mut self) {
        finish_mpi();
    }
}

fn start_mpi() -> Result<(), RuntimeError> {
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        match &*s {
            Session::Active(_) => Ok(()),
            Session::Finalized => Err(RuntimeError::Invalid(
                "MPI was already finalised in this process; hold a chorus_core::MpiSession to run several jobs".into(),
            )),
            Session::Never => {
                let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
                    .ok_or_else(|| {
                        RuntimeError::Invalid("MPI could not be initialised (was it already initialised outside chorus?)".into())
                    })?;
                *s = Session::Active(universe);
                Ok(())
            }
        }
    })
}

fn finish_mpi() {
    SESSION.with(|s| {
        // Dropping the universe finalises MPI.
        *s.borrow_mut() = Session::Finalized;
    });
}

fn session_active() -> bool {
    SESSION.with(|s| matches!(&*s.borrow(), Session::Active(_)))
}

fn world() -> Option<SimpleCommunicator> {
    SESSION.with(|s| match &*s.borrow() {
        Session::Active(u) => Some(u.world()),
        _ => None,
    })
}

/// One PE per MPI rank.
pub struct Mpi;

impl MachineLayer for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn run(&self, job: Job) -> Result<RunReport, RuntimeError> {
        let one_shot = !session_active();
        start_mpi()?;
        let world =
            world().ok_or_else(|| RuntimeError::Invalid("MPI is not initialised".into()))?;
        let ppr = job.config.pes_per_rank as usize;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if ppr > 1 {
                smp::run_rank(&world, job, ppr)
            } else {
                run_rank(&world, job)
            }
        }));
        let result = match outcome {
            Ok(r) => r,
            Err(p) => {
                // A bug in the runtime itself: take the whole job down with the
                // message rather than leave the other ranks waiting.
                eprintln!(
                    "chorus: rank {} panicked: {}; aborting the MPI job",
                    world.rank(),
                    crate::runtime::panic_message(p)
                );
                world.abort(70);
            }
        };
        if one_shot {
            finish_mpi();
        }
        result
    }
}

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
struct Link {
    /// Receives of envelopes, posted in this order, so MPI fills them in this order.
    /// Declared before `comm`, so they are cancelled before it is freed.
    posted: VecDeque<PostedReceive>,
    comm: SimpleCommunicator,
    pending: Vec<PendingSend>,
    /// Bytes of the sends in `pending`.
    in_flight: usize,
    /// Completed send buffers kept for reuse.
    spare: Vec<Vec<u8>>,
    /// False when other threads encode the envelopes (SMP mode): nothing here would
    /// take the spare buffers again.
    keep_spares: bool,
    /// Messages taken off the network while a send waited for room.
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
const POSTED_BYTES: usize = 16 << 10;
/// How long a receiver waits for a segment its envelope announced before refusing
/// the envelope: the sender posts segments together with it, so only a corrupt
/// envelope waits this long.
const SEGMENT_WAIT: Duration = Duration::from_secs(30);

/// An envelope in its wire form: its bytes, and the long byte strings that follow
/// it as segments (see `wire::encode_segmented`).
pub(super) struct Encoded {
    buf: Vec<u8>,
    segments: Vec<Bytes>,
}

impl Encoded {
    /// `env` encoded for PE `to` into a buffer from `buffer`, which gets the size the
    /// envelope wants (0 for a segmented one) and returns an empty buffer.
    pub(super) fn new(
        env: &Envelope,
        to: Pe,
        buffer: impl FnOnce(usize) -> Vec<u8>,
    ) -> Result<Self, RuntimeError> {
        // The size pass also says whether the payload holds a long `Bytes`.
        let (want, long) =
            crate::bytes::noting_long(|| (wire::size_hint(env), crate::bytes::any_noted()));
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
        Ok(Encoded { buf, segments })
    }
}

impl Link {
    fn new(comm: SimpleCommunicator, keep_spares: bool) -> Self {
        Link {
            posted: (0..POSTED)
                .map(|_| PostedReceive::new(&comm, POSTED_BYTES, ENVELOPE_TAG))
                .collect(),
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

    fn send(&mut self, to: Pe, env: &Envelope) -> Result<(), RuntimeError> {
        let encoded = Encoded::new(env, to, |want| self.spare_buffer(want))?;
        self.post_encoded(to, encoded);
        Ok(())
    }

    /// Start sending an encoded envelope and its segments to `rank`.
    fn post_encoded(&mut self, rank: Pe, encoded: Encoded) {
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
    fn progress(&mut self) -> bool {
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
                    if self.keep_spares && done.buf.capacity() > 0 && self.spare.len() < SPARE_KEEP
                    {
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
    fn pull(&mut self) -> bool {
        match self.probe() {
            Some(got) => {
                self.inbox.push_back(got);
                true
            }
            None => false,
        }
    }

    /// Take one message that has arrived, with its source rank.
    fn receive(&mut self) -> Option<(Arc<Vec<u8>>, i32)> {
        self.inbox.pop_front().or_else(|| self.probe())
    }

    /// Take the next envelope that has arrived, with its source rank.
    fn probe(&mut self) -> Option<(Arc<Vec<u8>>, i32)> {
        let status = self.posted.front_mut()?.test()?;
        let mut posted = self.posted.pop_front().expect("tested just above");
        let source = status.source_rank();
        let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
        let got = posted.bytes(len);
        let arrived = match wire::noticed_len(got) {
            Some(long) => Err((long, got.to_vec())),
            None => {
                let mut buf = self.buffer(len);
                Arc::get_mut(&mut buf)
                    .expect("a fresh receive buffer is not shared")
                    .copy_from_slice(got);
                self.reuse_later(&buf);
                Ok(buf)
            }
        };
        // Posted again before anything else is received, so arrivals keep landing in
        // the posted buffers in order.
        posted.post(&self.comm);
        self.posted.push_back(posted);
        let buf = match arrived {
            Ok(buf) => buf,
            Err((long, notice)) => self.receive_long(source, long, notice),
        };
        // A malformed table is left for `decode` to report (it refuses a segmented
        // envelope that was not reassembled).
        if let Ok(Some(plan)) = wire::segment_plan(&buf) {
            return Some((self.receive_segments(&buf, &plan, source), source));
        }
        Some((buf, source))
    }

    /// The `len`-byte envelope `source` announced with `notice`, received whole from
    /// `LONG_TAG`. If it does not come as announced, `notice` itself, which `decode`
    /// refuses; the reason is logged. It is probed before its buffer is allocated, so
    /// a corrupt notice costs only the bytes really sent.
    fn receive_long(&mut self, source: i32, len: u64, notice: Vec<u8>) -> Arc<Vec<u8>> {
        let from = self.comm.process_at_rank(source);
        let Some((msg, status)) = probe_within(&from, LONG_TAG) else {
            tracing::warn!(
                rank = source,
                "refusing a long envelope: it did not arrive within {SEGMENT_WAIT:?} of its notice"
            );
            return Arc::new(notice);
        };
        let arrived = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
        if arrived as u64 != len {
            let _ = (msg, status).matched_receive_vec::<u8>();
            tracing::warn!(
                rank = source,
                "refusing a long envelope of {arrived} bytes: its notice says {len}"
            );
            return Arc::new(notice);
        }
        let mut buf = self.buffer(arrived);
        let vec = Arc::get_mut(&mut buf).expect("a fresh receive buffer is not shared");
        msg.matched_receive_into(&mut vec[..]);
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

    /// A buffer of exactly `len` bytes to receive into, not shared: a recycled one, if
    /// one is large enough.
    fn receive_buffer(&mut self, len: usize) -> Arc<Vec<u8>> {
        let reusable = self
            .recycle
            .iter_mut()
            .position(|b| Arc::get_mut(b).is_some_and(|v| v.capacity() >= len));
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
    /// costs only the bytes really sent: segments of the wrong length, or that do
    /// not come within `SEGMENT_WAIT`, make the envelope one `decode` refuses.
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
                fault.get_or_insert(format!(
                    "segment {i} of {count} did not arrive within {SEGMENT_WAIT:?}"
                ));
                break;
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
        let mut buf = self.receive_buffer(plan.total);
        let whole = Arc::get_mut(&mut buf).expect("a fresh receive buffer is not shared");
        plan.assemble(main, whole);
        for ((msg, len), &(at, _)) in probed.into_iter().zip(&plan.gaps) {
            msg.matched_receive_into(&mut whole[at..at + len]);
        }
        self.recycle_later(&buf);
        buf
    }
}

/// The next message from `from` on `tag`, waited for up to `SEGMENT_WAIT`: its sender
/// posted it together with the envelope that announced it, so only a corrupt
/// envelope waits that long.
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

/// The PE's transport: sends go straight to MPI.
struct MpiNet {
    link: Rc<RefCell<Link>>,
    /// MPI time of this rank's job start, aligned to rank 0's.
    epoch: f64,
}

impl Transport for MpiNet {
    fn send(&mut self, to: Pe, env: Envelope) -> Result<(), RuntimeError> {
        self.link.borrow_mut().send(to, &env)
    }

    fn flush(&mut self) {
        self.link.borrow_mut().progress();
    }

    fn now(&self) -> f64 {
        mpi::time() - self.epoch
    }

    fn work(&mut self, d: Duration, mode: WorkMode) {
        real_work(d, mode);
    }
}

/// How an idle rank waits: spin, then yield, then sleep with growing naps.
struct Backoff(u32);

impl Backoff {
    fn reset(&mut self) {
        self.0 = 0;
    }

    fn wait(&mut self) {
        if let Some(nap) = self.next() {
            std::thread::sleep(nap);
        }
    }

    /// Spin or yield once, or say how long to sleep (the caller may wait on
    /// something else meanwhile).
    fn next(&mut self) -> Option<Duration> {
        self.0 = self.0.saturating_add(1);
        if self.0 <= SPIN_POLLS {
            std::hint::spin_loop();
            None
        } else if self.0 <= SPIN_POLLS + YIELD_POLLS {
            std::thread::yield_now();
            None
        } else {
            let naps = self.0 - SPIN_POLLS - YIELD_POLLS;
            Some(Duration::from_micros(u64::from(naps.min(500))).min(MAX_SLEEP))
        }
    }
}

fn run_rank(world: &SimpleCommunicator, job: Job) -> Result<RunReport, RuntimeError> {
    let (start, comm) = RankStart::new(world, &job, 1)?;
    let link = Rc::new(RefCell::new(Link::new(comm, true)));
    let setup = start.pe_setup(&job.config, start.rank);
    let net = MpiNet {
        link: link.clone(),
        epoch: start.epoch,
    };
    let mut rt = PeRuntime::new(setup, job.registry.clone(), Box::new(net));
    if start.rank == 0 {
        rt.run_main(job.main);
    }
    pe_loop(&mut rt, &link);
    shut_down(&mut link.borrow_mut());
    let report = start.finish(&link.borrow().comm, vec![rt.into_report()]);
    report
}

/// What a rank sets up before its PEs run, and finishes after, however many PEs it
/// runs.
struct RankStart {
    began: Instant,
    rank: Pe,
    ppr: usize,
    npes: usize,
    /// This rank's job start on its MPI clock, aligned to rank 0's.
    epoch: f64,
    trace: Option<JobTrace>,
}

impl RankStart {
    /// Check that every rank runs the same types and PEs per rank, align the clocks
    /// and open the trace; also returns the rank's communicator for the run, its own
    /// so that user MPI traffic on the world never matches ours.
    fn new(
        world: &SimpleCommunicator,
        job: &Job,
        ppr: usize,
    ) -> Result<(Self, SimpleCommunicator), RuntimeError> {
        let began = Instant::now();
        let comm = world.duplicate();
        check_registry(&comm, &job.registry)?;
        check_pes_per_rank(&comm, ppr)?;
        let epoch = clock_epoch(&comm);
        let npes = comm.size() as usize * ppr;
        let trace = start_trace(&comm, &job.config, npes)?;
        let start = RankStart {
            began,
            rank: comm.rank() as Pe,
            ppr,
            npes,
            epoch,
            trace,
        };
        Ok((start, comm))
    }

    /// How PE `pe` of this rank starts.
    fn pe_setup(&self, cfg: &crate::config::Config, pe: Pe) -> PeSetup {
        PeSetup {
            me: pe,
            npes: self.npes,
            arity: cfg.tree_arity as usize,
            seed: cfg.seed,
            policy: cfg.on_error,
            work_mode: cfg.work,
            trace: self.trace.as_ref().map(|t| t.pe(pe, self.rank)),
        }
    }

    /// The job's report from this rank's PEs' reports (in PE order), exchanged over
    /// `comm` once every rank has shut down its traffic.
    fn finish(
        self,
        comm: &SimpleCommunicator,
        mine: Vec<PeReport>,
    ) -> Result<RunReport, RuntimeError> {
        let per_pe = exchange_reports(comm, mine, self.ppr);
        let wall_s = self.began.elapsed().as_secs_f64();
        let trace = match self.trace {
            Some(t) => gather_trace(comm, t)?,
            None => None,
        };
        crate::finish_run(RunReport {
            layer: "mpi",
            pes: self.npes,
            wall_s,
            per_pe,
            sim: None,
            trace,
        })
    }
}

/// Every rank's PEs per rank, compared: PE numbers map to ranks by it, so ranks that
/// disagree would send each other's messages astray.
fn check_pes_per_rank(comm: &SimpleCommunicator, ppr: usize) -> Result<(), RuntimeError> {
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&(ppr as u64), &mut all[..]);
    match all.iter().position(|&n| n != all[0]) {
        None => Ok(()),
        Some(odd) => Err(RuntimeError::Invalid(format!(
            "rank {odd} runs {} PEs per rank but rank 0 runs {}: give every rank the same --pes-per-rank (CHORUS_PES_PER_RANK)",
            all[odd], all[0]
        ))),
    }
}

/// Run the PE until the job exits, taking messages from the network between handlers.
fn pe_loop(rt: &mut PeRuntime, link: &Rc<RefCell<Link>>) {
    let me = rt.core.me;
    let mut backoff = Backoff(0);
    // Quiescence detection hears of idleness once per idle spell, not on every poll.
    let mut idle_told = false;
    // Set after a handler computed: MPI made no progress meanwhile, and OpenMPI's
    // first probe after that may only progress without matching what arrived, so
    // a second one looks again before the next handler runs.
    let mut computed = false;
    // Set while the last pass found nothing to do.
    let mut idle = false;
    while !rt.exiting() {
        let mut busy = false;
        let mut batch = BATCH;
        if std::mem::take(&mut computed) {
            let mut l = link.borrow_mut();
            if !l.pull() {
                l.pull();
            }
        }
        // Bounded, so a peer streaming faster than the handlers run cannot make the
        // PE hold ever more received envelopes (their buffers are reused only once
        // their messages have run).
        let (mut taken, mut taken_bytes) = (0, 0);
        while taken < BATCH && taken_bytes < PASS_BYTES {
            let got = link.borrow_mut().receive();
            let Some((bytes, source)) = got else { break };
            busy = true;
            taken += 1;
            taken_bytes += bytes.len();
            match wire::decode(bytes, me) {
                Ok(env) => rt.accept(env),
                Err(e) => rt.core.fail(e.at(me, &format!("rank {source}"))),
            }
            // A PE that was idle runs its first arrival at once: the probe that would
            // end the drain costs every message's latency. Only that one runs before
            // the next pass drains whatever else arrived, so priorities still decide
            // among everything that came in.
            if std::mem::take(&mut idle) {
                batch = 1;
                break;
            }
        }
        let mut ran = 0;
        while ran < batch && !rt.exiting() && rt.step() {
            ran += 1;
            if rt.take_worked() {
                computed = true;
                break;
            }
        }
        // Sends are completed after the handlers, off the path of the next reply.
        {
            let mut l = link.borrow_mut();
            if !l.pending.is_empty() {
                busy |= l.progress();
            }
        }
        if rt.exiting() {
            break;
        }
        idle = !busy && ran == 0;
        if !idle {
            idle_told = false;
            backoff.reset();
        } else if !idle_told {
            rt.on_idle();
            rt.trace_idle();
            idle_told = true;
        } else {
            backoff.wait();
        }
    }
}

/// After the exit: finish our sends while dropping whatever still arrives, then wait
/// for every rank to get here.
fn shut_down(link: &mut Link) {
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

/// Every rank opens its part of the trace; if any rank cannot, every rank returns an
/// error (rather than some ranks running on while others left).
fn start_trace(
    comm: &SimpleCommunicator,
    cfg: &crate::config::Config,
    npes: usize,
) -> Result<Option<JobTrace>, RuntimeError> {
    let mine = JobTrace::start(cfg, "rank", npes);
    // 0: could not open, 1: not tracing, 2: tracing.
    let state: u8 = match &mine {
        Err(_) => 0,
        Ok(None) => 1,
        Ok(Some(_)) => 2,
    };
    let mut all = vec![0u8; comm.size() as usize];
    comm.all_gather_into(&state, &mut all[..]);
    if let Err(e) = mine {
        return Err(e);
    }
    if let Some(bad) = all.iter().position(|&s| s == 0) {
        return Err(RuntimeError::Remote(format!(
            "rank {bad} could not open its trace spool next to --trace"
        )));
    }
    if let Some(odd) = all.iter().position(|&s| s != state) {
        return Err(RuntimeError::Invalid(format!(
            "rank {odd} and rank {} disagree on --trace: give every rank the same arguments and CHORUS_TRACE",
            comm.rank()
        )));
    }
    mine
}

/// Every rank sends its trace records to rank 0, which writes the one merged file;
/// returns rank 0's report of the file (and `None` elsewhere).
fn gather_trace(
    comm: &SimpleCommunicator,
    trace: JobTrace,
) -> Result<Option<crate::trace::TraceReport>, RuntimeError> {
    let rank = comm.rank();
    if rank != 0 {
        let root = comm.process_at_rank(0);
        let tables = bincode::serialize(&trace.tables()).unwrap_or_default();
        root.send_with_tag(&tables[..], TRACE_TAG);
        // Buffers stream one at a time; an empty message ends them, sent even when the
        // spool cannot be read so that rank 0 never waits for records that will not come.
        let exported = trace.export(|chunk| root.send_with_tag(&chunk[..], TRACE_TAG));
        root.send_with_tag(&[] as &[u8], TRACE_TAG);
        return exported.map(|()| None);
    }
    for from in 1..comm.size() {
        let peer = comm.process_at_rank(from);
        let (tables, _) = peer.receive_vec_with_tag::<u8>(TRACE_TAG);
        let who = format!("rank {from}");
        let tables: Result<crate::trace::TraceTables, _> = bincode::deserialize(&tables);
        let importer = tables.as_ref().map(|t| trace.importer(t));
        let mut failed = None;
        loop {
            let (bytes, _) = peer.receive_vec_with_tag::<u8>(TRACE_TAG);
            if bytes.is_empty() {
                break;
            }
            // Keep receiving after a bad buffer so the sender can finish.
            let imported = match &importer {
                Ok(imp) => trace.import(imp, &who, &bytes),
                Err(e) => Err(RuntimeError::Invalid(format!(
                    "the trace name table from {who} does not decode: {e}"
                ))),
            };
            if let Err(e) = imported {
                failed.get_or_insert(e);
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    trace.finish().map(Some)
}

/// Every rank's registry digest, compared; on a mismatch, every rank returns the
/// same error naming the first differing registration.
fn check_registry(comm: &SimpleCommunicator, reg: &Registry) -> Result<(), RuntimeError> {
    let digest = reg.digest();
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&digest, &mut all[..]);
    let Some(odd) = all.iter().position(|&d| d != all[0]) else {
        return Ok(());
    };
    let manifest_of = |root: usize| -> Vec<String> {
        let mut bytes = if comm.rank() as usize == root {
            bincode::serialize(reg.manifest()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut len = bytes.len() as u64;
        comm.process_at_rank(root as i32).broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        comm.process_at_rank(root as i32)
            .broadcast_into(&mut bytes[..]);
        bincode::deserialize(&bytes).unwrap_or_default()
    };
    let first = manifest_of(0);
    let other = manifest_of(odd);
    let mismatch =
        Registry::compare(&first, &other)
            .err()
            .unwrap_or_else(|| crate::error::RegistryMismatch {
                index: 0,
                local: "(same types, different digest)".into(),
                remote: "(same types, different digest)".into(),
            });
    Err(RuntimeError::RegistryAcrossRanks {
        rank: odd as u32,
        mismatch,
    })
}

/// This rank's job-start time on its own MPI clock, aligned to rank 0's: rank 0
/// exchanges a few timestamps with each rank and keeps the round trip with the
/// least delay, as NTP does.
fn clock_epoch(comm: &SimpleCommunicator) -> f64 {
    const ROUNDS: usize = 5;
    let rank = comm.rank();
    let mut offset = 0.0f64;
    for peer in 1..comm.size() {
        if rank == 0 {
            let mut best = (f64::INFINITY, 0.0);
            for _ in 0..ROUNDS {
                let t0 = mpi::time();
                comm.process_at_rank(peer).send(&t0);
                let (t_peer, _) = comm.process_at_rank(peer).receive::<f64>();
                let t1 = mpi::time();
                if t1 - t0 < best.0 {
                    best = (t1 - t0, t_peer - (t0 + t1) / 2.0);
                }
            }
            comm.process_at_rank(peer).send(&best.1);
        } else if rank == peer {
            for _ in 0..ROUNDS {
                let (_, _) = comm.process_at_rank(0).receive::<f64>();
                comm.process_at_rank(0).send(&mpi::time());
            }
            offset = comm.process_at_rank(0).receive::<f64>().0;
        }
    }
    let mut start0 = if rank == 0 { mpi::time() } else { 0.0 };
    comm.process_at_rank(0).broadcast_into(&mut start0);
    start0 + offset
}

/// A PE's report as it crosses ranks: errors as text.
#[derive(Serialize, Deserialize)]
struct WireReport {
    pe: Pe,
    sent: u64,
    processed: u64,
    unprocessed: u64,
    errors: Vec<String>,
    outputs: Vec<(String, Vec<u8>)>,
    qd_waves: u64,
    aborted: bool,
}

/// Every rank's PE reports, on every rank, in PE order.
fn exchange_reports(comm: &SimpleCommunicator, mine: Vec<PeReport>, ppr: usize) -> Vec<PeReport> {
    let wire: Vec<WireReport> = mine
        .iter()
        .map(|r| WireReport {
            pe: r.pe,
            sent: r.sent,
            processed: r.processed,
            unprocessed: r.unprocessed,
            errors: r.errors.iter().map(|e| e.to_string()).collect(),
            outputs: r.outputs.clone(),
            qd_waves: r.qd_waves,
            aborted: r.aborted,
        })
        .collect();
    let bytes = bincode::serialize(&wire).unwrap_or_default();
    let n = comm.size() as usize;
    let mut counts = vec![0i32; n];
    comm.all_gather_into(&(bytes.len() as i32), &mut counts[..]);
    let displs: Vec<i32> = counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut all = vec![0u8; total];
    {
        let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        comm.all_gather_varcount_into(&bytes[..], &mut part);
    }
    let me = comm.rank() as usize;
    let mut mine = Some(mine);
    let mut out = Vec::new();
    for r in 0..n {
        if r == me {
            out.extend(mine.take().unwrap_or_default());
            continue;
        }
        let (d, c) = (displs[r] as usize, counts[r] as usize);
        match bincode::deserialize::<Vec<WireReport>>(&all[d..d + c]) {
            Ok(reports) => out.extend(reports.into_iter().map(|w| PeReport {
                pe: w.pe,
                sent: w.sent,
                processed: w.processed,
                unprocessed: w.unprocessed,
                errors: w.errors.into_iter().map(RuntimeError::Remote).collect(),
                outputs: w.outputs,
                qd_waves: w.qd_waves,
                aborted: w.aborted,
            })),
            Err(e) => out.extend((r * ppr..(r + 1) * ppr).map(|pe| {
                let mut report = PeReport::new(pe as Pe);
                report.errors.push(RuntimeError::Decode {
                    pe: me as Pe,
                    what: format!("rank {r}'s reports"),
                    reason: e.to_string(),
                });
                report
            })),
        }
    }
    out
}
