//! The temporary files of this process's unfinished outputs (spool files, staged
//! outputs), so that a program stopped by a signal can remove them all before it
//! exits. Every entry is removed again when its file is renamed or deleted, so the
//! list holds only the outputs being written at this moment.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn lock() -> MutexGuard<'static, Vec<PathBuf>> {
    SCRATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Notes `path` as a temporary file to remove if the process is stopped.
pub(crate) fn track(path: &Path) {
    lock().push(path.to_path_buf());
}

/// Forgets `path` (renamed onto its output or removed).
pub(crate) fn untrack(path: &Path) {
    lock().retain(|p| p != path);
}

/// Runs `f` (a rename that finishes an output) while no signal handler can remove
/// files: the output is either finished whole or abandoned, never half of each.
pub(crate) fn finishing<R>(f: impl FnOnce() -> R) -> R {
    let _held = lock();
    f()
}

/// Removes every temporary file still listed and returns their paths; the list stays
/// locked (no output can be finished) until the returned guard is dropped, which a
/// process about to exit never does.
pub fn abandon_all() -> (MutexGuard<'static, Vec<PathBuf>>, Vec<PathBuf>) {
    let mut held = lock();
    let removed: Vec<PathBuf> = held
        .drain(..)
        .filter(|p| std::fs::remove_file(p).is_ok())
        .collect();
    (held, removed)
}
