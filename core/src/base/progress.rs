//! A spinner on stderr for jobs that run longer than a couple of seconds, so a long
//! run shows it is alive; never shown when stderr is not a terminal, nor for a
//! configuration built in code (`Config::progress`: tests run many long jobs). Built with the
//! `cli` feature (indicatif); `progress_off.rs` stands in without it.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Wall time before the spinner appears.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub(crate) struct Progress {
    /// What runs, e.g. `sim` or `threads`: the spinner's first word.
    what: &'static str,
    start: Instant,
    enabled: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner for `what`, if `shown` (`Config::progress`) and stderr is a terminal.
    pub(crate) fn new(what: &'static str, shown: bool) -> Self {
        Progress {
            what,
            start: Instant::now(),
            enabled: shown && std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// Report progress; `message` is only built when the spinner shows.
    pub(crate) fn tick(&mut self, message: impl FnOnce(Duration) -> String) {
        if !self.enabled {
            return;
        }
        let elapsed = self.start.elapsed();
        if self.bar.is_none() && elapsed >= SHOW_AFTER {
            let bar = ProgressBar::new_spinner();
            // The job's own elapsed time goes in the message: indicatif's would
            // count from when the spinner appeared.
            let template = format!("{{spinner}} {} {{msg}}", self.what);
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}s, {}", elapsed.as_secs(), message(elapsed)));
            bar.tick();
        }
    }

    /// Remove the spinner.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
