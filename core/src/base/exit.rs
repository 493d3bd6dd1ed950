//! How a program ends: its exit status, with the job's error reported once.

use std::fmt::Display;
use std::process::ExitCode;

/// The exit status of a program whose job ended in `result`, for a `main` that
/// returns it: success, or failure with the error reported once, in its `Display`
/// form after the program's name (`prog: …`), by the process that speaks for the
/// job (`is_root_process`: every rank of an MPI job gets the same error).
///
/// ```no_run
/// use chorus_core::{Config, Registry, Runtime};
///
/// fn main() -> std::process::ExitCode {
///     let result = Runtime::new(Registry::new(), Config::from_args()).run(|ctx| ctx.exit());
///     chorus_core::exit_status(result)
/// }
/// ```
pub fn exit_status<T, E: Display>(result: Result<T, E>) -> ExitCode {
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            if crate::base::config::is_root_process() {
                eprintln!("{}: {e}", program_name());
            }
            ExitCode::FAILURE
        }
    }
}

/// This program's file name, as the user typed it to start it (`chorus` if unknown).
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()?
                .to_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "chorus".to_owned())
}
