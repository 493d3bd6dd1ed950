//! `chorus-run`: run a checkpointing program under `mpirun`, and when the job fails
//! (a non-zero exit, or a rank killed by a signal, which OpenMPI 4.1 without ULFM
//! turns into the end of the whole job) restart it from the newest complete
//! checkpoint in its `--checkpoint-dir` (the manifest and every PE file checked by
//! `chorus_core::verify_checkpoint`; files of an uncommitted checkpoint are ignored)
//! with `--restart`, on the same or fewer ranks, until it completes or
//! `--max-restarts` is spent. It prints each attempt, how it ended, the checkpoint
//! used and the steps of work the failure lost (from the lines the program prints,
//! `crate::checkpointing::Progress`).

use crate::checkpointing::Progress;
use crate::programs::chorus_run::RunArgs;
use chorus_core::{verify_checkpoint, CheckpointError};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// Why `chorus-run` could not complete the job.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The ranks after a failure are more than the first attempt's.
    #[error("--ranks-after-failure {after} is more than --ranks {ranks}: a restart runs on the same or fewer ranks")]
    MoreRanks {
        /// The first attempt's ranks.
        ranks: u32,
        /// The ranks asked for after a failure.
        after: u32,
    },
    /// The program's arguments name no checkpoint directory.
    #[error("the program's arguments have no --checkpoint-dir DIR (with --checkpoint-every N): without a checkpoint there is nothing to restart from")]
    NoCheckpointDir,
    /// The program already has `--restart`, which chorus-run adds itself.
    #[error("the program's arguments have --restart: chorus-run adds it on a restart; start the first attempt as a fresh job")]
    HasRestart,
    /// mpirun could not be started.
    #[error("cannot start {mpirun}: {source} (is OpenMPI installed? scripts/install-mpi.sh)")]
    Spawn {
        /// The mpirun that was run.
        mpirun: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Every attempt failed.
    #[error(
        "gave up after {attempts} attempts ({restarts} restarts, --max-restarts): the last {cause}"
    )]
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// Restarts among them.
        restarts: u32,
        /// How the last attempt ended.
        cause: String,
    },
}

/// How an attempt ended, in words: its exit code or the signal that ended it, and
/// mpirun's line naming the rank that failed, if it printed one.
fn cause(status: ExitStatus, rank_line: Option<&str>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        (None, None) => format!("ended ({status})"),
    };
    match rank_line {
        Some(l) => format!("{how}; mpirun: {}", l.trim()),
        None => how,
    }
}

/// What one attempt's standard error told: the program's progress and mpirun's
/// line about a failed rank.
#[derive(Default)]
struct Heard {
    /// The furthest step element 0 finished.
    step: Option<u32>,
    /// The newest checkpoint committed, in steps.
    saved: Option<u32>,
    /// mpirun's line naming a rank that failed.
    rank_line: Option<String>,
}

impl Heard {
    fn hear(&mut self, line: &str) {
        match Progress::parse(line) {
            Some(Progress::Step(s)) => self.step = Some(self.step.map_or(s, |t| t.max(s))),
            Some(Progress::Saved(s)) => self.saved = Some(s),
            None => {
                let l = line.to_ascii_lowercase();
                let about_rank = l.contains("rank") || l.contains("process");
                if self.rank_line.is_none()
                    && about_rank
                    && (l.contains("signal") || l.contains("exited") || l.contains("killed"))
                {
                    self.rank_line = Some(line.to_string());
                }
            }
        }
    }
}

/// The value of `--checkpoint-dir` and of `--checkpoint-every` in the program's
/// arguments, and whether they have `--restart`.
fn scan(program: &[OsString]) -> (Option<PathBuf>, Option<u32>, bool) {
    let args: Vec<String> = program
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let value = |flag: &str| -> Option<String> {
        let eq = format!("{flag}=");
        args.iter().enumerate().find_map(|(i, a)| match a {
            a if a == flag => args.get(i + 1).cloned(),
            a => a.strip_prefix(&eq).map(str::to_string),
        })
    };
    let restart = args
        .iter()
        .any(|a| a == "--restart" || a.starts_with("--restart="));
    let every = value("--checkpoint-every").and_then(|v| v.parse().ok());
    (value("--checkpoint-dir").map(PathBuf::from), every, restart)
}

