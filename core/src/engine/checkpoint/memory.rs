//! In-memory double checkpoints (Zheng, Shi and Kale, FTC-Charm++, 2004). At the
//! point a disk checkpoint is taken, each PE encodes its state exactly as it would
//! write its file, keeps that copy and gives a second one to its buddy, the next PE
//! (`(p + 1) mod n`); PE 0 commits the checkpoint once every buddy holds its copy,
//! and every PE then drops the copies of older ones. When PEs fail, the machine
//! layer gathers the newest checkpoint whose every saved state a survivor holds
//! (`assemble`) and rebuilds the job on the survivors from it, as a restart does
//! (`Restart::of_states`); PE 0 then delivers the checkpoint's callback again, with
//! `true` for "this is a recovery".

use super::files;
use super::save::Out;
use super::PeRuntime;
use crate::api::migration::Restarted;
use crate::api::registry::Registry;
use crate::base::bytes::Bytes;
use crate::base::checkpoint_error::CheckpointError;
use crate::base::ids::Pe;
use crate::engine::Restart;
use crate::msg::callback::Callback;
use crate::msg::kind::checkpoint::{BuddyCopy, StateWritten};
use crate::msg::reduction::RedData;
use std::path::PathBuf;

/// One saved PE's state in an in-memory checkpoint, as a PE holds it.
#[derive(Clone)]
pub(crate) struct Copy {
    /// The checkpoint.
    pub(crate) epoch: u64,
    /// How many PEs saved their state in it.
    pub(crate) of: usize,
    /// The PE whose state it is, of those `of`.
    pub(crate) pe: Pe,
    /// The bytes a disk checkpoint writes to the PE's file (`write_pe_state`'s);
    /// shared by the PE and its buddy where they share memory.
    pub(crate) bytes: Bytes,
}

/// The copies one PE holds, and on PE 0 the callbacks of their checkpoints.
#[derive(Default)]
pub(crate) struct Vault {
    /// Its own state and its buddy's, of at most two checkpoints: the newest
    /// complete one and the one being taken (a commit drops the older; PE 0 takes
    /// one checkpoint at a time). After a recovery a PE may hold more saved PEs'
    /// states of one checkpoint, never more checkpoints.
    copies: Vec<Copy>,
    /// PE 0: the last in-memory checkpoint's number.
    epoch: u64,
    /// PE 0: the callbacks of the checkpoints whose copies are held, at most two
    /// like them.
    callbacks: Vec<(u64, Callback)>,
}

impl Vault {
    fn keep(&mut self, copy: Copy) {
        self.copies.push(copy);
        let newest = self.copies.iter().map(|c| c.epoch).max().unwrap_or(0);
        self.copies.retain(|c| c.epoch + 1 >= newest);
    }

    /// PE 0: the number of the next in-memory checkpoint, whose callback is `cb`.
    pub(super) fn next_epoch(&mut self, cb: Callback) -> u64 {
        self.epoch += 1;
        self.callbacks.push((self.epoch, cb));
        let newest = self.epoch;
        self.callbacks.retain(|c| c.0 + 1 >= newest);
        self.epoch
    }
}

impl PeRuntime {
    /// Encode this PE's state for in-memory checkpoint `epoch`, keep it and share it
    /// with its buddy; a state that cannot be saved is reported to PE 0 instead.
    pub(super) fn keep_in_memory(&mut self, epoch: u64) {
        let (me, npes) = (self.core.me, self.core.npes);
        let what = PathBuf::from(format!("in-memory checkpoint {epoch}, PE {me}"));
        let mut bytes = Vec::new();
        let out = &mut Out {
            to: &mut bytes,
            what: &what,
        };
        match self.write_pe_state(out) {
            Ok(()) => {
                // Encoded once: on threads and sim the buddy's copy is this one, shared
                // (never changed, and in the one process a failed PE's memory is not
                // lost); on mpi the message carries it to the buddy's rank.
                let bytes = Bytes::from(bytes);
                let own = Copy {
                    epoch,
                    of: npes,
                    pe: me,
                    bytes: bytes.clone(),
                };
                self.checkpoints.get_mut().vault.keep(own);
                let buddy = ((me as usize + 1) % npes) as Pe;
                let copy = BuddyCopy {
                    epoch,
                    pe: me,
                    state: bytes,
                };
                self.core.uncounted(buddy, copy);
            }
            Err(e) => {
                let answer = StateWritten {
                    epoch,
                    pe: me,
                    bytes: 0,
                    checksum: 0,
                    error: Some(Box::new(e)),
                };
                self.core.uncounted(0, answer);
            }
        }
    }

