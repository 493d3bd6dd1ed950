//! Receives full per-PE buffers and streams them to one spool file on disk (its
//! format is in [`crate::capture::spool`]). The collector also keeps the chunk offsets in
//! memory (16 bytes per flush) so the writer can read one PE at a time.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::capture::chrome::{self, WriteStats};
use crate::capture::perfetto;
use crate::capture::spool::{read_chunk, Chunk, SpoolView};
use crate::config::TraceConfig;
use crate::error::TraceError;
use crate::names::Names;
use crate::record::{Record, RECORD_BYTES};
// Re-exported so the format's constants keep their first public path.
pub use crate::capture::spool::{CHUNK_HEADER_BYTES, SPOOL_MAGIC};

/// Distinguishes the spool files of several collectors in one process (tests, tools).
static SPOOL_SEQ: AtomicU64 = AtomicU64::new(0);

struct Spool {
    out: BufWriter<File>,
    /// Bytes written so far (the next chunk header's offset).
    len: u64,
    chunks: Vec<Chunk>,
    records: u64,
    largest_chunk: usize,
    /// First write failure; recording calls cannot return errors, so it waits here.
    error: Option<String>,
}

/// Gathers every PE's flushed buffers into one spool file and writes the Chrome trace.
///
/// Shared by all recorders as an `Arc<Collector>`. Memory use is bounded: buffers are
/// written to disk as they arrive; only the chunk index stays in memory.
pub struct Collector {
    config: TraceConfig,
    spool_path: SpoolGuard,
    spool: Mutex<Spool>,
    tracks: Mutex<BTreeMap<u32, u32>>,
    arg_keys: Mutex<Vec<&'static str>>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("config", &self.config)
            .field("spool_path", &self.spool_path.0)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves its data consistent before anything can panic,
    // so a poisoned lock is safe to keep using.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Collector {
    /// Creates the spool file next to the configured output (creating its directory).
    pub fn new(config: TraceConfig) -> Result<Self, TraceError> {
        let out = config.output_file();
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| TraceError::io(&dir, e))?;
        let file_name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| crate::config::DEFAULT_FILE_NAME.to_owned());
        let spool_path = dir.join(format!(
            "{file_name}.spool-{}-{}",
            std::process::id(),
            SPOOL_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        crate::capture::scratch::track(&spool_path);
        let spool_path = SpoolGuard(spool_path);
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&spool_path.0)
            .map_err(|e| TraceError::io(&spool_path.0, e))?;
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        out.write_all(SPOOL_MAGIC)
            .map_err(|e| TraceError::io(&spool_path.0, e))?;
        Ok(Collector {
            config,
            spool_path,
            spool: Mutex::new(Spool {
                out,
                len: SPOOL_MAGIC.len() as u64,
                chunks: Vec::new(),
                records: 0,
                largest_chunk: 0,
                error: None,
            }),
            tracks: Mutex::new(BTreeMap::new()),
            arg_keys: Mutex::new(Vec::new()),
        })
    }

    /// The settings this run was started with.
    pub fn config(&self) -> &TraceConfig {
        &self.config
    }

    /// The temporary spool file.
    pub fn spool_path(&self) -> &Path {
        &self.spool_path.0
    }

    /// Records that PE `pe` exists in process `pid`, so it gets a named track even if
    /// it records nothing.
    pub fn register(&self, pe: u32, pid: u32) {
        lock(&self.tracks).insert(pe, pid);
    }

    /// Takes one flushed buffer of PE `pe` and appends it to the spool file.
    pub fn accept(&self, pe: u32, pid: u32, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        let mut s = lock(&self.spool);
        if s.error.is_some() {
            return;
        }
        let count = u32::try_from(records.len()).expect("buffer of more than 2^32 records");
        let result = (|| -> std::io::Result<()> {
            let mut header = [0u8; CHUNK_HEADER_BYTES];
            header[0..4].copy_from_slice(&pe.to_le_bytes());
            header[4..8].copy_from_slice(&pid.to_le_bytes());
            header[8..12].copy_from_slice(&count.to_le_bytes());
            s.out.write_all(&header)?;
            for r in records {
                s.out.write_all(&r.to_bytes())?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                let offset = s.len + CHUNK_HEADER_BYTES as u64;
                s.chunks.push(Chunk {
                    pe,
                    pid,
                    offset,
                    count,
                });
                s.len = offset + u64::from(count) * RECORD_BYTES as u64;
                s.records += u64::from(count);
                s.largest_chunk = s.largest_chunk.max(records.len());
            }
            Err(e) => s.error = Some(e.to_string()),
        }
    }

    /// The id of a phase argument key; keys are `&'static str` so recorders cache ids
    /// by pointer and only come here once per key.
    pub(crate) fn arg_key(&self, key: &'static str) -> u32 {
        let mut keys = lock(&self.arg_keys);
        if let Some(i) = keys.iter().position(|k| *k == key) {
            return i as u32;
        }
        keys.push(key);
        (keys.len() - 1) as u32
    }

    /// Interns a phase-argument key read from another process's trace (see
    /// [`Collector::arg_keys`]); a key new to this collector is leaked once, as keys
    /// are few and live as long as the trace.
    pub fn arg_key_from(&self, key: &str) -> u32 {
        let mut keys = lock(&self.arg_keys);
        if let Some(i) = keys.iter().position(|k| *k == key) {
            return i as u32;
        }
        keys.push(Box::leak(key.to_owned().into_boxed_str()));
        (keys.len() - 1) as u32
    }

    /// The phase-argument keys interned so far, by id.
    pub fn arg_keys(&self) -> Vec<&'static str> {
        lock(&self.arg_keys).clone()
    }

    /// Calls `f` with every buffer spooled so far, in spool order, as (PE, pid, records):
    /// how a process hands its records to the process that writes the merged file.
    ///
    /// Holds one buffer in memory at a time.
    pub fn for_each_chunk(
        &self,
        mut f: impl FnMut(u32, u32, &[Record]) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let view = self.view()?;
        let mut file = File::open(&view.path).map_err(|e| TraceError::io(&view.path, e))?;
        let (mut buf, mut bytes) = (Vec::new(), Vec::new());
        for chunk in &view.chunks {
            buf.clear();
            read_chunk(&mut file, &view.path, chunk, &mut buf, &mut bytes)?;
            f(chunk.pe, chunk.pid, &buf)?;
        }
        Ok(())
    }

    /// Records spooled to disk so far.
    pub fn spooled_records(&self) -> u64 {
        lock(&self.spool).records
    }

    /// The largest buffer any recorder handed over (never above `buffer_events`).
    pub fn largest_chunk(&self) -> usize {
        lock(&self.spool).largest_chunk
    }

    /// Merges everything spooled into one Chrome Trace Event JSON file at `out`.
    ///
    /// Call it after every [`crate::Recorder`] has finished (or been dropped): records
    /// still in a live recorder's buffer are not on disk yet. Holds one PE's records
    /// in memory at a time.
    pub fn write_chrome(&self, names: &Names, out: &Path) -> Result<WriteStats, TraceError> {
        let view = self.view()?;
        chrome::write(&view, names, out)
    }

    /// Merges everything spooled into one trace file at `out`: Perfetto protobuf when
    /// `out` ends in `.perfetto-trace` or `.pftrace`, Chrome JSON otherwise.
    ///
    /// The same conditions as [`Collector::write_chrome`] apply.
    pub fn write(&self, names: &Names, out: &Path) -> Result<WriteStats, TraceError> {
        let view = self.view()?;
        if perfetto::is_perfetto_path(out) {
            perfetto::write(&view, names, out)
        } else {
            chrome::write(&view, names, out)
        }
    }

    /// Flushes the spool and copies out the index the writer needs.
    pub(crate) fn view(&self) -> Result<SpoolView, TraceError> {
        let chunks = {
            let mut s = lock(&self.spool);
            if let Some(message) = &s.error {
                return Err(TraceError::Spool {
                    path: self.spool_path.0.clone(),
                    message: message.clone(),
                });
            }
            s.out
                .flush()
                .map_err(|e| TraceError::io(&self.spool_path.0, e))?;
            s.chunks.clone()
        };
        let mut tracks = lock(&self.tracks).clone();
        for c in &chunks {
            tracks.entry(c.pe).or_insert(c.pid);
        }
        Ok(SpoolView {
            path: self.spool_path.0.clone(),
            chunks,
            tracks,
            arg_keys: lock(&self.arg_keys).clone(),
            process_label: self.config.process_label.clone(),
            flow_every: self.config.flow_every.max(1),
        })
    }
}

/// The spool file's path; the file is removed when this is dropped, on every way out
/// of a run (a written trace, an error, a panic unwinding, a collector never finished),
/// as the spool is scratch space and the trace file is the product.
struct SpoolGuard(PathBuf);

impl Drop for SpoolGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        crate::capture::scratch::untrack(&self.0);
    }
}
