//! The runtime's own logs: `RUST_LOG` filtered text on stderr and, with
//! `--debug-trace FILE`, a Chrome trace of the runtime's tracing spans per thread.

use crate::base::config::Config;
use crate::base::error::RuntimeError;
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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let text = fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
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
