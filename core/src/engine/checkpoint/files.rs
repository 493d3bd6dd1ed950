//! A checkpoint on disk: one file per PE (`pe-<pe>.e<epoch>.ckpt`, the bincode of
//! its `PeState`) and `manifest.json`, which names them with their sizes and
//! checksums. Every file is written under a temporary name and renamed into place
//! (chorus-traces' staged writes); the manifest is renamed last, once every PE has
//! written, so it always names a complete checkpoint: a crash before leaves the
//! previous manifest and its files, which a new checkpoint never overwrites (its
//! files carry the next epoch), and only after the new manifest is in place are the
//! old epoch's files removed.

use crate::api::migration::Restarted;
use crate::api::registry::Registry;
use crate::base::bytes::{decoding_from, Bytes};
use crate::base::checkpoint_error::CheckpointError;
use crate::base::ids::{ChareId, CollectionId, IndexKey, Pe};
use crate::msg::array::{builtin_home, ArrayMap, ElemAddr, Shape};
use chorus_traces::capture::staged::StagedFile;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::Xxh3;

/// The version of this file format; a restart refuses any other (3: singletons and
/// deleted elements saved; 2 had XXH3-64 checksums, where 1 had FNV-1a).
pub(crate) const FORMAT_VERSION: u32 = 3;
/// The manifest's name in a checkpoint directory.
pub(crate) const MANIFEST: &str = "manifest.json";
/// What the manifest's `format` field says.
const FORMAT_NAME: &str = "chorus-checkpoint";

/// The manifest: which program wrote the checkpoint, on how many PEs, and its files.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) format: String,
    pub(crate) version: u32,
    pub(crate) wire_version: u16,
    pub(crate) registry_digest: u64,
    pub(crate) pes: usize,
    pub(crate) epoch: u64,
    pub(crate) files: Vec<FileEntry>,
    /// How a restarted job goes on as this one did (absent from older manifests).
    #[serde(default)]
    pub(crate) resume: Option<super::resume::ResumePoint>,
}

/// One PE's file, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileEntry {
    pub(crate) pe: Pe,
    pub(crate) name: String,
    pub(crate) bytes: u64,
    pub(crate) checksum: u64,
}

/// What one PE saves.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PeState {
    pub(crate) pe: Pe,
    pub(crate) next_coll_seq: u32,
    pub(crate) next_chare_seq: Vec<(Pe, u32)>,
    /// The number of the next array section the PE makes (a section's id holds it).
    pub(crate) next_section_seq: u32,
    pub(crate) collections: Vec<SavedCollection>,
    /// The singleton chares living on the PE, by id.
    pub(crate) singletons: Vec<SavedSingleton>,
}

/// One singleton chare.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedSingleton {
    pub(crate) id: ChareId,
    /// Registry position of its type.
    pub(crate) ty: u32,
    pub(crate) state: Bytes,
}

/// One collection's part on one PE.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedCollection {
    pub(crate) id: CollectionId,
    /// Registry position of the member type.
    pub(crate) ty: u32,
    pub(crate) kind: SavedKind,
}

/// A group member or the array elements living on the PE.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum SavedKind {
    Group {
        state: Bytes,
        contributed: u64,
    },
    Array {
        shape: Shape,
        map: ArrayMap,
        seq_floor: u64,
        elements: Vec<SavedElement>,
        /// The deleted elements this PE was home to.
        deleted: Vec<SavedDeleted>,
    },
}

/// An array element that was deleted: its home keeps its place in reductions and
/// drops the messages sent to it (`engine/destroy.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedDeleted {
    pub(crate) key: IndexKey,
    pub(crate) order: u64,
    /// The reductions it had contributed to when it went.
    pub(crate) contributed: u64,
}

/// One array element.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedElement {
    pub(crate) key: IndexKey,
    pub(crate) order: u64,
    pub(crate) contributed: u64,
    pub(crate) syncs: u32,
    /// As `Bytes`, which bincode writes as `Vec<u8>`'s bytes, whole rather than one
    /// at a time.
    pub(crate) state: Bytes,
}

/// The file name of PE `pe`'s state in checkpoint `epoch`.
pub(crate) fn file_name(pe: Pe, epoch: u64) -> String {
    format!("pe-{pe:05}.e{epoch}.ckpt")
}

