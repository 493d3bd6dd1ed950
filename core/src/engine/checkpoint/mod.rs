//! Checkpoints and restarts, the engine's side. A `ctx.checkpoint` (or
//! `ctx.checkpoint_in_memory`) request travels to PE 0, which asks quiescence
//! detection for a point where no message is in flight; there it tells every PE to
//! save its state (`WriteState`), collects their answers, commits the checkpoint (the
//! manifest on disk; `MemoryCommit` in memory, `memory.rs`) and fires the request's
//! callback. Callbacks of other quiescence requests found at the same point are held
//! until the state is saved, so none of their messages can change it. A restarted PE
//! rebuilds its collections from the `Restart` its layer read before the job started
//! (or gathered from the survivors' in-memory copies).

use super::{Census, Members, Origin, PeRuntime};

pub(crate) mod files;
pub(crate) mod memory;
mod restore;
pub(crate) mod resume;
mod save;
use crate::api::migration::Restarted;
use crate::base::checkpoint_error::CheckpointError;
use crate::base::error::RuntimeError;
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::msg::callback::Callback;
use crate::msg::kind::checkpoint::{
    CheckpointRequest, CkptMsg, MemoryCommit, StateWritten, WriteState,
};
use crate::msg::reduction::RedData;
use files::{FileEntry, Manifest, FORMAT_VERSION};
use std::collections::VecDeque;
use std::path::Path;

/// PE 0's checkpoints: those asked for and the one being written; on every PE, the
/// in-memory copies it holds.
#[derive(Default)]
pub(crate) struct Checkpoints {
    vault: memory::Vault,
    /// Requests not started, oldest first: one per `ctx.checkpoint` call, each
    /// started at the next quiescence, so the program's own calls bound it.
    waiting: VecDeque<CheckpointRequest>,
    /// Quiescence was asked for on behalf of `waiting`'s first request.
    asked: bool,
    active: Option<Box<Active>>,
}

/// A checkpoint being written.
struct Active {
    request: CheckpointRequest,
    epoch: u64,
    files: Vec<FileEntry>,
    error: Option<CheckpointError>,
    /// Other quiescence callbacks, fired once the state is saved.
    held: Vec<Callback>,
}

impl crate::engine::PeCore {
    /// Ask PE 0 for a checkpoint into `dir` (in memory if `None`) at the next
    /// quiescence, then `callback`. Counted like any message, so quiescence cannot
    /// be found before it arrives.
    pub(crate) fn request_checkpoint(&mut self, dir: Option<String>, callback: Callback) {
        let env = self.envelope(
            CheckpointRequest { dir, callback },
            crate::msg::envelope::SendOpts::expedited(),
        );
        self.post(0, env);
    }

    /// The PE singleton `id` lives on: the one it was created on, or after a restart
    /// on fewer PEs, that PE modulo the PE count (where the restart placed it).
    pub(crate) fn chare_pe(&self, id: ChareId) -> Pe {
        id.pe % self.npes as Pe
    }

    /// What this PE was restarted from, if it was.
    pub(crate) fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_deref()
    }
}

/// What a restarted PE remembers of the restart: for `Ctx::restarted` and the
/// proxies main asks for.
pub(crate) struct Resumed {
    pub(crate) info: Restarted,
    /// Every restored collection and its member type, in id order.
    pub(crate) collections: Vec<(CollectionId, u32)>,
    /// The disk checkpoint's callback, until `Ctx::resume_from_checkpoint` takes it.
    pub(crate) callback: Option<Callback>,
    /// Every restored singleton and its type, by creator, PE created on and number.
    pub(crate) chares: Vec<(ChareId, u32)>,
}

impl Checkpoints {
    /// True while PE 0 waits for PEs to write a checkpoint.
    pub(crate) fn writing(&self) -> bool {
        self.active.is_some()
    }
}

impl PeRuntime {
    /// Run a checkpoint message.
    pub(in crate::engine) fn on_checkpoint(&mut self, m: CkptMsg, _from: Origin) {
        match m {
            CkptMsg::CheckpointRequest(r) => {
                self.checkpoints.get_mut().waiting.push_back(r);
                self.ask_quiescence_for_checkpoint();
            }
            CkptMsg::WriteState(w) => self.write_checkpoint(w),
            CkptMsg::StateWritten(w) => self.checkpoint_written(w),
            CkptMsg::BuddyCopy(c) => self.keep_buddy_copy(c),
            CkptMsg::MemoryCommit(MemoryCommit { epoch }) => self.memory_committed(epoch),
        }
    }

