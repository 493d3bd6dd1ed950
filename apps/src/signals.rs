//! What every app does when it is stopped or hits a limit. SIGINT and SIGTERM: the
//! temporary files of unfinished outputs (trace spool, staged traces, profiles) are
//! removed, so no partial file is left at a final path, one line says so, and the
//! process exits with 128 + the signal (130, 143). SIGXFSZ (a `ulimit -f` file-size
//! limit) is caught, not fatal, so the write that crossed the limit fails with EFBIG
//! and is reported as an error naming its file.

use chorus_traces::capture::scratch;
use signal_hook::consts::{SIGINT, SIGTERM, SIGXFSZ};
use signal_hook::iterator::Signals;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Installs the handlers for program `prog`; called once, before the job starts.
pub fn install(prog: &str) -> std::io::Result<()> {
    // A flag nobody reads: its handler replaces SIGXFSZ's default action (to die).
    signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)))?;
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let prog = prog.to_string();
    std::thread::Builder::new()
        .name("chorus-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                stop(&prog, sig);
            }
        })?;
    Ok(())
}

/// Abandons every unfinished output, says so and exits as `sig` asks.
fn stop(prog: &str, sig: i32) -> ! {
    // The list stays locked: no output is finished after its files were removed.
    let (_held, removed) = scratch::abandon_all();
    let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
    let files: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
    let what = if files.is_empty() {
        "no output was being written".to_string()
    } else {
        format!(
            "abandoned the unfinished outputs and removed their temporary files ({}); nothing was written at their final paths",
            files.join(", ")
        )
    };
    eprintln!("{prog}: stopped by {name}: {what}");
    std::process::exit(128 + sig)
}