    /// Keep the buddy's copy and tell PE 0 that its state is now held twice.
    pub(super) fn keep_buddy_copy(&mut self, c: BuddyCopy) {
        let answer = StateWritten {
            epoch: c.epoch,
            pe: c.pe,
            bytes: c.state.len() as u64,
            checksum: files::checksum(c.state.as_slice()),
            error: None,
        };
        let copy = Copy {
            epoch: c.epoch,
            of: self.core.npes,
            pe: c.pe,
            bytes: c.state,
        };
        self.checkpoints.get_mut().vault.keep(copy);
        self.core.uncounted(0, answer);
    }

    /// In-memory checkpoint `epoch` is complete: older copies go.
    pub(super) fn memory_committed(&mut self, epoch: u64) {
        let v = &mut self.checkpoints.get_mut().vault;
        v.copies.retain(|c| c.epoch >= epoch);
    }

    /// The in-memory copies this PE holds (the layer gathers them after a failure).
    pub(crate) fn memory_copies(&self) -> &[Copy] {
        self.checkpoints.get().map_or(&[], |c| &c.vault.copies)
    }

    /// PE 0: the callback of in-memory checkpoint `epoch`, if its copies may be held.
    pub(crate) fn memory_callback(&self, epoch: u64) -> Option<Callback> {
        let v = &self.checkpoints.get()?.vault;
        v.callbacks
            .iter()
            .find(|c| c.0 == epoch)
            .map(|c| c.1.clone())
    }

    /// PE 0: the in-memory checkpoints whose copies may be held, and their callbacks.
    pub(crate) fn memory_callbacks(&self) -> &[(u64, Callback)] {
        self.checkpoints.get().map_or(&[], |c| &c.vault.callbacks)
    }

    /// Hold `copies` of the checkpoint this rebuilt PE was restored from, so the job
    /// survives another failure before its next checkpoint.
    pub(crate) fn hold_copies(&mut self, copies: Vec<Copy>) {
        let v = &mut self.checkpoints.get_mut().vault;
        v.copies.extend(copies);
    }

    /// PE 0 of a job rebuilt from in-memory checkpoint `epoch`: go on numbering
    /// checkpoints from it and deliver its `callback` again, saying it is a recovery.
    pub(crate) fn resume_from_memory(&mut self, epoch: u64, callback: Callback) {
        let v = &mut self.checkpoints.get_mut().vault;
        v.epoch = epoch;
        v.callbacks = vec![(epoch, callback.clone())];
        self.core.fire(&callback, RedData::Bool(vec![true]));
        self.core.port.flush();
    }
}

/// What one PE of the failed job holds: its name for errors (the layer's number for
/// it), whether it survived, and its copies.
pub(crate) struct Holder<'a> {
    pub(crate) name: Pe,
    pub(crate) alive: bool,
    pub(crate) copies: &'a [Copy],
}

/// A checkpoint gathered from the survivors: what rebuilds the job.
pub(crate) struct Gathered {
    pub(crate) epoch: u64,
    /// Every saved PE's copy, in PE order.
    pub(crate) copies: Vec<Copy>,
}

