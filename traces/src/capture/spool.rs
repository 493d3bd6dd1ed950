//! The spool file's format, shared by the collector that writes it and the Chrome
//! writer that reads it back (so neither needs the other's internals).
//!
//! Spool file format (`<output>.spool-<process id>-<n>`, deleted when the collector
//! is dropped): the 8 magic bytes `CHTRSPL1`, then chunks. A chunk is one flushed
//! buffer of one PE: a 16-byte header (`pe`, `pid`, `count`, `0`, each a little-endian
//! u32) followed by `count` 32-byte [`Record`]s. A PE's chunks appear in the order it
//! flushed them, interleaved with other PEs' chunks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::record::{Record, RECORD_BYTES};

/// Magic bytes at the start of a spool file.
pub const SPOOL_MAGIC: &[u8; 8] = b"CHTRSPL1";

/// Size of a chunk header in the spool file.
pub const CHUNK_HEADER_BYTES: usize = 16;

/// Where one flushed buffer lies in the spool file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    /// The PE whose buffer it is.
    pub pe: u32,
    /// The process that PE ran in.
    pub pid: u32,
    /// Offset of the chunk's first record (just past its header).
    pub offset: u64,
    /// Records in the chunk.
    pub count: u32,
}

/// What the writer needs from the collector, taken under the locks once.
pub(crate) struct SpoolView {
    /// The spool file.
    pub path: PathBuf,
    /// Every chunk, in spool order.
    pub chunks: Vec<Chunk>,
    /// Every registered PE and its pid, including PEs that recorded nothing.
    pub tracks: BTreeMap<u32, u32>,
    /// Phase-argument keys, by id.
    pub arg_keys: Vec<&'static str>,
    /// How tracks' processes are labelled (from the run's config).
    pub process_label: String,
    /// One message in this many gets a flow arrow (at least 1).
    pub flow_every: u64,
}

/// Reads the records of one chunk from an open spool file into `buf` (appending).
pub(crate) fn read_chunk(
    file: &mut File,
    path: &Path,
    chunk: &Chunk,
    buf: &mut Vec<Record>,
    bytes: &mut Vec<u8>,
) -> Result<(), TraceError> {
    let n = chunk.count as usize * RECORD_BYTES;
    bytes.resize(n, 0);
    file.seek(SeekFrom::Start(chunk.offset))
        .and_then(|_| file.read_exact(bytes))
        .map_err(|e| TraceError::io(path, e))?;
    buf.reserve(chunk.count as usize);
    for rec in bytes.chunks_exact(RECORD_BYTES) {
        let mut a = [0u8; RECORD_BYTES];
        a.copy_from_slice(rec);
        buf.push(Record::from_bytes(&a));
    }
    Ok(())
}
