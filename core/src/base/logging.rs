//! The runtime's own logs: `RUST_LOG` filtered text on stderr and, with
//! `--debug-trace FILE`, a Chrome trace of the runtime's tracing spans per thread.
//!
//! The text is written with `eprint!`, as a program's own messages are, so a test
//! harness captures it with the output of the test that logged it (shown only if
//! that test fails) instead of printing every fault-injection test's warnings. It is
//! in colour only on a terminal, and never with `NO_COLOR` set.

use crate::base::config::Config;
use crate::base::error::RuntimeError;
use std::ffi::OsString;
use std::io::IsTerminal;
use tracing::{Level, Metadata};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

/// Keeps the debug trace open; the file is complete once this is dropped.
#[must_use = "the debug trace is written when the guard is dropped"]
pub struct LogGuard {
    _chrome: Option<tracing_chrome::FlushGuard>,
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
    let (chrome, guard) = match &cfg.debug_trace {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                if !dir.is_dir() {
                    return Err(RuntimeError::NoOutputDir {
                        flag: "--debug-trace",
                        path: path.clone(),
                        dir: dir.to_path_buf(),
                    });
                }
            }
            let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
                .file(path)
                .include_args(true)
                .build();
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    // Err means a subscriber is already installed; keeping it is the documented behaviour.
    let _ = tracing_subscriber::registry()
        .with(text)
        .with(chrome)
        .try_init();
    Ok(LogGuard { _chrome: guard })
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
