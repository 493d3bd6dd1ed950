//! What can go wrong writing a checkpoint or restarting from one: each error names
//! the file and the reason, and says what to do.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use thiserror::Error;

/// A checkpoint that could not be written, or a restart refused before any PE started.
#[derive(Debug, Clone, Error, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointError {
    /// A file could not be read, written, renamed or listed.
    #[error("checkpoint file {file}: {reason}")]
    Io {
        /// The file or directory.
        file: PathBuf,
        /// The operating system's words.
        reason: String,
    },
    /// The restart directory holds no manifest (no checkpoint was ever completed there).
    #[error("checkpoint manifest {file} is missing: --restart must name a directory a completed ctx.checkpoint wrote")]
    MissingManifest {
        /// The manifest's path.
        file: PathBuf,
    },
    /// The manifest is not one this build can read.
    #[error("checkpoint manifest {file} is not a chorus checkpoint manifest: {reason}")]
    BadManifest {
        /// The manifest's path.
        file: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// The checkpoint was written by another format version.
    #[error("checkpoint {file} has format version {found}, this build reads version {expected}: restart with the chorus build that wrote it")]
    Version {
        /// The manifest's path.
        file: PathBuf,
        /// The version it says.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The checkpoint was written by a program with other registrations.
    #[error("checkpoint {file} was written by another program (registry digest {found:#018x}, this program's is {expected:#018x}): restart the program that wrote it, with the same registrations")]
    OtherProgram {
        /// The manifest's path.
        file: PathBuf,
        /// The digest it records.
        found: u64,
        /// This program's `Registry::digest`.
        expected: u64,
    },
    /// A PE's file named by the manifest is not there.
    #[error("checkpoint file {file} (PE {pe}'s state) is missing: the checkpoint is incomplete, restart from an intact copy")]
    MissingFile {
        /// The file's path.
        file: PathBuf,
        /// The PE whose state it holds.
        pe: u32,
    },
    /// A PE's file is shorter or longer than the manifest says.
    #[error("checkpoint file {file} has {found} bytes, the manifest says {expected}: it was truncated or replaced")]
    Truncated {
        /// The file's path.
        file: PathBuf,
        /// Its length.
        found: u64,
        /// The length the manifest records.
        expected: u64,
    },
    /// A PE's file does not match its checksum, or does not decode.
    #[error("checkpoint file {file} is corrupted: {reason}")]
    Corrupt {
        /// The file's path.
        file: PathBuf,
        /// The checksum mismatch, or what did not decode.
        reason: String,
    },
    /// A group whose type can only be restored on the PE count it was saved on.
    #[error("checkpoint {file}: group {group} of type {chare} was saved on {saved} PEs and cannot be restored on {now}: restart on {saved} PEs, or give {chare} a Checkpointable::restore and ANY_PE_COUNT = true")]
    GroupPeCount {
        /// The manifest's path.
        file: PathBuf,
        /// The group's id.
        group: String,
        /// The member type's registered name.
        chare: String,
        /// PEs when saved.
        saved: usize,
        /// PEs now.
        now: usize,
    },
    /// A group member or array element could not be rebuilt.
    #[error("PE {pe}: {collection} of type {chare} could not be restored: {reason}")]
    Restore {
        /// The PE restoring it.
        pe: u32,
        /// The collection's id.
        collection: String,
        /// The member type's registered name.
        chare: String,
        /// What `restore` or the decoding said.
        reason: String,
    },
    /// Something living in the job cannot be saved.
    #[error("PE {pe}: cannot checkpoint {what}: {why}")]
    Unsaveable {
        /// The PE that found it.
        pe: u32,
        /// The chare, group or array.
        what: String,
        /// Why, and what to do.
        why: String,
    },
    /// A PE's state in an in-memory checkpoint was lost with every PE that held a
    /// copy of it (the PE and its buddy failed together).
    #[error("in-memory checkpoint {epoch}: PE {pe}'s state was held by PEs {lost_with:?}, which all failed, so the job cannot roll back: a PE and its buddy (the next PE) must not fail together; restart from a disk checkpoint (ctx.checkpoint) instead")]
    BuddiesLost {
        /// The checkpoint.
        epoch: u64,
        /// The PE whose state is lost, numbered as when the checkpoint was taken.
        pe: u32,
        /// The failed PEs that held it (its own and its buddy's copy).
        lost_with: Vec<u32>,
    },
    /// `Ctx::resume_from_checkpoint` found no checkpoint callback to deliver.
    #[error("nothing to resume from: {why}; call ctx.resume_from_checkpoint() once, from main of a job started with --restart DIR")]
    NothingToResume {
        /// Why there is none.
        why: String,
    },
    /// PEs failed before the job completed an in-memory checkpoint.
    #[error("PEs {failed:?} failed before any in-memory checkpoint was complete, so the job cannot roll back: call ctx.checkpoint_in_memory early, and again every few steps")]
    NothingToRollBack {
        /// The failed PEs.
        failed: Vec<u32>,
    },
}

impl CheckpointError {
    /// An I/O error on `file`.
    pub fn io(file: impl Into<PathBuf>, e: impl std::fmt::Display) -> Self {
        CheckpointError::Io {
            file: file.into(),
            reason: e.to_string(),
        }
    }
}
