//! Output files that appear whole or not at all. A trace or report is written to a
//! temporary file next to its final path (`<name>.partial-<process id>-<n>`) and
//! renamed onto that path only once every byte is written and flushed, so a failed
//! write (a full disk, a file-size limit) or an interrupted run never leaves a
//! truncated file under the name a viewer or a script will read; the temporary file
//! is removed by [`StagedFile`]'s `Drop` on every path that does not commit it.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::TraceError;

/// Distinguishes the temporary files of several outputs written by one process.
static STAGED_SEQ: AtomicU64 = AtomicU64::new(0);

/// A temporary file that becomes `out` on [`StagedFile::commit`] and is removed if
/// dropped before.
#[derive(Debug)]
pub struct StagedFile {
    tmp: PathBuf,
    out: PathBuf,
    committed: bool,
}

/// Where a write to `out` must go: `out` itself, or the file a symbolic link `out`
/// names (so the link stays a link). Refuses an `out` that exists and is not a
/// regular file (a FIFO would block, a device such as `/dev/full` would be replaced
/// by the rename), without opening it.
pub fn destination(out: &Path) -> Result<PathBuf, TraceError> {
    match std::fs::metadata(out) {
        Ok(m) if m.is_file() => match std::fs::canonicalize(out) {
            Ok(real) => Ok(real),
            // Removed since it was looked at (another rank's probe of the same path).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(out.to_path_buf()),
            Err(e) => Err(TraceError::io(out, e)),
        },
        Ok(_) => Err(TraceError::NotAFile {
            path: out.to_path_buf(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(out.to_path_buf()),
        Err(e) => Err(TraceError::io(out, e)),
    }
}

impl StagedFile {
    /// Creates the temporary file for `out` in `out`'s directory (see [`destination`]).
    pub fn create(out: &Path) -> Result<(StagedFile, File), TraceError> {
        let dest = destination(out)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| crate::config::DEFAULT_FILE_NAME.to_owned());
        let tmp = dest.with_file_name(format!(
            "{name}.partial-{}-{}",
            std::process::id(),
            STAGED_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::create_new(&tmp).map_err(|e| TraceError::io(out, e))?;
        super::scratch::track(&tmp);
        let staged = StagedFile {
            tmp,
            out: dest,
            committed: false,
        };
        Ok((staged, file))
    }

    /// The temporary file being written.
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Renames the temporary file onto the final path (the caller has flushed it).
    pub fn commit(mut self) -> Result<(), TraceError> {
        super::scratch::finishing(|| std::fs::rename(&self.tmp, &self.out))
            .map_err(|e| TraceError::io(&self.out, e))?;
        super::scratch::untrack(&self.tmp);
        self.committed = true;
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
            super::scratch::untrack(&self.tmp);
        }
    }
}

/// Writes `bytes` to `out` through a [`StagedFile`]: `out` holds all of them or is
/// left as it was.
pub fn write_atomic(out: &Path, bytes: &[u8]) -> Result<(), TraceError> {
    let (staged, mut file) = StagedFile::create(out)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| TraceError::io(out, e))?;
    staged.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("chorus-staged-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// How many files `dir` holds.
    fn files(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn an_uncommitted_file_leaves_nothing_and_the_old_file_stays() {
        let dir = scratch("drop");
        let out = dir.join("t.json");
        std::fs::write(&out, "old").unwrap();
        let (staged, mut f) = StagedFile::create(&out).unwrap();
        f.write_all(b"half").unwrap();
        let tmp = staged.temp_path().to_path_buf();
        assert!(tmp.exists());
        drop(staged);
        assert!(!tmp.exists());
        assert_eq!(files(&dir), 1);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        write_atomic(&out, b"new").unwrap();
        assert_eq!(files(&dir), 1);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_destination_that_is_not_a_regular_file_is_refused_unopened() {
        let dir = scratch("fifo");
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Opening a FIFO for writing would block this test forever.
            let e = write_atomic(&fifo, b"x").expect_err("a FIFO is refused");
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        let e = write_atomic(&dir, b"x").expect_err("a directory is refused");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = write_atomic(Path::new("/dev/full"), b"x").expect_err("a device is refused");
        assert!(e.to_string().contains("/dev/full"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