/// XXH3-64 of `bytes`, the checksum the manifest records (tens of GB/s where FNV-1a,
/// a byte at a time, ran at one).
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Bytes a PE file is written in: large element states bypass the buffer and go
/// straight from the element to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// A writer that checksums and counts what passes through it, so a PE file's
/// checksum is taken as it is written, with no second pass and no copy.
struct Summing<W> {
    inner: W,
    sum: Xxh3,
    bytes: u64,
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Write `bytes` to `path` whole or not at all.
fn write_staged(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    chorus_traces::capture::staged::write_atomic(path, bytes)
        .map_err(|e| CheckpointError::io(path, e))
}

/// Write PE `pe`'s file of checkpoint `epoch` into `dir`, its contents written by
/// `write` (given the file's buffered, checksumming writer and its path for
/// errors); returns its length and checksum.
pub(crate) fn write_pe_file(
    dir: &Path,
    epoch: u64,
    pe: Pe,
    write: impl FnOnce(&mut dyn Write, &Path) -> Result<(), CheckpointError>,
) -> Result<(u64, u64), CheckpointError> {
    let path = dir.join(file_name(pe, epoch));
    std::fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
    let (staged, file) = StagedFile::create(&path).map_err(|e| CheckpointError::io(&path, e))?;
    let summing = Summing {
        inner: file,
        sum: Xxh3::new(),
        bytes: 0,
    };
    let mut out = std::io::BufWriter::with_capacity(WRITE_BUFFER, summing);
    write(&mut out, &path)?;
    let summing = out
        .into_inner()
        .map_err(|e| CheckpointError::io(&path, e.into_error()))?;
    (summing.inner.sync_all()).map_err(|e| CheckpointError::io(&path, e))?;
    staged.commit().map_err(|e| CheckpointError::io(&path, e))?;
    Ok((summing.bytes, summing.sum.digest()))
}

/// The state a PE wrote (`PeRuntime::write_pe_state`), which must be PE `pe`'s (`what` names the file or
/// copy in an error).
pub(crate) fn decode_state(bytes: &[u8], pe: Pe, what: &Path) -> Result<PeState, CheckpointError> {
    let state: PeState = bincode::deserialize(bytes).map_err(|e| CheckpointError::Corrupt {
        file: what.to_path_buf(),
        reason: e.to_string(),
    })?;
    if state.pe != pe {
        let reason = format!("it holds PE {}'s state, not PE {pe}'s", state.pe);
        return Err(CheckpointError::Corrupt {
            file: what.to_path_buf(),
            reason,
        });
    }
    Ok(state)
}

/// The epoch of the checkpoint `dir` holds, 0 if none is readable there.
pub(crate) fn current_epoch(dir: &Path) -> u64 {
    read_manifest(dir).map_or(0, |m| m.epoch)
}

/// Put `manifest` in place in `dir` (the checkpoint's commit), then remove the
/// files of every other epoch.
pub(crate) fn commit(dir: &Path, manifest: &Manifest) -> Result<(), CheckpointError> {
    let path = dir.join(MANIFEST);
    let text = serde_json::to_vec_pretty(manifest).map_err(|e| CheckpointError::io(&path, e))?;
    write_staged(&path, &text)?;
    let keep: Vec<&str> = manifest.files.iter().map(|f| f.name.as_str()).collect();
    let entries = std::fs::read_dir(dir).map_err(|e| CheckpointError::io(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("pe-") && name.ends_with(".ckpt") && !keep.contains(&name.as_str()) {
            // An old epoch's file; failing to remove it only costs disk space.
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

fn read_manifest(dir: &Path) -> Result<Manifest, CheckpointError> {
    let file = dir.join(MANIFEST);
    let text = match std::fs::read(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CheckpointError::MissingManifest { file })
        }
        Err(e) => return Err(CheckpointError::io(&file, e)),
    };
    let m: Manifest = serde_json::from_slice(&text).map_err(|e| CheckpointError::BadManifest {
        file: file.clone(),
        reason: e.to_string(),
    })?;
    if m.format != FORMAT_NAME {
        let reason = format!("its format is {:?}, not {FORMAT_NAME:?}", m.format);
        return Err(CheckpointError::BadManifest { file, reason });
    }
    Ok(m)
}

/// Bytes a PE file is read in, each piece checksummed as soon as it is read, while
/// it is still in the cache, rather than in a second pass over the whole file.
const READ_CHUNK: u64 = 1 << 20;

/// The bytes of PE file `f` (at `file`), checked against the manifest's length and
/// checksum; read into one buffer of the file's length (no growth, no copy).
fn read_checked(file: &Path, f: &FileEntry) -> Result<Vec<u8>, CheckpointError> {
    let mut src = match std::fs::File::open(file) {
        Ok(src) => src,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let file = file.to_path_buf();
            return Err(CheckpointError::MissingFile { file, pe: f.pe });
        }
        Err(e) => return Err(CheckpointError::io(file, e)),
    };
    let truncated = |found: u64| CheckpointError::Truncated {
        file: file.to_path_buf(),
        found,
        expected: f.bytes,
    };
    // The file's own length sizes the buffer (a manifest's figure could be anything).
    let len = src
        .metadata()
        .map_err(|e| CheckpointError::io(file, e))?
        .len();
    if len != f.bytes {
        return Err(truncated(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(usize::MAX));
    let mut sum = Xxh3::new();
    loop {
        let start = bytes.len();
        let n = (std::io::Read::by_ref(&mut src).take(READ_CHUNK))
            .read_to_end(&mut bytes)
            .map_err(|e| CheckpointError::io(file, e))?;
        if n == 0 {
            break;
        }
        sum.update(&bytes[start..]);
    }
    // The file changed length while it was read.
    if bytes.len() as u64 != f.bytes {
        return Err(truncated(bytes.len() as u64));
    }
    let sum = sum.digest();
    if sum != f.checksum {
        let reason = format!(
            "checksum {sum:#018x}, the manifest says {:#018x}",
            f.checksum
        );
        let file = file.to_path_buf();
        return Err(CheckpointError::Corrupt { file, reason });
    }
    Ok(bytes)
}

/// Read PE file `f` of the checkpoint in `dir`, checking length and checksum. The
/// file is read into one buffer, which the elements' states are views of, not
/// copies (a restored element's `Bytes` fields stay views of it too, as a message's
/// stay in its receive buffer: the buffer goes when the last of them does).
fn read_pe_file(dir: &Path, f: &FileEntry) -> Result<PeState, CheckpointError> {
    let file = dir.join(&f.name);
    let buf = Arc::new(read_checked(&file, f)?);
    let state = decoding_from(&buf, || decode_state(&buf, f.pe, &file))?;
    Ok(own_group_states(state))
}

/// `state` with its group members' states copied out of the buffer it was decoded
/// from: the restart keeps them for the whole job, and views would keep the whole
/// buffer with them.
pub(crate) fn own_group_states(mut state: PeState) -> PeState {
    for c in &mut state.collections {
        if let SavedKind::Group { state, .. } = &mut c.kind {
            *state = Bytes::from(state.as_slice());
        }
    }
    state
}

/// Each saved PE's file, as the manifest `m` of the checkpoint in `dir` names it, in
/// PE order. A manifest naming more PEs than files fails at the first missing one,
/// before anything is sized by its count.
fn pe_entries<'m>(dir: &Path, m: &'m Manifest) -> Result<Vec<&'m FileEntry>, CheckpointError> {
    (0..m.pes)
        .map(|pe| {
            let pe = Pe::try_from(pe).unwrap_or(Pe::MAX);
            let name = file_name(pe, m.epoch);
            (m.files.iter().find(|f| f.pe == pe && f.name == name)).ok_or_else(|| {
                let file = dir.join(name);
                CheckpointError::MissingFile { file, pe }
            })
        })
        .collect()
}

/// Every saved PE's state in the checkpoint `m` describes in `dir`, in PE order: the
/// files read, checked and decoded on as many threads as the machine has cores,
/// the first error in PE order reported.
fn read_states(dir: &Path, m: &Manifest) -> Result<Vec<PeState>, CheckpointError> {
    let entries = pe_entries(dir, m)?;
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, entries.len().max(1));
    let next = AtomicUsize::new(0);
    let mut read: Vec<(usize, Result<PeState, CheckpointError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(f) = entries.get(i) else {
                            return mine;
                        };
                        mine.push((i, read_pe_file(dir, f)));
                    }
                })
            })
            .collect();
        // A reader that panicked (it cannot: every error is typed) loses its files,
        // which the count check below reports.
        (handles.into_iter())
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    read.sort_by_key(|r| r.0);
    if read.len() != entries.len() {
        return Err(CheckpointError::io(
            dir,
            "a reader thread of the restart failed",
        ));
    }
    read.into_iter().map(|r| r.1).collect()
}

