//! A spinner on stderr for simulations that run longer than a couple of seconds, so a
//! long run shows it is alive; never shown when stderr is not a terminal. Built with
//! the `cli` feature (indicatif); `progress_off.rs` stands in without it.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Wall time before the spinner appears.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub(crate) struct Progress {
    start: Instant,
    enabled: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Progress {
            start: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// Report progress: events done, current virtual time, events pending.
    pub(crate) fn tick(&mut self, events: u64, virtual_ns: u64, pending: usize) {
        if !self.enabled {
            return;
        }
        let elapsed = self.start.elapsed();
        if self.bar.is_none() && elapsed >= SHOW_AFTER {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} sim {elapsed} {msg}") {
                bar.set_style(style);
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            let rate = events as f64 / elapsed.as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{events} events ({rate:.0}/s), virtual {:.3} ms, {pending} pending",
                virtual_ns as f64 / 1e6
            ));
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