/// The newest in-memory checkpoint every saved state of which a survivor holds;
/// `None` if the job never completed one. If the newest complete checkpoint lost a
/// state with every PE that held it (a PE and its buddy), a typed error names them.
pub(crate) fn assemble(holders: &[Holder<'_>]) -> Result<Option<Gathered>, CheckpointError> {
    let mut epochs: Vec<(u64, usize)> = holders
        .iter()
        .flat_map(|h| h.copies.iter().map(|c| (c.epoch, c.of)))
        .collect();
    epochs.sort_unstable();
    epochs.dedup();
    let find = |epoch: u64, pe: Pe, alive: bool| {
        holders
            .iter()
            .filter(|h| h.alive || !alive)
            .find_map(|h| h.copies.iter().find(|c| c.epoch == epoch && c.pe == pe))
    };
    for &(epoch, of) in epochs.iter().rev() {
        // A checkpoint some saved state of which nobody ever held was not complete.
        if (0..of as Pe).any(|pe| find(epoch, pe, false).is_none()) {
            continue;
        }
        let mut copies = Vec::with_capacity(of);
        for pe in 0..of as Pe {
            match find(epoch, pe, true) {
                Some(c) => copies.push(c.clone()),
                None => {
                    let lost_with: Vec<Pe> = holders
                        .iter()
                        .filter(|h| h.copies.iter().any(|c| c.epoch == epoch && c.pe == pe))
                        .map(|h| h.name)
                        .collect();
                    return Err(CheckpointError::BuddiesLost {
                        epoch,
                        pe,
                        lost_with,
                    });
                }
            }
        }
        return Ok(Some(Gathered { epoch, copies }));
    }
    Ok(None)
}

impl Gathered {
    /// The restart of a job of `npes` PEs from this checkpoint.
    pub(crate) fn restart(&self, reg: &Registry, npes: usize) -> Result<Restart, CheckpointError> {
        let label = PathBuf::from(format!("in-memory checkpoint {}", self.epoch));
        let states = self
            .copies
            .iter()
            .map(|c| {
                let state = c
                    .bytes
                    .decode_in_place(|b| files::decode_state(b, c.pe, &label))?;
                Ok(files::own_group_states(state))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let info = Restarted {
            dir: PathBuf::new(),
            saved_pes: self.copies.len(),
            epoch: self.epoch,
            in_memory: true,
        };
        Restart::of_states(states, info, &label, reg, npes)
    }

    /// The copies new PE `pe` of `npes` holds: saved state `i` is kept by new PE
    /// `i mod npes` and its buddy, as a checkpoint taken now would place them.
    pub(crate) fn copies_for(&self, pe: Pe, npes: usize) -> Vec<Copy> {
        let pe = pe as usize;
        self.copies
            .iter()
            .enumerate()
            .filter(|(i, _)| i % npes == pe || (i % npes + 1) % npes == pe)
            .map(|(_, c)| c.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(epoch: u64, of: usize, pe: Pe) -> Copy {
        Copy {
            epoch,
            of,
            pe,
            bytes: vec![pe as u8].into(),
        }
    }

    /// PE p holds its own state and its predecessor's, for each epoch given.
    fn double(epochs: &[u64], of: usize) -> Vec<Vec<Copy>> {
        (0..of)
            .map(|p| {
                epochs
                    .iter()
                    .flat_map(|&e| [copy(e, of, p as Pe), copy(e, of, ((p + of - 1) % of) as Pe)])
                    .collect()
            })
            .collect()
    }

    fn holders<'a>(held: &'a [Vec<Copy>], dead: &[Pe]) -> Vec<Holder<'a>> {
        held.iter()
            .enumerate()
            .map(|(p, c)| Holder {
                name: p as Pe,
                alive: !dead.contains(&(p as Pe)),
                copies: c,
            })
            .collect()
    }

    #[test]
    fn the_newest_complete_checkpoint_survives_the_loss_of_non_buddies() {
        let mut held = double(&[3], 8);
        // Checkpoint 4 in progress: only PEs 0..3 have given their copies.
        for (p, h) in held.iter_mut().enumerate().take(3) {
            h.push(copy(4, 8, p as Pe));
        }
        let g = assemble(&holders(&held, &[2, 5]))
            .expect("no loss")
            .expect("one");
        assert_eq!(g.epoch, 3);
        let pes: Vec<Pe> = g.copies.iter().map(|c| c.pe).collect();
        assert_eq!(pes, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn a_pe_and_its_buddy_lost_together_are_named() {
        let held = double(&[1], 8);
        match assemble(&holders(&held, &[4, 5])) {
            Err(CheckpointError::BuddiesLost {
                epoch: 1,
                pe: 4,
                lost_with,
            }) => assert_eq!(lost_with, vec![4, 5]),
            other => panic!("{:?}", other.map(|g| g.map(|g| g.epoch))),
        }
        assert!(assemble(&holders(&[], &[])).expect("nothing").is_none());
    }

    #[test]
    fn a_rebuilt_job_holds_every_state_twice() {
        let g = Gathered {
            epoch: 2,
            copies: (0..8).map(|p| copy(2, 8, p)).collect(),
        };
        for npes in [1, 3, 5, 8] {
            let mut count = vec![0; 8];
            for pe in 0..npes {
                for c in g.copies_for(pe as Pe, npes) {
                    count[c.pe as usize] += 1;
                }
            }
            let want = if npes == 1 { 1 } else { 2 };
            assert!(count.iter().all(|&n| n == want), "{npes}: {count:?}");
        }
    }
}