/// A committed checkpoint, as its manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedCheckpoint {
    /// Which checkpoint of its directory it is (they count up from 1).
    pub epoch: u64,
    /// How many PEs wrote it.
    pub pes: usize,
    /// The bytes of its PE files.
    pub bytes: u64,
}

/// Check the checkpoint committed in `dir` whole (its manifest and every PE file's
/// length, checksum and contents) without the program's registry, as a launcher
/// does before it restarts a job from it; files of an uncommitted epoch are ignored.
pub fn verify_checkpoint(dir: &Path) -> Result<CommittedCheckpoint, CheckpointError> {
    let m = read_manifest(dir)?;
    let file = dir.join(MANIFEST);
    if m.version != FORMAT_VERSION {
        let (found, expected) = (m.version, FORMAT_VERSION);
        return Err(CheckpointError::Version {
            file,
            found,
            expected,
        });
    }
    let bytes = pe_entries(dir, &m)?.iter().map(|f| f.bytes).sum();
    read_states(dir, &m)?;
    Ok(CommittedCheckpoint {
        epoch: m.epoch,
        pes: m.pes,
        bytes,
    })
}

/// A checkpoint read and checked whole, before any PE of the restarted job starts.
pub(crate) struct Restart {
    pub(crate) info: Restarted,
    /// Every saved PE's state, in PE order (each new PE takes what is its own).
    states: Vec<PeState>,
    /// What the manifest kept for going on as the saved job did (disk only).
    pub(crate) resume: Option<super::resume::ResumePoint>,
    /// What each new PE restores of the saved PEs' parts: taken once, by that PE.
    placed: Vec<Mutex<Placed>>,
    /// Every saved singleton and its type, by creator, PE created on and number.
    pub(crate) singletons: Vec<(ChareId, u32)>,
}