/// Run one attempt: `mpirun -n ranks <mpirun args> <program> [--restart dir]`, its
/// standard error passed on line by line and heard; returns how it ended.
fn attempt(
    args: &RunArgs,
    ranks: u32,
    restart: Option<&PathBuf>,
) -> Result<(ExitStatus, Heard), LaunchError> {
    let mut cmd = Command::new(&args.mpirun);
    cmd.arg("-n").arg(ranks.to_string()).args(&args.mpirun_arg);
    cmd.args(&args.program);
    if let Some(d) = restart {
        cmd.arg("--restart").arg(d);
    }
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| LaunchError::Spawn {
            mpirun: args.mpirun.display().to_string(),
            source,
        })?;
    let mut heard = Heard::default();
    if let Some(err) = child.stderr.take() {
        let mut out = std::io::stderr().lock();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            heard.hear(&line);
            // The program's own words go on to the user; a closed stderr is theirs.
            let _ = writeln!(out, "{line}");
        }
    }
    let status = child.wait().map_err(|source| LaunchError::Spawn {
        mpirun: args.mpirun.display().to_string(),
        source,
    })?;
    Ok((status, heard))
}

/// The checkpoint a restart goes on from, checked whole; `None` (said why) if there
/// is none to use, and the job starts again from the beginning.
fn newest_checkpoint(dir: &Path) -> Option<chorus_core::CommittedCheckpoint> {
    match verify_checkpoint(dir) {
        Ok(c) => Some(c),
        Err(CheckpointError::MissingManifest { .. }) => {
            println!(
                "chorus-run: no checkpoint committed in {} yet: starting again from the beginning",
                dir.display()
            );
            None
        }
        Err(e) => {
            println!("chorus-run: the checkpoint in {} cannot be used ({e}): starting again from the beginning", dir.display());
            None
        }
    }
}

/// Run the job to completion, restarting it after each failure; `Ok` with the
/// attempts made when one completed.
pub fn run(args: &RunArgs) -> Result<u32, LaunchError> {
    let after = args.ranks_after_failure.unwrap_or(args.ranks);
    if after > args.ranks {
        return Err(LaunchError::MoreRanks {
            ranks: args.ranks,
            after,
        });
    }
    let (dir, every, has_restart) = scan(&args.program);
    let dir = dir.ok_or(LaunchError::NoCheckpointDir)?;
    if has_restart {
        return Err(LaunchError::HasRestart);
    }
    let (mut ranks, mut restart, mut from_step, mut n) = (args.ranks, None, 0, 0);
    loop {
        n += 1;
        let from = restart.as_ref().map_or_else(
            || "from the beginning".to_string(),
            |d: &PathBuf| format!("from the checkpoint at step {from_step} in {}", d.display()),
        );
        println!(
            "chorus-run: attempt {n}: {} -n {ranks}, {from}",
            args.mpirun.display()
        );
        let (status, heard) = attempt(args, ranks, restart.as_ref())?;
        if status.success() {
            println!("chorus-run: attempt {n} completed");
            return Ok(n);
        }
        let why = cause(status, heard.rank_line.as_deref());
        println!("chorus-run: attempt {n} failed: it {why}");
        if n > args.max_restarts {
            return Err(LaunchError::GaveUp {
                attempts: n,
                restarts: n - 1,
                cause: format!("attempt {why}"),
            });
        }
        let reached = heard.step.unwrap_or(from_step);
        restart = newest_checkpoint(&dir).map(|c| {
            from_step = heard.saved.unwrap_or(from_step);
            println!(
                "chorus-run: newest complete checkpoint: {} (epoch {}, {} PEs, {} bytes, step {from_step})",
                dir.display(),
                c.epoch,
                c.pes,
                c.bytes
            );
            dir.clone()
        });
        if restart.is_none() {
            from_step = 0;
        }
        let interval = every.map_or_else(String::new, |e| format!(", checkpoint interval {e}"));
        println!(
            "chorus-run: work lost: {} steps (reached step {reached}, restarting from step {from_step}{interval})",
            reached.saturating_sub(from_step)
        );
        ranks = after;
    }
}
