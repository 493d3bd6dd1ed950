//! The one error type of the crate.

use std::path::PathBuf;

/// Everything that can go wrong while spooling, writing, reading or reporting a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A file could not be created, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A trace file is not valid JSON, or not shaped like a Chrome trace.
    #[error("{path}: not a Chrome trace JSON file: {source}")]
    Json {
        /// The file concerned.
        path: PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A file parsed but its content makes no sense (bad spool record, bad event field).
    #[error("{path}: {message}")]
    Format {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An output path exists and is not a regular file (a FIFO, a device, a directory).
    #[error("{path}: exists and is not a regular file; a trace or report is written only to a regular file or a new path")]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// Spooling a PE's buffer failed while recording; the first such failure is kept
    /// because the recording calls themselves cannot return errors.
    #[error("spooling trace records to {path} failed earlier: {message}")]
    Spool {
        /// The spool file.
        path: PathBuf,
        /// The original error, as text.
        message: String,
    },
}

impl TraceError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.into(),
            source,
        }
    }
}