    /// Ask for the quiescence the next waiting checkpoint is taken at.
    fn ask_quiescence_for_checkpoint(&mut self) {
        let c = self.checkpoints.get_mut();
        if c.asked || c.active.is_some() || c.waiting.is_empty() {
            return;
        }
        c.asked = true;
        // The request's own callback fires when the checkpoint is committed; this
        // one only makes the waves run (`at_quiescence` takes their result).
        if self.core.qd.get_mut().request(Callback::Ignore) {
            self.start_wave();
        }
    }

    /// Quiescence was found with these callbacks due: start the waiting checkpoint,
    /// if any, and hold them until it is saved; otherwise they are due now.
    pub(in crate::engine) fn checkpoint_at_quiescence(
        &mut self,
        callbacks: Vec<Callback>,
    ) -> Vec<Callback> {
        let Some(c) = self.checkpoints.built_mut() else {
            return callbacks;
        };
        if !c.asked {
            return callbacks;
        }
        let Some(request) = c.waiting.pop_front() else {
            return callbacks;
        };
        c.asked = false;
        let dir = request.dir.clone();
        let epoch = match &dir {
            Some(d) => files::current_epoch(Path::new(d)) + 1,
            None => c.vault.next_epoch(request.callback.clone()),
        };
        c.active = Some(Box::new(Active {
            request,
            epoch,
            files: Vec::new(),
            error: None,
            held: callbacks,
        }));
        for pe in 0..self.core.npes as Pe {
            let dir = dir.clone();
            self.core.uncounted(pe, WriteState { dir, epoch });
        }
        Vec::new()
    }

    /// Save this PE's state as PE 0 asked and tell it how that went (in memory, its
    /// buddy tells it).
    fn write_checkpoint(&mut self, w: WriteState) {
        let me = self.core.me;
        let Some(dir) = w.dir else {
            return self.keep_in_memory(w.epoch);
        };
        let written = files::write_pe_file(Path::new(&dir), w.epoch, me, |to, what| {
            self.write_pe_state(&mut save::Out { to, what })
        });
        let (bytes, checksum, error) = match written {
            Ok((bytes, sum)) => (bytes, sum, None),
            Err(e) => (0, 0, Some(Box::new(e))),
        };
        let answer = StateWritten {
            epoch: w.epoch,
            pe: me,
            bytes,
            checksum,
            error,
        };
        self.core.uncounted(0, answer);
    }

    /// PE 0 hears a PE's answer; with the last, it commits or reports the checkpoint.
    fn checkpoint_written(&mut self, w: StateWritten) {
        let npes = self.core.npes;
        let Some(a) = self
            .checkpoints
            .built_mut()
            .and_then(|c| c.active.as_mut())
            .filter(|a| a.epoch == w.epoch)
        else {
            return;
        };
        match w.error {
            Some(e) => {
                a.error.get_or_insert(*e);
            }
            None => a.files.push(FileEntry {
                pe: w.pe,
                name: files::file_name(w.pe, w.epoch),
                bytes: w.bytes,
                checksum: w.checksum,
            }),
        }
        if a.error.is_none() && a.files.len() < npes {
            return;
        }
        let Some(mut a) = self.checkpoints.built_mut().and_then(|c| c.active.take()) else {
            return;
        };
        let outcome = match (a.error.take(), &a.request.dir) {
            (Some(e), _) => Err(e),
            (None, None) => {
                for pe in 0..npes as Pe {
                    self.core.uncounted(pe, MemoryCommit { epoch: a.epoch });
                }
                Ok(())
            }
            (None, Some(dir)) => {
                a.files.sort_by_key(|f| f.pe);
                let manifest = Manifest {
                    format: "chorus-checkpoint".into(),
                    version: FORMAT_VERSION,
                    wire_version: crate::wire::VERSION,
                    registry_digest: self.core.reg.digest(),
                    pes: npes,
                    epoch: a.epoch,
                    files: std::mem::take(&mut a.files),
                    resume: Some(resume::ResumePoint {
                        callback: a.request.callback.clone(),
                        sim: self.core.port.resume_point(),
                    }),
                };
                let committed = files::commit(Path::new(dir), &manifest);
                if committed.is_ok() {
                    self.core.port.checkpoint_committed();
                }
                committed
            }
        };
        // An in-memory checkpoint's callback says whether it runs after a recovery.
        let done = match a.request.dir {
            Some(_) => resume::committed_data(),
            None => RedData::Bool(vec![false]),
        };
        match outcome {
            Ok(()) => self.core.fire(&a.request.callback, done),
            Err(e) => self.core.fail(RuntimeError::Checkpoint(e)),
        }
        for cb in std::mem::take(&mut a.held) {
            self.core.fire(&cb, RedData::List(Vec::new()));
        }
        self.ask_quiescence_for_checkpoint();
    }
}
