//! What the programs that checkpoint (`mcmc`, `jacobi2d`) share: the flags
//! `--checkpoint-every N` and `--checkpoint-dir DIR` (a job resumes with the runtime's
//! `--restart DIR`), the plan their elements carry, and the lines they print on
//! standard error for `chorus-run` (`crate::launcher`) to read.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The prefix of the lines a checkpointing program prints for its launcher.
pub const LINE_PREFIX: &str = "chorus-ckpt:";

/// The checkpoint flags of a program whose work goes in steps.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Checkpoint")]
pub struct CheckpointArgs {
    /// Save the job every N steps (at quiescence, into --checkpoint-dir); a later job
    /// given --restart DIR goes on from the newest one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), requires = "checkpoint_dir")]
    pub checkpoint_every: Option<u32>,
    /// The directory --checkpoint-every saves into (created if missing).
    #[arg(long, requires = "checkpoint_every", value_parser = named_path)]
    pub checkpoint_dir: Option<PathBuf>,
    /// For testing a launcher: in a job not started with --restart, the process
    /// holding the last element aborts (SIGABRT) when that element ends this step.
    #[arg(long, hide = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub die_at_step: Option<u32>,
}

/// A path flag checked as it is parsed: a path needs a name.
pub fn named_path(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        return Err("a path needs a name".into());
    }
    Ok(PathBuf::from(s))
}

impl CheckpointArgs {
    /// The plan these flags ask for, in a job restarted (`restarted`) or not: a
    /// restarted job never dies on purpose, so a launcher's restart gets through.
    pub fn plan(&self, restarted: bool) -> CheckpointPlan {
        CheckpointPlan {
            every: self.checkpoint_every.unwrap_or(0),
            dir: (self.checkpoint_dir.as_ref())
                .map_or_else(String::new, |d| d.to_string_lossy().into_owned()),
            die_at: self.die_at_step.filter(|_| !restarted),
        }
    }
}

/// When a job's elements checkpoint, carried in their state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointPlan {
    /// Steps between checkpoints; 0 for none.
    pub every: u32,
    /// Where they go.
    pub dir: String,
    /// The step at which the last element's process aborts (a test hook).
    pub die_at: Option<u32>,
}

impl CheckpointPlan {
    /// A plan that never checkpoints.
    pub fn none() -> Self {
        CheckpointPlan::default()
    }

    /// True if the job checkpoints after `step` steps of `steps` (never after the last).
    pub fn due(&self, step: u32, steps: u32) -> bool {
        self.every > 0 && step < steps && step.is_multiple_of(self.every)
    }

    /// Abort this process if the plan says the last element dies after `step`.
    pub fn die_if_due(&self, step: u32, last_element: bool) {
        if last_element && self.die_at == Some(step) {
            eprintln!("{LINE_PREFIX} dying at step {step} (--die-at-step)");
            std::process::abort();
        }
    }

    /// Print that the checkpoint after `step` steps is committed (element 0 does).
    pub fn note_saved(&self, step: u32) {
        eprintln!("{LINE_PREFIX} checkpoint at step {step} in {}", self.dir);
    }

    /// Print that element 0 finished `step` steps, when the job checkpoints (a
    /// launcher counts the work a failure lost from these).
    pub fn note_progress(&self, step: u32) {
        if self.every > 0 {
            eprintln!("{LINE_PREFIX} step {step}");
        }
    }
}

/// A line a checkpointing program printed, as a launcher reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Element 0 finished this many steps.
    Step(u32),
    /// The checkpoint after this many steps is committed.
    Saved(u32),
}

impl Progress {
    /// Read one line of a program's standard error; `None` if it is not ours.
    pub fn parse(line: &str) -> Option<Progress> {
        let rest = line.trim().strip_prefix(LINE_PREFIX)?.trim_start();
        if let Some(n) = rest.strip_prefix("step ") {
            return n.trim().parse().ok().map(Progress::Step);
        }
        let n = rest.strip_prefix("checkpoint at step ")?;
        let n = n.split_whitespace().next()?;
        n.parse().ok().map(Progress::Saved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_checkpoints_every_n_steps_but_not_after_the_last() {
        let p = CheckpointPlan {
            every: 3,
            dir: "d".into(),
            die_at: None,
        };
        let due: Vec<u32> = (1..=9).filter(|&s| p.due(s, 9)).collect();
        assert_eq!(due, vec![3, 6]);
        assert!(!CheckpointPlan::none().due(3, 9));
    }

    #[test]
    fn the_printed_lines_read_back() {
        let p = CheckpointPlan {
            every: 2,
            dir: "/tmp/x y".into(),
            die_at: None,
        };
        assert_eq!(
            Progress::parse("chorus-ckpt: step 14"),
            Some(Progress::Step(14))
        );
        assert_eq!(
            Progress::parse(&format!("{LINE_PREFIX} checkpoint at step 12 in {}", p.dir)),
            Some(Progress::Saved(12))
        );
        assert_eq!(Progress::parse("step 3"), None);
        assert_eq!(Progress::parse("chorus-ckpt: step x"), None);
    }
}
