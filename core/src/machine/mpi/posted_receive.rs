//! A receive posted before its message arrives, into a buffer of its own.
//!
//! Testing a posted receive costs MPI one progress pass and a flag check; probing
//! for a message instead makes MPI allocate, match and free a request on every idle
//! poll, which is most of a short message's latency.

use mpi::point_to_point::Status;
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::ptr::NonNull;

/// A posted receive from any rank on one tag, and the buffer MPI writes it into.
pub(crate) struct PostedReceive {
    /// `Some` while MPI may write `buf`.
    req: Option<Request<'static, [u8], StaticScope>>,
    /// The buffer, allocated as a `Box<[u8]>` and freed by `drop`. It is held by raw
    /// pointer because MPI holds a mutable borrow of it while `req` is pending.
    buf: NonNull<[u8]>,
    tag: i32,
}

impl PostedReceive {
    /// A receive of messages of up to `bytes` on `tag`, posted on `comm`.
    pub(crate) fn new(comm: &SimpleCommunicator, bytes: usize, tag: i32) -> Self {
        let buf = NonNull::from(Box::leak(vec![0u8; bytes].into_boxed_slice()));
        let mut posted = PostedReceive {
            req: None,
            buf,
            tag,
        };
        posted.post(comm);
        posted
    }

    /// Post the receive again, once its last message has been read.
    pub(crate) fn post(&mut self, comm: &SimpleCommunicator) {
        debug_assert!(self.req.is_none(), "a receive is posted once at a time");
        // SAFETY: `buf` came from `Box::leak` and is freed only in `drop`, which first
        // completes any pending request, so it is valid for as long as MPI may write
        // it. While the request is pending, only the request holds the borrow (rsmpi
        // keeps it and never reads through it); this struct reads the buffer only in
        // `bytes`, which needs `req` to be `None`, and `req` is `None` only after MPI
        // completed the receive and the request, with its borrow, was consumed.
        let slice: &'static mut [u8] = unsafe { &mut *self.buf.as_ptr() };
        self.req = Some(comm.any_process().immediate_receive_into_with_tag(
            StaticScope,
            slice,
            self.tag,
        ));
    }

    /// The status of the message received, once one has been; the receive stays
    /// unposted until `post` is called again.
    pub(crate) fn test(&mut self) -> Option<Status> {
        let req = self.req.take()?;
        match req.test() {
            Ok(status) => Some(status),
            Err(req) => {
                self.req = Some(req);
                None
            }
        }
    }

    /// The first `len` bytes of the message received (clamped to the buffer).
    pub(crate) fn bytes(&self, len: usize) -> &[u8] {
        assert!(self.req.is_none(), "the receive is still pending");
        // SAFETY: no request is pending (checked above), so MPI no longer writes the
        // buffer and nothing else borrows it mutably; the borrow of `self` keeps
        // `post` (which lends it to MPI again) from running while this slice lives.
        let all: &[u8] = unsafe { self.buf.as_ref() };
        &all[..len.min(all.len())]
    }
}

impl Drop for PostedReceive {
    fn drop(&mut self) {
        if let Some(req) = self.req.take() {
            // A message matched meanwhile completes the wait instead, and is dropped.
            req.cancel();
            req.wait();
        }
        // SAFETY: `buf` came from `Box::leak`, and with no request pending (completed
        // or cancelled just above) MPI holds no reference to it.
        drop(unsafe { Box::from_raw(self.buf.as_ptr()) });
    }
}