/// The saved things the new PE count places on one new PE.
#[derive(Default)]
pub(crate) struct Placed {
    /// Array elements its map places here, by collection.
    pub(crate) elements: Vec<(CollectionId, SavedElement)>,
    /// Deleted elements homed here, by collection.
    pub(crate) deleted: Vec<(CollectionId, SavedDeleted)>,
    /// Singletons, each on new PE `id.pe mod npes` (where its proxies send).
    pub(crate) singletons: Vec<SavedSingleton>,
}

/// What one new PE restores.
pub(crate) struct PeRestore<'a> {
    /// Every collection as PE 0 saved it (its elements taken out).
    pub(crate) collections: &'a [SavedCollection],
    /// What is placed on this PE.
    pub(crate) placed: Placed,
    /// Every saved PE's state, for groups and sequence numbers.
    pub(crate) states: &'a [PeState],
}

impl Restart {
    /// Read the checkpoint in `dir` for a job of `npes` PEs registered as `reg`: every
    /// file checked, every element placed by its map on the new PE count.
    pub(crate) fn load(dir: &Path, reg: &Registry, npes: usize) -> Result<Self, CheckpointError> {
        let m = read_manifest(dir)?;
        let file = dir.join(MANIFEST);
        check_manifest(&m, &file, reg)?;
        let states = read_states(dir, &m)?;
        let info = Restarted {
            dir: dir.to_path_buf(),
            saved_pes: m.pes,
            epoch: m.epoch,
            in_memory: false,
        };
        let mut restart = Restart::of_states(states, info, &file, reg, npes)?;
        restart.resume = m.resume;
        Ok(restart)
    }

    /// The restart of a job of `npes` PEs from `states`, every saved PE's state in PE
    /// order (`file` names the checkpoint in errors).
    pub(crate) fn of_states(
        states: Vec<PeState>,
        info: Restarted,
        file: &Path,
        reg: &Registry,
        npes: usize,
    ) -> Result<Self, CheckpointError> {
        let mut restart = Restart {
            info,
            states,
            placed: (0..npes).map(|_| Mutex::default()).collect(),
            resume: None,
            singletons: Vec::new(),
        };
        restart.check_groups(file, reg, npes)?;
        restart.place_elements(file, reg, npes)?;
        Ok(restart)
    }

    /// A group whose type cannot change PE count is refused on another count.
    fn check_groups(
        &self,
        file: &Path,
        reg: &Registry,
        npes: usize,
    ) -> Result<(), CheckpointError> {
        let saved = self.states.len();
        for c in &self.states[0].collections {
            let chare = reg.chares.get(c.ty as usize);
            let name = chare.map_or_else(|| format!("#{}", c.ty), |t| t.name.clone());
            if let SavedKind::Group { .. } = c.kind {
                let any = chare
                    .and_then(|t| t.checkpoint)
                    .is_some_and(|k| k.any_pe_count);
                if saved != npes && !any {
                    return Err(CheckpointError::GroupPeCount {
                        file: file.to_path_buf(),
                        group: c.id.to_string(),
                        chare: name,
                        saved,
                        now: npes,
                    });
                }
            }
        }
        Ok(())
    }

