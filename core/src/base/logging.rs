//! The runtime's own logs: `RUST_LOG` filtered text on stderr and, with
//! `--debug-trace FILE`, a Chrome trace of the runtime's tracing spans per thread,
//! staged: written to a temporary file and renamed onto FILE only once whole.
//!
//! The text is written with `eprint!`, as a program's own messages are, so a test
//! harness captures it with the output of the test that logged it (shown only if
//! that test fails) instead of printing every fault-injection test's warnings. It is
//! in colour only on a terminal, and never with `NO_COLOR` set.

use crate::base::config::Config;
use crate::base::error::RuntimeError;
use chorus_traces::capture::staged::StagedFile;
use std::ffi::OsString;
use std::fs::File;
use std::io::IsTerminal;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use tracing::{Level, Metadata};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

/// Keeps the debug trace open; [`LogGuard::finish`] completes it.
#[must_use = "the debug trace is written by LogGuard::finish"]
pub struct LogGuard {
    chrome: Option<DebugTrace>,
}

/// A debug trace being written to its temporary file.
struct DebugTrace {
    guard: tracing_chrome::FlushGuard,
    staged: StagedFile,
    file: File,
    failed: Arc<Mutex<Option<std::io::Error>>>,
    out: PathBuf,
}

/// The writer tracing-chrome gets: it panics on a write error in its own thread, so
/// the first error is kept here for [`LogGuard::finish`] and later writes are dropped.
struct Keep {
    file: File,
    failed: Arc<Mutex<Option<std::io::Error>>>,
}

impl Keep {
    fn attempt(&mut self, op: impl FnOnce(&mut File) -> std::io::Result<()>) {
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.is_none() {
            if let Err(e) = op(&mut self.file) {
                *failed = Some(e);
            }
        }
    }
}

impl Write for Keep {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.attempt(|f| f.write_all(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.attempt(|f| f.flush());
        Ok(())
    }
}

impl LogGuard {
    /// Ends the debug trace, if any: renames it onto its path once every byte is
    /// written and synced, or removes it and says why.
    pub fn finish(mut self) -> Result<(), RuntimeError> {
        let Some(t) = self.chrome.take() else {
            return Ok(());
        };
        // Dropping the guard joins tracing-chrome's writer thread: the file is whole.
        drop(t.guard);
        let failed = t
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let written = match failed {
            Some(e) => Err(e),
            None => t.file.sync_all(),
        };
        let fail = |reason: String| RuntimeError::DebugTrace {
            out: t.out.clone(),
            reason,
        };
        written.map_err(|e| fail(e.to_string()))?;
        t.staged.commit().map_err(|e| fail(e.to_string()))
    }
}

/// Install the process-wide log subscriber for a program run with `cfg`: warnings and
/// errors by default, more with `RUST_LOG` (e.g. `RUST_LOG=chorus_core=debug`).
///
/// A second call in the same process (tests, several jobs) keeps the first subscriber.
pub fn init(cfg: &Config) -> Result<LogGuard, RuntimeError> {
    let explicit = EnvFilter::try_from_default_env().ok();
    let quiet_abort = explicit.is_none();
    let filter = explicit.unwrap_or_else(|| EnvFilter::new("warn"));
    let text = fmt::layer()
        .with_writer(|| CapturedStderr)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_filter(filter)
        .with_filter(filter_fn(move |meta| !(quiet_abort && is_abort(meta))));
    let (chrome, trace) = match &cfg.debug_trace {
        Some(path) => {
            let (layer, trace) = debug_trace(path)?;
            (Some(layer), Some(trace))
        }
        None => (None, None),
    };
    // Err means a subscriber is already installed; keeping it is the documented behaviour.
    let _ = tracing_subscriber::registry()
        .with(text)
        .with(chrome)
        .try_init();
    Ok(LogGuard { chrome: trace })
}

/// The tracing-chrome layer writing to a staged file for `path`.
fn debug_trace<S>(path: &Path) -> Result<(tracing_chrome::ChromeLayer<S>, DebugTrace), RuntimeError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(RuntimeError::NoOutputDir {
                flag: "--debug-trace",
                path: path.to_path_buf(),
                dir: dir.to_path_buf(),
            });
        }
    }
    let fail = |reason: String| RuntimeError::DebugTrace {
        out: path.to_path_buf(),
        reason,
    };
    let (staged, file) = StagedFile::create(path).map_err(|e| fail(e.to_string()))?;
    let writer = file.try_clone().map_err(|e| fail(e.to_string()))?;
    let failed = Arc::new(Mutex::new(None));
    let keep = Keep {
        file: writer,
        failed: failed.clone(),
    };
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(keep)
        .include_args(true)
        .build();
    let trace = DebugTrace {
        guard,
        staged,
        file,
        failed,
        out: path.to_path_buf(),
    };
    Ok((layer, trace))
}

/// Whether log text is coloured: on a terminal, unless `NO_COLOR` is set to anything
/// but the empty string (no-color.org).
fn colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The engine's event for the error that ends a job. `Runtime::run` returns that
/// error and the program reports it, so by default it is not logged a second time;
/// `RUST_LOG` set shows it, as it shows everything it selects.
fn is_abort(meta: &Metadata<'_>) -> bool {
    *meta.level() == Level::ERROR && meta.target() == "chorus_core::engine::pe_core"
}

/// Standard error through `eprint!`, which a test harness captures per test (writes
/// to `std::io::stderr()` it does not see). One formatted event is one write, so
/// events of several threads never interleave within a line.
struct CapturedStderr;

impl std::io::Write for CapturedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        eprint!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsString::new())), "NO_COLOR= is unset");
        assert!(!colour(true, Some(OsString::from("1"))));
        assert!(!colour(false, None), "a pipe or a file gets no escapes");
    }
}