    /// Move every saved element and deleted element into the bucket of the new PE
    /// its map names, and every singleton into its saved PE's modulo the new count.
    fn place_elements(
        &mut self,
        file: &Path,
        reg: &Registry,
        npes: usize,
    ) -> Result<(), CheckpointError> {
        let mut buckets: Vec<Placed> = (0..npes).map(|_| Placed::default()).collect();
        for state in &mut self.states {
            for s in std::mem::take(&mut state.singletons) {
                self.singletons.push((s.id, s.ty));
                buckets[s.id.pe as usize % npes].singletons.push(s);
            }
            for c in &mut state.collections {
                let SavedKind::Array {
                    shape,
                    map,
                    elements,
                    deleted,
                    ..
                } = &mut c.kind
                else {
                    continue;
                };
                let placing = |key: &IndexKey, order: u64| {
                    home(reg, *map, shape, key, order, npes).map_err(|reason| {
                        CheckpointError::Corrupt {
                            file: file.to_path_buf(),
                            reason: format!("{}: {reason}", c.id),
                        }
                    })
                };
                for e in std::mem::take(elements) {
                    let pe = placing(&e.key, e.order)?;
                    buckets[pe as usize].elements.push((c.id, e));
                }
                for d in std::mem::take(deleted) {
                    let pe = placing(&d.key, d.order)?;
                    buckets[pe as usize].deleted.push((c.id, d));
                }
            }
        }
        for (slot, bucket) in self.placed.iter_mut().zip(buckets) {
            *slot = Mutex::new(bucket);
        }
        (self.singletons).sort_unstable_by_key(|(id, _)| (id.creator, id.pe, id.seq));
        Ok(())
    }

    /// PE `pe`'s part (what is placed on it can be taken once).
    pub(crate) fn for_pe(&self, pe: Pe) -> PeRestore<'_> {
        let placed = self
            .placed
            .get(pe as usize)
            .map(|m| std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default();
        PeRestore {
            collections: &self.states[0].collections,
            placed,
            states: &self.states,
        }
    }
}

/// The new home of the saved element at `key` (of `order`) of an array placed by
/// `map`.
fn home(
    reg: &Registry,
    map: ArrayMap,
    shape: &Shape,
    key: &IndexKey,
    order: u64,
    npes: usize,
) -> Result<Pe, String> {
    let pe = match builtin_home(map, shape, order, npes) {
        Some(pe) => pe,
        None => match map {
            ArrayMap::Custom(id) => reg.custom_map(id, key, npes)?,
            _ => return Err("the map places no element".into()),
        },
    };
    if pe as usize >= npes {
        return Err(format!("the map placed an element on PE {pe} of {npes}"));
    }
    Ok(pe)
}

/// The manifest is this format, this program's, and names one file per PE.
fn check_manifest(m: &Manifest, file: &Path, reg: &Registry) -> Result<(), CheckpointError> {
    let file = file.to_path_buf();
    if m.version != FORMAT_VERSION {
        return Err(CheckpointError::Version {
            file,
            found: m.version,
            expected: FORMAT_VERSION,
        });
    }
    if m.registry_digest != reg.digest() {
        return Err(CheckpointError::OtherProgram {
            file,
            found: m.registry_digest,
            expected: reg.digest(),
        });
    }
    if m.pes == 0 || Pe::try_from(m.pes).is_err() {
        let reason = format!("it names {} PEs", m.pes);
        return Err(CheckpointError::BadManifest { file, reason });
    }
    // Only the files a checkpoint writes, inside its directory: a damaged name is the
    // manifest's fault, not a missing file, and never leads outside the directory.
    if let Some(f) = m.files.iter().find(|f| f.name != file_name(f.pe, m.epoch)) {
        let reason = format!(
            "it names {:?} for PE {} of epoch {}, not {:?}",
            f.name,
            f.pe,
            m.epoch,
            file_name(f.pe, m.epoch)
        );
        return Err(CheckpointError::BadManifest { file, reason });
    }
    Ok(())
}

/// The address of a saved element.
pub(crate) fn address(e: &SavedElement) -> ElemAddr {
    ElemAddr {
        key: e.key.clone(),
        order: e.order,
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
